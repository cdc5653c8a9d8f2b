package worktree

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// TestPruneAtStart: the startup prune removes what a crash left, skips a
// root that cannot host worktrees, and every other method waits for it:
// nothing sees the half-created worktree or races the prune.
func TestPruneAtStart(t *testing.T) {
	repo := newRepo(t, true)
	plain := t.TempDir()
	first := newManager(t)
	half := halfCreate(t, first, repo, "half")

	m, err := New(Options{Dir: first.dir})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var results []PruneResult
	begin, finished := m.PruneAtStart(t.Context(), []string{plain, repo}, func(r []PruneResult) {
		results = r
		<-release
	})

	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(half.Path); err != nil {
		t.Fatalf("pruned before it began: %v", err)
	}

	// The other methods begin it (nobody called begin) and wait until it
	// and its record are done.
	type call struct {
		name string
		err  error
	}
	calls := make(chan call, 3)
	go func() { _, err := m.Get(t.Context(), repo, "half"); calls <- call{"Get", err} }()
	go func() { _, err := m.Create(t.Context(), repo, "new"); calls <- call{"Create", err} }()
	go func() { calls <- call{"Eligible", m.Eligible(t.Context(), repo)} }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(half.Path); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a waiting method did not begin the prune")
		}
	}
	select {
	case c := <-calls:
		t.Fatalf("%s returned before the startup prune was done: %v", c.name, c.err)
	case <-time.After(200 * time.Millisecond):
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := m.Get(ctx, repo, "half"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Get with a context that ends during the prune = %v", err)
	}
	begin() // already begun: nothing

	close(release)
	<-finished
	for range 3 {
		c := <-calls
		switch {
		case c.name == "Get" && !errors.Is(c.err, ErrNotFound):
			t.Errorf("Get of the pruned worktree = %v, want ErrNotFound", c.err)
		case c.name != "Get" && c.err != nil:
			t.Errorf("%s after the prune: %v", c.name, c.err)
		}
	}
	if len(results) != 2 || !results[0].Skipped || results[0].Root != plain ||
		results[1].Skipped || results[1].Err != nil || len(results[1].Removed) == 0 {
		t.Fatalf("results %+v", results)
	}
	if _, err := os.Stat(half.Path); !os.IsNotExist(err) {
		t.Errorf("the half-created worktree is still there: %v", err)
	}
}

// TestPruneAtStartStopped: a prune whose context ends reports the roots it
// did not prune with that error, and releases the waiting methods.
func TestPruneAtStartStopped(t *testing.T) {
	repo := newRepo(t, true)
	m := newManager(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var results []PruneResult
	begin, finished := m.PruneAtStart(ctx, []string{repo}, func(r []PruneResult) { results = r })
	begin()
	<-finished
	if len(results) != 1 || !errors.Is(results[0].Err, context.Canceled) || results[0].Skipped {
		t.Fatalf("results %+v", results)
	}
	if err := m.Eligible(t.Context(), repo); err != nil {
		t.Fatal(err)
	}
}
