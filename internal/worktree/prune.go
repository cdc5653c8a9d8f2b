package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/devspace-dev/devspace/internal/gitrepo"
)

// Prune removes, for the repository at rootPath, what Creates cut short by
// a crash or a kill left behind, so that no half-registered worktree
// remains. A server prunes every Project root that may have managed
// worktrees as it starts (PruneAtStart). It removes:
//
//   - worktrees under this repository's directory in Dir that Git still
//     marks as initializing (`git worktree add` never finished), with their
//     directories;
//   - the registration of worktrees there whose directory is gone (what
//     `git worktree prune` would do, limited to this package's worktrees; a
//     worktree locked by someone is left alone);
//   - empty directories there that Git does not know;
//   - base refs whose branch is missing, or is checked out nowhere and still
//     at the base commit, together with that branch.
//
// It also rewrites, relative, the .git file of finished worktrees made
// before Create wrote it so (see relativize); that is not reported.
//
// It keeps anything that may hold work: finished worktrees, non-empty
// directories Git does not know, branches that moved past their base. It
// returns what it removed: worktree paths and full ref names.
//
// Errors: ErrNotRepository, ErrNotTopLevel (wrapped); gitrepo.ErrGit
// (wrapped) when Git failed, with what was removed until then; the error of
// ctx; a filesystem error when rootPath cannot be resolved.
func (m *Manager) Prune(ctx context.Context, rootPath string) (removed []string, err error) {
	if err := m.waitStart(ctx); err != nil {
		return nil, err
	}
	return m.prune(ctx, rootPath)
}

// prune is Prune without waiting for the startup prune.
func (m *Manager) prune(ctx context.Context, rootPath string) (removed []string, err error) {
	src, err := m.openSource(rootPath)
	if err != nil {
		return nil, err
	}
	unlock, err := m.lock(ctx, src.WorkTree)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := m.check(ctx, src); err != nil {
		return nil, err
	}
	list, err := m.list(ctx, src)
	if err != nil {
		return nil, err
	}
	removed, err = m.sweep(ctx, src, list, "", false)
	if err != nil {
		return removed, err
	}
	return removed, m.relativizeAll(ctx, src, list)
}

// relativizeAll rewrites the .git file of every finished managed worktree
// of src that still names its repository directory by an absolute path
// (made before .git files were written relative), as Create now does.
func (m *Manager) relativizeAll(ctx context.Context, src *gitrepo.Repository, list []entry) error {
	repoDir := m.repoDir(src.WorkTree)
	for _, e := range list {
		key := filepath.Base(e.path)
		if filepath.Dir(e.path) != repoDir || !finished(e) || checkKey(key) != nil {
			continue
		}
		wt := m.layout(src.WorkTree, key)
		target, err := absoluteGitdir(filepath.Join(wt.Path, ".git"))
		if err != nil {
			return err
		}
		if target == "" {
			continue
		}
		if _, err := m.relativize(ctx, src, wt); err != nil {
			return err
		}
	}
	return nil
}

// Report is what Check found for one repository.
type Report struct {
	// Managed counts this package's finished worktrees of the repository.
	Managed int
	// Unfinished lists what Prune would remove: half-created worktrees,
	// registrations without a directory, empty directories, stale refs
	// (worktree paths and full ref names).
	Unfinished []string
}

// Check reports the managed worktrees of the repository at rootPath and
// what a crash left half-created, without changing anything (doctor uses
// it, also while a server runs). Errors are Prune's.
func (m *Manager) Check(ctx context.Context, rootPath string) (Report, error) {
	if err := m.waitStart(ctx); err != nil {
		return Report{}, err
	}
	src, err := m.openSource(rootPath)
	if err != nil {
		return Report{}, err
	}
	if err := m.check(ctx, src); err != nil {
		return Report{}, err
	}
	list, err := m.list(ctx, src)
	if err != nil {
		return Report{}, err
	}
	var r Report
	repoDir := m.repoDir(src.WorkTree)
	for _, e := range list {
		if filepath.Dir(e.path) == repoDir && !e.halfCreated() && !(e.prunable && missing(e.path)) {
			r.Managed++
		}
	}
	r.Unfinished, err = m.sweep(ctx, src, list, "", true)
	return r, err
}

