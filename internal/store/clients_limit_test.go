package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestCreateClientEvictsUnused: at the bounds the oldest unused clients
// make room; only clients with grants filling MaxTotal refuse.
func TestCreateClientEvictsUnused(t *testing.T) {
	st, _ := openTestStore(t)
	ctx := context.Background()
	limits := ClientLimits{MaxUnused: 3, MaxTotal: 5, UnusedTTL: time.Hour}
	used := time.Now()
	for i := range 2 {
		if err := st.CreateClient(ctx, &Client{ID: fmt.Sprintf("used%d", i), UsedAt: &used}, limits); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		if err := st.CreateClient(ctx, &Client{ID: fmt.Sprintf("new%02d", i)}, limits); err != nil {
			t.Fatalf("registration %d: %v", i, err)
		}
	}
	for id, want := range map[string]bool{"used0": true, "used1": true, "new06": false, "new07": true, "new09": true} {
		_, err := st.Client(ctx, id)
		if got := err == nil; got != want {
			t.Errorf("client %s present = %v, want %v (%v)", id, got, want, err)
		}
	}
	if n, _ := st.CountClients(ctx); n != 5 {
		t.Errorf("%d clients, want 5", n)
	}
	full := ClientLimits{MaxUnused: 3, MaxTotal: 2, UnusedTTL: time.Hour}
	if err := st.CreateClient(ctx, &Client{ID: "one-more"}, full); !errors.Is(err, ErrClientLimit) {
		t.Errorf("with every slot held by used clients: %v, want ErrClientLimit", err)
	}
}
