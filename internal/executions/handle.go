package executions

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/store"
)

// Handle is an open execution as a service sees it: who calls, the
// execution's record as resolved, and the Project root its tools work in
// (a managed worktree's directory, with Source the Project's). Its
// context is cancelled when the execution closes — by a revocation,
// revoke-all, password rotation, Thread close or Project removal —
// before anything the execution owns is killed.
//
// The one rule every service keeps: take your own lock, then check Err
// once; after a nil Err the close waits for you (it kills your command,
// or waits for the lock you hold), and after a non-nil one you do
// nothing.
//
// Service.Resolve hands out handles; services take the interface so that
// their tests can pass their own.
type Handle interface {
	ID() string
	Caller() Caller
	Project() project.Root
	// Execution is the record as resolved; it is never re-read.
	Execution() *store.Execution
	// Context is cancelled when the execution closes.
	Context() context.Context
	// Err is nil while the execution is open, and ErrExecutionClosed
	// (which wraps ErrExecutionRequired) once it closed.
	Err() error
	// Release gives the handle back; call it once, when the call ends,
	// and use the handle no more.
	Release()
}

type handle struct {
	exec   *store.Execution
	caller Caller
	proj   project.Root
	live   *live
}

func (h *handle) ID() string                  { return h.exec.ID }
func (h *handle) Caller() Caller              { return h.caller }
func (h *handle) Project() project.Root       { return h.proj }
func (h *handle) Execution() *store.Execution { return h.exec }
func (h *handle) Context() context.Context    { return h.live.ctx }
func (h *handle) Release()                    { h.live.reg.release(h.exec.ID, h.live) }

func (h *handle) Err() error {
	if h.live.ctx.Err() != nil {
		return ErrExecutionClosed
	}
	return nil
}

// ErrExecutionClosed: the execution closed while a call held its handle.
var ErrExecutionClosed = fmt.Errorf("execution closed: %w", ErrExecutionRequired)

// live is what the handles of one execution share.
type live struct {
	reg    *registry
	ctx    context.Context
	cancel context.CancelFunc
	refs   int
}

// closedTTL is how long a recorded close stays in memory: longer than a
// call takes from reading the binding to taking its handle, which does
// not wait for anything.
const closedTTL = 10 * time.Minute

// registry is the one place an execution is closed in memory. A close
// (markClosed) cancels the handles in use and leaves a tombstone, so a
// call that read the binding before the close and takes its handle after
// it is refused; the tombstone outlives the store's record of the close
// by closedTTL, and stays while that record is not written.
type registry struct {
	mu     sync.Mutex
	lives  map[string]*live
	closed map[string]tombstone
}

type tombstone struct {
	recorded time.Time // zero until the store holds the close
}

func newRegistry() *registry {
	return &registry{lives: map[string]*live{}, closed: map[string]tombstone{}}
}

// acquire hands out a reference to the execution's live state, or false
// when it is closed.
func (r *registry) acquire(id string) (*live, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.closed[id]; ok {
		return nil, false
	}
	l := r.lives[id]
	if l == nil {
		ctx, cancel := context.WithCancel(context.Background())
		l = &live{reg: r, ctx: ctx, cancel: cancel}
		r.lives[id] = l
	}
	l.refs++
	return l, true
}

func (r *registry) release(id string, l *live) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l.refs--; l.refs == 0 && r.lives[id] == l {
		delete(r.lives, id) // its context is never cancelled now: a released handle is not used
	}
}

// markClosed closes ids in memory: their handles' contexts are cancelled
// and no new handle is handed out.
func (r *registry) markClosed(ids []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	for id, t := range r.closed {
		if !t.recorded.IsZero() && now.Sub(t.recorded) > closedTTL {
			delete(r.closed, id)
		}
	}
	for _, id := range ids {
		r.closed[id] = tombstone{}
		if l := r.lives[id]; l != nil {
			l.cancel()
			delete(r.lives, id)
		}
	}
}

// recorded notes that the store holds the close of ids.
func (r *registry) recorded(ids []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	for _, id := range ids {
		if _, ok := r.closed[id]; ok {
			r.closed[id] = tombstone{recorded: now}
		}
	}
}

// isClosed reports whether id was closed in memory (recorded or not).
func (r *registry) isClosed(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.closed[id]
	return ok
}

// AfterClose registers f to learn of every execution closed, right after
// its handles are cancelled and before what it owns is released: state a
// service keeps per execution goes with it. Register while wiring, before
// any call.
func (s *Service) AfterClose(f func(executionIDs []string)) {
	s.afterClose = append(s.afterClose, f)
}

// closeInMemory closes ids in memory (the registry) and tells whoever
// registered with AfterClose.
func (s *Service) closeInMemory(ids []string) {
	s.reg.markClosed(ids)
	for _, f := range s.afterClose {
		f(ids)
	}
}
