package worktree

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// PruneResult is the startup prune of one Project root.
type PruneResult struct {
	Root string
	// Skipped is set when the root cannot host managed worktrees
	// (Eligible failed), so there was nothing of this package's to prune.
	Skipped bool
	// Removed and Err are Prune's.
	Removed []string
	Err     error
}

// PruneAtStart prepares the startup prune: once begun, it prunes in the
// background what a crash left half-created in every root that can host
// managed worktrees (Eligible, then Prune), calls done with one result per
// root, in order, and closes finished once done has returned. From the
// call of PruneAtStart until then every other method waits for it (or for
// its own context), beginning it if it has not begun, so that none of them
// works beside it; a prune that failed or was stopped (ctx) leaves behind
// what it did not remove, which Create and Get tolerate. A server begins
// it once it listens, instead of running a few Git commands per Project
// before it can.
//
// Call it at most once, before the Manager is used anywhere else; begin
// may be called any number of times. When ctx ends first, or
// StartupPruneTimeout after it began, the roots not yet pruned report
// that error (context.Canceled, context.DeadlineExceeded).
func (m *Manager) PruneAtStart(ctx context.Context, roots []string, done func([]PruneResult)) (begin func(), finished <-chan struct{}) {
	if m.started != nil {
		panic("worktree: PruneAtStart called twice")
	}
	ch := make(chan struct{})
	m.started = ch
	m.begin = sync.OnceFunc(func() { go m.pruneAtStart(ctx, roots, done, ch) })
	return m.begin, ch
}

// StartupPruneTimeout bounds the startup prune, which every other method
// waits for: a Git command that hangs in one Project must not hold up the
// others' worktrees for long. Those not pruned in time are reported with
// context.DeadlineExceeded and what they left stays until the next start.
const StartupPruneTimeout = time.Minute

func (m *Manager) pruneAtStart(ctx context.Context, roots []string, done func([]PruneResult), finished chan<- struct{}) {
	defer close(finished)
	ctx, cancel := context.WithTimeout(ctx, StartupPruneTimeout)
	defer cancel()
	results := make([]PruneResult, 0, len(roots))
	for _, root := range roots {
		r := PruneResult{Root: root}
		if err := ctx.Err(); err != nil {
			r.Err = err
		} else if err := m.eligibleRoot(ctx, root); err != nil {
			r.Skipped = ctx.Err() == nil
			r.Err = ctx.Err()
		} else {
			r.Removed, r.Err = m.prune(ctx, root)
		}
		results = append(results, r)
	}
	done(results)
}

// waitStart begins the startup prune, if there is one and it has not
// begun, and waits until it is over.
func (m *Manager) waitStart(ctx context.Context) error {
	if m.started == nil {
		return nil
	}
	m.begin()
	select {
	case <-m.started:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("worktree: wait for the startup prune: %w", ctx.Err())
	}
}
