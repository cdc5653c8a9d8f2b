// Package rootlock coordinates DevSpace's own writers on a Project root: a
// fair (FIFO) lock per canonical root with three modes.
//
//   - Read: read_files, inspect, show_changes. Shares with Read and Command.
//   - Command: held by exec_command from spawn until the command's whole
//     process tree has exited. Shares with Read and other Commands (a
//     Project may run several commands at once), excludes Patch.
//   - ReadOnlyCommand: a command that cannot write the Project (sandbox
//     readOnly). Shares with everything, Patch included: nothing it does
//     can conflict with a patch, so a grant without project:write cannot
//     hold patches back for a command's whole run (up to 6 h).
//   - Patch: apply_patch and undo, for their commit. Excludes everything
//     but ReadOnlyCommand.
//
// Waiters are served in arrival order, so a stream of readers cannot
// starve a patch, with two exceptions that starve nobody: a
// ReadOnlyCommand never waits, and while a waiting patch is held back by a
// running command (which may run for hours), reads behind it go ahead of
// it (once no command holds it back, order is strict again). A wait that
// outlasts its timeout returns ErrBusy (the tool error project_busy). See
// docs/decisions.md for why running commands do not block readers.
package rootlock

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/devspace-dev/devspace/internal/fault"
	"github.com/devspace-dev/devspace/internal/project"
)

// DefaultWait is how long a tool waits for a Project's root lock before
// answering project_busy: well under a host's first-byte limit.
const DefaultWait = 8 * time.Second

// ErrBusy is returned when a lock could not be taken in time
// (project_busy).
var ErrBusy = fault.New("project_busy", "project busy")

// Mode is a lock mode.
type Mode int

// Lock modes.
const (
	Read Mode = iota
	Command
	Patch
	ReadOnlyCommand
)

func (m Mode) String() string {
	return [...]string{"read", "command", "patch", "read_only_command"}[m]
}

func compatible(a, b Mode) bool {
	if a == ReadOnlyCommand || b == ReadOnlyCommand {
		return true
	}
	if a == Patch || b == Patch {
		return false
	}
	return true
}

// Locks holds one lock per root key. The zero value is not usable; use New.
type Locks struct {
	mu    sync.Mutex
	roots map[string]*root
}

type root struct {
	held    map[Mode]int
	waiters []*waiter
}

type waiter struct {
	mode  Mode
	ready chan struct{}
	done  bool // granted or abandoned
}

// New returns an empty set of locks.
func New() *Locks { return &Locks{roots: map[string]*root{}} }

// Lease is a held lock; Release it exactly once (further calls are no-ops).
type Lease struct {
	l    *Locks
	key  string
	mode Mode
	once sync.Once
}

// Release gives the lock back and wakes the next waiters.
func (le *Lease) Release() {
	le.once.Do(func() {
		le.l.mu.Lock()
		defer le.l.mu.Unlock()
		r := le.l.roots[le.key]
		r.held[le.mode]--
		le.l.grantLocked(le.key, r)
	})
}

// Mode returns the lease's mode.
func (le *Lease) Mode() Mode { return le.mode }

// Acquire waits (FIFO) for mode on key up to timeout or ctx's end.
func (l *Locks) Acquire(ctx context.Context, key string, mode Mode, timeout time.Duration) (*Lease, error) {
	l.mu.Lock()
	r := l.roots[key]
	if r == nil {
		r = &root{held: map[Mode]int{}}
		l.roots[key] = r
	}
	w := &waiter{mode: mode, ready: make(chan struct{})}
	r.waiters = append(r.waiters, w)
	l.grantLocked(key, r)
	l.mu.Unlock()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-w.ready:
		return &Lease{l: l, key: key, mode: mode}, nil
	case <-timer.C:
	case <-ctx.Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-w.ready: // granted while we gave up: keep it
		return &Lease{l: l, key: key, mode: mode}, nil
	default:
	}
	w.done = true
	l.grantLocked(key, r) // our departure may unblock those behind us
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, ErrBusy
}

// grantLocked grants waiters from the head of the queue while they are
// compatible with what is held; it stops at the first that is not, which
// keeps the order fair. Behind that one, it grants every ReadOnlyCommand
// (compatible with everything, it delays no one) and, while the blocked
// head is a Patch held back by a running command, every Read (reads are
// short; the patch waits for the command anyway).
func (l *Locks) grantLocked(key string, r *root) {
	for len(r.waiters) > 0 {
		w := r.waiters[0]
		if w.done {
			r.waiters = r.waiters[1:]
			continue
		}
		if !r.admits(w.mode) {
			break
		}
		r.grant(w)
		r.waiters = r.waiters[1:]
	}
	if len(r.waiters) > 0 {
		readsPass := r.waiters[0].mode == Patch && r.held[Command] > 0
		for _, w := range r.waiters[1:] {
			if !w.done && (w.mode == ReadOnlyCommand || readsPass && w.mode == Read) && r.admits(w.mode) {
				r.grant(w)
			}
		}
	}
	if len(r.waiters) == 0 && r.held[Read]+r.held[Command]+r.held[Patch]+r.held[ReadOnlyCommand] == 0 {
		delete(l.roots, key)
	}
}

// admits reports whether mode is compatible with every lease held.
func (r *root) admits(mode Mode) bool {
	for m, n := range r.held {
		if n > 0 && !compatible(m, mode) {
			return false
		}
	}
	return true
}

// grant hands w its lease; it stays in the queue, done, until it reaches
// the head.
func (r *root) grant(w *waiter) {
	r.held[w.mode]++
	w.done = true
	close(w.ready)
}

// Holding reports how many leases of mode are held on key (for tests,
// metrics and refusing to close an execution while commands run).
func (l *Locks) Holding(key string, mode Mode) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := l.roots[key]; r != nil {
		return r.held[mode]
	}
	return 0
}

// ErrRootUnavailable: the directory of a lock just taken could not be
// opened (it was removed, unmounted or is unreadable right now):
// project_unavailable.
var ErrRootUnavailable = fault.New("project_unavailable", "project root unavailable")

// Held is a lease on a Project root with the root opened under it.
type Held struct {
	Root  *os.Root
	Lease *Lease
}

// Close closes the root and releases the lease.
func (h *Held) Close() {
	h.Root.Close()
	h.Lease.Release()
}

// AcquireRoot takes the lock on dir in mode (as Acquire) and opens dir as
// an os.Root under it. Errors: those of Acquire; ErrRootUnavailable
// (wrapped, the cause's host path scrubbed) when dir cannot be opened, the
// lease then released.
func (l *Locks) AcquireRoot(ctx context.Context, dir string, mode Mode, timeout time.Duration) (*Held, error) {
	lease, err := l.Acquire(ctx, dir, mode, timeout)
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		lease.Release()
		return nil, fmt.Errorf("%w: %w", ErrRootUnavailable, project.Scrub(err))
	}
	return &Held{Root: r, Lease: lease}, nil
}
