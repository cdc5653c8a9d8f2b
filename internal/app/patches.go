package app

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/devspace-dev/devspace/internal/config"
	"github.com/devspace-dev/devspace/internal/patch"
	"github.com/devspace-dev/devspace/internal/project"
)

// patchIntentDir holds the intent records of patches being committed
// (patch.Intents).
func patchIntentDir(cfg *config.Config) string { return filepath.Join(cfg.StateDir, "patch-intents") }

// openPatchIntents opens the patch intent records and, before anything is
// served, finishes or undoes every patch a crash interrupted. It opens
// only configured Project roots and managed worktrees; the record of a
// Project no longer configured is dropped unapplied. Results are logged
// as counts; Project paths only at debug level.
func openPatchIntents(ctx context.Context, cfg *config.Config, catalog *project.Catalog, log *slog.Logger) (*patch.Intents, error) {
	intents, err := patch.OpenIntents(patchIntentDir(cfg))
	if err != nil {
		return nil, err
	}
	roots := map[string]bool{}
	for _, r := range catalog.Roots() {
		roots[r.Path] = true
	}
	// Worktree paths are symlink-free (worktree.New resolves its directory).
	worktrees, err := filepath.Abs(WorktreeDir(cfg))
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(worktrees); err == nil {
		worktrees = real
	}
	open := func(p string) (*os.Root, error) {
		if rel, err := filepath.Rel(worktrees, p); !roots[p] && (err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))) {
			return nil, fmt.Errorf("not a configured Project: %w", fs.ErrNotExist)
		}
		return os.OpenRoot(p)
	}
	res, err := intents.Recover(ctx, open)
	if err != nil {
		return nil, fmt.Errorf("recover interrupted patches: %w", err)
	}
	if len(res.Patches) == 0 {
		return intents, nil
	}
	for _, p := range res.Patches {
		log.DebugContext(ctx, "interrupted patch recovered", "project_path", p.Root, "phase", p.Phase, "outcome", p.Outcome,
			"files", p.Files, "err", p.Err)
	}
	level := slog.LevelInfo
	if res.Count(patch.RecoveredIncomplete)+res.Count(patch.RecoveredKept)+res.Count(patch.RecoveredDropped) > 0 {
		level = slog.LevelWarn
	}
	log.Log(ctx, level, "recovered interrupted patches", "records", len(res.Patches),
		"rolled_forward", res.Count(patch.RecoveredForward), "rolled_back", res.Count(patch.RecoveredBack),
		"incomplete", res.Count(patch.RecoveredIncomplete), "kept", res.Count(patch.RecoveredKept),
		"dropped", res.Count(patch.RecoveredDropped), "leftovers_removed", res.Removed)
	return intents, nil
}
