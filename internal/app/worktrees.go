package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/devspace-dev/devspace/internal/config"
	"github.com/devspace-dev/devspace/internal/gitrepo"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/store"
	"github.com/devspace-dev/devspace/internal/worktree"
)

// WorktreeDir holds managed worktrees (the /data volume in the image).
func WorktreeDir(cfg *config.Config) string { return filepath.Join(cfg.StateDir, "worktrees") }

// pruneSetting is where the last startup prune is recorded for doctor.
const pruneSetting = "worktree_prune"

// PruneSummary is the last startup prune, as doctor reports it.
type PruneSummary struct {
	At       time.Time `json:"at"`
	Projects int       `json:"projects"` // Projects that can host worktrees
	Removed  int       `json:"removed"`  // worktrees, directories and refs removed
	Failed   []string  `json:"failed,omitempty"`
}

// newWorktrees opens the worktree manager. Once begin is called it clears,
// in the background (ctx ends it), what a crash left half-created in each
// Project that can host worktrees, recording what it did for doctor; until
// then the manager's other methods wait for it. It never removes a
// worktree that holds work. finished is closed when the prune and its
// record are done.
func newWorktrees(ctx context.Context, cfg *config.Config, catalog *project.Catalog, st *store.Store, confine gitrepo.Confiner, log *slog.Logger) (m *worktree.Manager, begin func(), finished <-chan struct{}, err error) {
	git := gitrepo.NewGit(gitrepo.GitOptions{Timeout: worktree.DefaultGitTimeout, Confine: confine})
	m, err = worktree.New(worktree.Options{Dir: WorktreeDir(cfg), Git: git})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open worktree directory: %w", err)
	}
	roots := catalog.Roots()
	paths := make([]string, len(roots))
	for i, r := range roots {
		paths[i] = r.Path
	}
	at := st.Now()
	begin, finished = m.PruneAtStart(ctx, paths, func(results []worktree.PruneResult) {
		sum := PruneSummary{At: at}
		for i, r := range results {
			label := roots[i].Label
			switch {
			case r.Skipped:
				continue
			case r.Err != nil && ctx.Err() != nil:
				return // stopped by Close: the last complete prune stays on record
			case r.Err != nil:
				log.WarnContext(ctx, "prune worktrees", "project", label, "err", r.Err)
				sum.Failed = append(sum.Failed, label)
			case len(r.Removed) > 0:
				log.InfoContext(ctx, "pruned half-created worktrees", "project", label, "count", len(r.Removed))
			}
			sum.Projects++
			sum.Removed += len(r.Removed)
		}
		b, _ := json.Marshal(sum)
		// Close waits for this write (finished) before it closes the store.
		wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer wcancel()
		if err := st.SetSetting(wctx, pruneSetting, string(b)); err != nil {
			log.WarnContext(ctx, "record worktree prune", "err", err)
		}
	})
	return m, begin, finished, nil
}

// LastPrune returns the last startup prune a server recorded in st, and
// false when none is recorded (or the record cannot be read).
func LastPrune(ctx context.Context, st *store.Store) (PruneSummary, bool) {
	raw, err := st.Setting(ctx, pruneSetting)
	var sum PruneSummary
	if err != nil || json.Unmarshal([]byte(raw), &sum) != nil {
		return PruneSummary{}, false
	}
	return sum, true
}