// sweep does Prune's work for root, whose worktrees are list, and the
// caller holds root's lock. With key set it only looks at that key's path
// and refs (Create's clean-up before retrying). With dry set it changes
// nothing and returns what it would remove (the caller need not hold the
// lock).
func (m *Manager) sweep(ctx context.Context, src *gitrepo.Repository, list []entry, key string, dry bool) (removed []string, err error) {
	root := src.WorkTree
	repoDir := m.repoDir(root)
	inScope := func(path string) bool {
		return filepath.Dir(path) == repoDir && (key == "" || filepath.Base(path) == key)
	}

	// Registered worktrees that never finished or lost their directory.
	changed := false
	for _, e := range list {
		if !inScope(e.path) {
			continue
		}
		var args []string
		switch {
		case e.halfCreated():
			args = writeArgs("worktree", "remove", "--force", "--force", e.path)
		case e.prunable && !e.locked && missing(e.path):
			args = writeArgs("worktree", "remove", "--force", e.path)
		default:
			continue
		}
		if dry {
			removed = append(removed, e.path)
			continue
		}
		if _, err := m.git.RunWriting(ctx, src, adminWrites(src, e.path), args...); err != nil {
			return removed, fmt.Errorf("worktree: remove unfinished worktree: %w", err)
		}
		_ = os.Remove(creatingMarker(e.path))
		removed = append(removed, e.path)
		changed = true
	}
	if changed {
		if list, err = m.list(ctx, src); err != nil {
			return removed, err
		}
	}

	// Empty directories Git does not know: `git worktree add` creates the
	// directory just before registering it.
	var names []string
	if key != "" {
		names = []string{key}
	} else {
		ents, err := os.ReadDir(repoDir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return removed, fmt.Errorf("worktree: %w", err)
		}
		for _, d := range ents {
			names = append(names, d.Name())
		}
	}
	for _, name := range names {
		p := filepath.Join(repoDir, name)
		if _, known := find(list, p); known || !isEmptyDir(p) {
			continue
		}
		if dry {
			removed = append(removed, p)
			continue
		}
		if err := os.Remove(p); err != nil {
			return removed, fmt.Errorf("worktree: %w", err)
		}
		_ = os.Remove(creatingMarker(p))
		removed = append(removed, p)
	}

	// Base refs whose branch never got a worktree, or lost it without
	// moving.
	var shorts []string
	if key != "" {
		shorts = []string{shortOf(m.layout(root, key).Branch)}
	} else {
		out, err := m.git.Run(ctx, src, "for-each-ref", "--format=%(refname)", baseRefPrefix)
		if err != nil {
			return removed, fmt.Errorf("worktree: list base refs: %w", err)
		}
		for _, ref := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if short, ok := strings.CutPrefix(ref, baseRefPrefix); ok && short != "" {
				shorts = append(shorts, short)
			}
		}
	}
	// A branch is in use when checked out anywhere, or when it belongs to
	// a registered worktree here (which may have switched to another one).
	inUse := map[string]bool{}
	for _, e := range list {
		inUse[e.branch] = true
		if filepath.Dir(e.path) == repoDir && checkKey(filepath.Base(e.path)) == nil {
			inUse["refs/heads/"+m.layout(root, filepath.Base(e.path)).Branch] = true
		}
	}
	for _, short := range shorts {
		baseRef, branchRef := baseRefPrefix+short, "refs/heads/"+BranchPrefix+short
		if inUse[branchRef] {
			continue
		}
		base, err := m.resolveRef(ctx, src, baseRef)
		if err != nil {
			return removed, err
		}
		if base == "" {
			continue
		}
		tip, err := m.resolveRef(ctx, src, branchRef)
		if err != nil {
			return removed, err
		}
		if tip != "" && tip != base {
			continue // commits on the branch: keep it
		}
		if dry {
			if tip != "" {
				removed = append(removed, branchRef)
			}
			removed = append(removed, baseRef)
			continue
		}
		if tip != "" {
			if err := m.updateRef(ctx, src, branchRef, "", base); err != nil {
				return removed, err
			}
			removed = append(removed, branchRef)
		}
		if err := m.updateRef(ctx, src, baseRef, "", base); err != nil {
			return removed, err
		}
		removed = append(removed, baseRef)
	}
	return removed, nil
}

// missing reports whether nothing exists at p.
func missing(p string) bool {
	_, err := os.Lstat(p)
	return errors.Is(err, os.ErrNotExist)
}
