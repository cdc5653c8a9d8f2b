package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/devspace-dev/devspace/internal/config"
	"github.com/devspace-dev/devspace/internal/gitrepo"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/store"
	"github.com/devspace-dev/devspace/internal/worktree"
)

// worktreeDir holds managed worktrees (the /data volume in the image).
func worktreeDir(cfg *config.Config) string { return filepath.Join(cfg.StateDir, "worktrees") }

// pruneSetting is where the last startup prune is recorded for doctor.
const pruneSetting = "worktree_prune"

// pruneSummary is the last startup prune, as doctor reports it.
type pruneSummary struct {
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
	m, err = worktree.New(worktree.Options{Dir: worktreeDir(cfg), Git: git})
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
		sum := pruneSummary{At: at}
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

// doctorWorktrees reports, per Project that can host worktrees, its
// managed worktrees and anything a crash left half-created (without
// changing it), and the last startup prune.
func doctorWorktrees(ctx context.Context, cfg *config.Config, st *store.Store, ok, warn func(string, ...any)) {
	dir := worktreeDir(cfg)
	if _, err := os.Stat(dir); err != nil {
		ok("no managed worktrees yet")
		return
	}
	m, err := worktree.New(worktree.Options{Dir: dir})
	if err != nil {
		warn("managed worktrees: %v", err)
		return
	}
	for _, p := range cfg.Projects {
		if m.Eligible(ctx, p.Path) != nil {
			continue
		}
		r, err := m.Check(ctx, p.Path)
		switch {
		case err != nil:
			warn("Project %s: cannot inspect its worktrees: %v", p.Label, err)
		case len(r.Unfinished) > 0:
			warn("Project %s: %d managed worktree(s); %d half-created item(s) left by a crash, removed at the next start: %s",
				p.Label, r.Managed, len(r.Unfinished), strings.Join(r.Unfinished, ", "))
		default:
			ok("Project %s: %d managed worktree(s), none half-created", p.Label, r.Managed)
		}
	}
	if st == nil {
		return
	}
	raw, err := st.Setting(ctx, pruneSetting)
	var sum pruneSummary
	if err != nil || json.Unmarshal([]byte(raw), &sum) != nil {
		return
	}
	if len(sum.Failed) > 0 {
		warn("last start (%s) could not prune the worktrees of: %s", sum.At.Format(time.RFC3339), strings.Join(sum.Failed, ", "))
	} else {
		ok("last start (%s) pruned %d half-created worktree item(s) in %d Project(s)", sum.At.Format(time.RFC3339), sum.Removed, sum.Projects)
	}
}
