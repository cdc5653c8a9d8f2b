package executions

import (
	"context"
	"sync"
)

// fifo serializes operations per key in arrival order (a ticket lock per
// key). sync.Mutex is not FIFO, and a later request must never overtake an
// earlier one of the same session+Actor.
type fifo struct {
	mu    sync.Mutex
	lanes map[string]*lane
}

type lane struct {
	next, serving uint64
	waiters       map[uint64]chan struct{}
}

func newFIFO() *fifo { return &fifo{lanes: map[string]*lane{}} }

// acquire waits for key's turn and returns the release function. If ctx
// ends while waiting, the ticket is skipped when its turn comes.
func (f *fifo) acquire(ctx context.Context, key string) (func(), error) {
	f.mu.Lock()
	l := f.lanes[key]
	if l == nil {
		l = &lane{waiters: map[uint64]chan struct{}{}}
		f.lanes[key] = l
	}
	ticket := l.next
	l.next++
	if ticket == l.serving {
		f.mu.Unlock()
		return func() { f.release(key) }, nil
	}
	ch := make(chan struct{})
	l.waiters[ticket] = ch
	f.mu.Unlock()
	select {
	case <-ch:
		return func() { f.release(key) }, nil
	case <-ctx.Done():
		f.mu.Lock()
		if _, still := l.waiters[ticket]; still {
			// Not our turn yet: mark the ticket abandoned; release skips it.
			l.waiters[ticket] = nil
			f.mu.Unlock()
			return nil, ctx.Err()
		}
		f.mu.Unlock()
		// Our turn arrived concurrently; pass it on.
		f.release(key)
		return nil, ctx.Err()
	}
}

func (f *fifo) release(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.lanes[key]
	for {
		l.serving++
		if l.serving == l.next {
			delete(f.lanes, key)
			return
		}
		ch, ok := l.waiters[l.serving]
		delete(l.waiters, l.serving)
		if ok && ch != nil {
			close(ch)
			return
		}
		// abandoned ticket: skip it
	}
}
