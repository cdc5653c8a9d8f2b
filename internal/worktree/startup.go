package worktree

import (
	"context"
	"fmt"
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

// PruneAtStart prunes, in the background, what a crash left half-created
// in every root that can host managed worktrees (Eligible, then Prune),
// calls done with one result per root, in order, and closes the returned
// channel once done has returned. Until then every other method waits for
// it (or for its own context), so nothing sees a half-created worktree a
// prune would have removed. A server calls it as it starts, instead of
// running a few Git commands per Project before it can listen.
//
// Call it at most once, before the Manager is used anywhere else. When
// ctx ends first, the roots not yet pruned report ctx's error.
func (m *Manager) PruneAtStart(ctx context.Context, roots []string, done func([]PruneResult)) <-chan struct{} {
	m.started = make(chan struct{})
	go func() {
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
	}()
	return m.started
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
