package worktree

import (
	"context"
	"fmt"
	"sync"
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

// PruneAtStart prepares the startup prune: once begin is called, it prunes
// in the background what a crash left half-created in every root that can
// host managed worktrees (Eligible, then Prune), calls done with one result
// per root, in order, and closes finished once done has returned. From the
// call of PruneAtStart until then every other method waits for it (or for
// its own context), so nothing sees a half-created worktree a prune would
// have removed. A server calls begin once it listens, instead of running a
// few Git commands per Project before it can.
//
// Call it at most once, before the Manager is used anywhere else; begin
// may be called any number of times. When ctx ends first, the roots not
// yet pruned report ctx's error.
func (m *Manager) PruneAtStart(ctx context.Context, roots []string, done func([]PruneResult)) (begin func(), finished <-chan struct{}) {
	m.started = make(chan struct{})
	return sync.OnceFunc(func() { go m.pruneAtStart(ctx, roots, done) }), m.started
}

func (m *Manager) pruneAtStart(ctx context.Context, roots []string, done func([]PruneResult)) {
	defer close(m.started)
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

// waitStart waits until the startup prune, if any, is over.
func (m *Manager) waitStart(ctx context.Context) error {
	if m.started == nil {
		return nil
	}
	select {
	case <-m.started:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("worktree: wait for the startup prune: %w", ctx.Err())
	}
}
