package app

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/devspace-dev/devspace/internal/config"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/worktree"
)

// worktreeDir holds managed worktrees (the /data volume in the image).
func worktreeDir(cfg *config.Config) string { return filepath.Join(cfg.StateDir, "worktrees") }

// newWorktrees opens the worktree manager and clears what a crash left
// half-created in each Project that can host worktrees. It never removes a
// worktree that holds work.
func newWorktrees(ctx context.Context, cfg *config.Config, catalog *project.Catalog, log *slog.Logger) (*worktree.Manager, error) {
	m, err := worktree.New(worktree.Options{Dir: worktreeDir(cfg)})
	if err != nil {
		return nil, fmt.Errorf("open worktree directory: %w", err)
	}
	for _, r := range catalog.Roots() {
		if m.Eligible(ctx, r.Path) != nil {
			continue
		}
		removed, err := m.Prune(ctx, r.Path)
		if err != nil {
			log.WarnContext(ctx, "prune worktrees", "project", r.Label, "err", err)
			continue
		}
		if len(removed) > 0 {
			log.InfoContext(ctx, "pruned half-created worktrees", "project", r.Label, "count", len(removed))
		}
	}
	return m, nil
}
