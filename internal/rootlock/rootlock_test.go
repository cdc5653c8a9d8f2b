package rootlock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCompatibility(t *testing.T) {
	ctx := context.Background()
	l := New()
	r1, _ := l.Acquire(ctx, "k", Read, time.Second)
	c1, err := l.Acquire(ctx, "k", Command, time.Second)
	if err != nil {
		t.Fatalf("command beside a reader: %v", err)
	}
	c2, err := l.Acquire(ctx, "k", Command, time.Second)
	if err != nil {
		t.Fatalf("two commands: %v", err)
	}
	if _, err := l.Acquire(ctx, "k", Patch, 50*time.Millisecond); !errors.Is(err, ErrBusy) {
		t.Fatalf("patch while commands run: %v", err)
	}
	other, err := l.Acquire(ctx, "other", Patch, 50*time.Millisecond)
	if err != nil {
		t.Fatalf("another root: %v", err)
	}
	other.Release()
	r1.Release()
	c1.Release()
	c2.Release()
	c2.Release() // idempotent
	p, err := l.Acquire(ctx, "k", Patch, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, "k", Read, 50*time.Millisecond); !errors.Is(err, ErrBusy) {
		t.Fatalf("read during patch: %v", err)
	}
	p.Release()
	if len(l.roots) != 0 {
		t.Fatalf("roots leak: %v", l.roots)
	}
}

// TestFairness: a patch waiting behind a reader is served before readers
// that arrive after it.
func TestFairness(t *testing.T) {
	ctx := context.Background()
	l := New()
	r0, _ := l.Acquire(ctx, "k", Read, time.Second)
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	start := func(name string, m Mode) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			le, err := l.Acquire(ctx, "k", m, 5*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			time.Sleep(10 * time.Millisecond)
			le.Release()
		}()
		time.Sleep(20 * time.Millisecond)
	}
	start("patch", Patch)
	start("read1", Read)
	start("read2", Read)
	r0.Release()
	wg.Wait()
	if diff := cmp.Diff("patch", order[0]); diff != "" {
		t.Fatalf("patch overtaken by later readers: %v", order)
	}
}

func TestAbandonedWaiterDoesNotBlock(t *testing.T) {
	ctx := context.Background()
	l := New()
	r, _ := l.Acquire(ctx, "k", Read, time.Second)
	// A patch gives up; a later reader must not stay queued behind it.
	if _, err := l.Acquire(ctx, "k", Patch, 30*time.Millisecond); !errors.Is(err, ErrBusy) {
		t.Fatal(err)
	}
	r2, err := l.Acquire(ctx, "k", Read, 100*time.Millisecond)
	if err != nil {
		t.Fatalf("reader behind an abandoned patch: %v", err)
	}
	r.Release()
	r2.Release()
	cctx, cancel := context.WithCancel(ctx)
	p, _ := l.Acquire(ctx, "k", Patch, time.Second)
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	if _, err := l.Acquire(cctx, "k", Read, 5*time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	p.Release()
}

// TestReadOnlyCommandHoldsNoPatchBack (issue 31): a command that cannot
// write the Project shares with a patch, both ways, and never queues.
func TestReadOnlyCommandHoldsNoPatchBack(t *testing.T) {
	ctx := context.Background()
	l := New()
	ro, err := l.Acquire(ctx, "k", ReadOnlyCommand, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	p, err := l.Acquire(ctx, "k", Patch, 100*time.Millisecond)
	if err != nil {
		t.Fatalf("a patch waited for a read-only command: %v", err)
	}
	// Behind a waiting patch (held back by a writing command) a
	// read-only command starts at once too.
	p.Release()
	c, _ := l.Acquire(ctx, "k", Command, time.Second)
	go func() { _, _ = l.Acquire(ctx, "k", Patch, 2*time.Second) }()
	time.Sleep(20 * time.Millisecond)
	ro2, err := l.Acquire(ctx, "k", ReadOnlyCommand, 100*time.Millisecond)
	if err != nil {
		t.Fatalf("a read-only command queued behind a patch: %v", err)
	}
	ro.Release()
	ro2.Release()
	c.Release()
}

// TestReadsPassAPatchHeldBackByACommand (issue 31): a patch waiting for a
// long command does not hold reads back behind it; once no command holds
// it back, reads queue behind it again (no starvation).
func TestReadsPassAPatchHeldBackByACommand(t *testing.T) {
	ctx := context.Background()
	l := New()
	c, _ := l.Acquire(ctx, "k", Command, time.Second)
	patched := make(chan error, 1)
	go func() {
		p, err := l.Acquire(ctx, "k", Patch, 5*time.Second)
		if err == nil {
			p.Release()
		}
		patched <- err
	}()
	time.Sleep(20 * time.Millisecond)
	r, err := l.Acquire(ctx, "k", Read, 100*time.Millisecond)
	if err != nil {
		t.Fatalf("a read waited behind a patch held back by a command: %v", err)
	}
	// The command ends; the read still holds the patch back, and a new
	// read now waits behind the patch.
	c.Release()
	if _, err := l.Acquire(ctx, "k", Read, 50*time.Millisecond); err != ErrBusy {
		t.Fatalf("a read overtook a patch held back only by reads: %v", err)
	}
	r.Release()
	if err := <-patched; err != nil {
		t.Fatalf("the patch: %v", err)
	}
}
