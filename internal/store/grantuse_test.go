package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestGrantUses: a grant's redirect URI and last issuance come from its
// latest token row (a refresh's, after a rotation); a grant without rows
// is absent.
func TestGrantUses(t *testing.T) {
	ctx := context.Background()
	s, clk := openTestStore(t)
	for _, id := range []string{"g1", "g2", "g3"} {
		if err := s.CreateGrant(ctx, &Grant{ID: id, ClientID: "c1", Scopes: []string{"project:read"}, ProjectIDs: []string{"p"}}); err != nil {
			t.Fatal(err)
		}
	}
	at := func(d time.Duration) *time.Time { v := clk.Now().Add(d).UTC().Truncate(time.Microsecond); return &v }
	first := &Token{GrantID: "g1", ClientID: "c1", RedirectURI: "https://chatgpt.com/cb", AccessHash: "a1", RefreshHash: "r1",
		AccessCreatedAt: at(0), RefreshCreatedAt: at(0)}
	if err := s.CreateToken(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateToken(ctx, &Token{GrantID: "g1", ClientID: "c1", ParentID: first.ID, RedirectURI: "https://chatgpt.com/cb",
		AccessHash: "a2", RefreshHash: "r2", AccessCreatedAt: at(time.Hour), RefreshCreatedAt: at(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateToken(ctx, &Token{GrantID: "g2", ClientID: "c1", RedirectURI: "http://127.0.0.1:9/cb", CodeHash: "c",
		CodeCreatedAt: at(2 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	got, err := s.GrantUses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]GrantUse{
		"g1": {RedirectURI: "https://chatgpt.com/cb", LastIssued: *at(time.Hour)},
		"g2": {RedirectURI: "http://127.0.0.1:9/cb", LastIssued: *at(2 * time.Minute)},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("GrantUses (-want +got):\n%s", diff)
	}
}
