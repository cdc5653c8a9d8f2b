package executions

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestFIFOOrder: requests of one key run one at a time in arrival order,
// and a waiter that gives up does not block the ones behind it.
func TestFIFOOrder(t *testing.T) {
	q := newFIFO()
	release, err := q.acquire(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	cancelled, cancel := context.WithCancel(context.Background())
	for i := range 5 {
		wg.Add(1)
		ctx := context.Background()
		if i == 2 {
			ctx = cancelled
		}
		go func() {
			defer wg.Done()
			rel, err := q.acquire(ctx, "k")
			if err != nil {
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			rel()
		}()
		time.Sleep(20 * time.Millisecond) // arrival order
	}
	cancel()
	time.Sleep(20 * time.Millisecond)
	// Another key is independent.
	other, err := q.acquire(context.Background(), "other")
	if err != nil {
		t.Fatal(err)
	}
	other()
	release()
	wg.Wait()
	if diff := cmp.Diff([]int{0, 1, 3, 4}, order); diff != "" {
		t.Fatalf("order (-want +got):\n%s", diff)
	}
	if len(q.lanes) != 0 {
		t.Fatalf("lanes leak: %d", len(q.lanes))
	}
}
