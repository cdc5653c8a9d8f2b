package worktree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/devspace-dev/devspace/internal/gitrepo"
)

// Create returns the worktree for key, creating it when none is registered:
// a new branch devspace/<short> at the commit HEAD of the Project root names
// (a detached HEAD is fine), checked out at Dir/<repo>/<key>. An existing,
// finished worktree for key is returned as is, whatever HEAD names now;
// Create never makes a second one. What an earlier, cut-short Create for key
// left behind is cleared first (see the package doc). The checkout happens
// only once the new worktree passed the content checks in its own context
// (see add).
//
// Errors: those of Eligible; ErrInvalidKey; ErrConflict (wrapped) when the
// key's path or branch is in use; ErrUnsafe and gitrepo.ErrRepositoryUnsafe
// (wrapped) also when the new worktree fails the checks; gitrepo.ErrGit
// (wrapped) when Git failed; in these cases nothing of this attempt
// remains; the error of ctx.
func (m *Manager) Create(ctx context.Context, rootPath, key string) (*Worktree, error) {
	if err := m.waitStart(ctx); err != nil {
		return nil, err
	}
	src, err := m.openKeyed(rootPath, key)
	if err != nil {
		return nil, err
	}
	root := src.WorkTree
	unlock, err := m.lock(ctx, root)
	if err != nil {
		return nil, err
	}
	defer unlock()

	head, err := m.eligible(ctx, src)
	if err != nil {
		return nil, err
	}
	wt := m.layout(root, key)
	list, err := m.list(ctx, src)
	if err != nil {
		return nil, err
	}
	if e, ok := find(list, wt.Path); ok && finished(e) {
		if wt.BaseCommit, err = m.base(ctx, src, wt.Branch); err != nil {
			return nil, err
		}
		return wt, nil
	}

	if _, err := m.sweep(ctx, src, list, key, false); err != nil {
		return nil, err
	}
	if err := m.checkFree(ctx, src, wt); err != nil {
		return nil, err
	}
	if err := os.Mkdir(filepath.Dir(wt.Path), 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("worktree: create repository directory: %w", err)
	}

	if err := makeMetadataDirs(src); err != nil {
		return nil, err
	}
	// The marker first: until it is removed, a worktree Git reports as
	// half-created is this Create's (entry.halfCreated).
	marker := creatingMarker(wt.Path)
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		return nil, fmt.Errorf("worktree: mark the worktree being created: %w", err)
	}
	// The base ref first: a kill between the two leaves a base ref without
	// its branch, which sweep recognises as residue.
	baseRef, branchRef := baseRefPrefix+shortOf(wt.Branch), "refs/heads/"+wt.Branch
	if err := m.updateRef(ctx, src, baseRef, head, ""); err != nil {
		return nil, err
	}
	if err := m.updateRef(ctx, src, branchRef, head, ""); err != nil {
		m.undoCreate(ctx, src, wt, head)
		return nil, err
	}
	// The worktree's directory is made here, empty (Git accepts it), so
	// that a confined Git may write in it and not beside it.
	if err := os.Mkdir(wt.Path, 0o755); err != nil {
		m.undoCreate(ctx, src, wt, head)
		return nil, fmt.Errorf("worktree: create worktree directory: %w", err)
	}
	if err := m.add(ctx, src, wt); err != nil {
		m.undoCreate(ctx, src, wt, head)
		return nil, err
	}
	if err := os.Remove(marker); err != nil {
		return nil, fmt.Errorf("worktree: unmark the created worktree: %w", err)
	}
	wt.BaseCommit = head
	return wt, nil
}

// add registers wt in src with `git worktree add --no-checkout`, locked
// "initializing" as `git worktree add` itself is while it checks out (a
// crash then leaves it half-created), and checks it out only once the
// content checks pass inside it. The checkout runs the smudge filters of
// the configuration Git uses there, with the worktree's HEAD (wt.Branch)
// and repository directory, which is not the source's: a check in the
// source missed a filter included only on devspace/ branches (attacker
// review; such includes are now refused by OpenRepository too). The
// checkout is `read-tree --reset -u HEAD`, not the `reset --hard` that
// `git worktree add` runs, which also rewrites the branch's ref and reflog
// in the source; it writes the worktree and its repository directory only.
func (m *Manager) add(ctx context.Context, src *gitrepo.Repository, wt *Worktree) error {
	args := writeArgs("worktree", "add", "--quiet", "--no-checkout", "--lock", "--reason", lockInitializing, wt.Path, wt.Branch)
	if _, err := m.git.RunWriting(ctx, src, adminWrites(src, wt.Path), args...); err != nil {
		return fmt.Errorf("worktree: add worktree: %w", err)
	}
	repo, err := m.relativize(ctx, src, wt)
	if err != nil {
		return err
	}
	if filepath.Dir(repo.GitDir) != worktreesDir(src) {
		return fmt.Errorf("worktree: new worktree's repository directory is not in the source's worktrees: %w", gitrepo.ErrGit)
	}
	if err := m.checkFilters(ctx, repo); err != nil {
		return err
	}
	if _, err := m.git.RunWriting(ctx, repo, []string{wt.Path, repo.GitDir}, "read-tree", "--reset", "-u", "HEAD"); err != nil {
		return fmt.Errorf("worktree: check out worktree: %w", err)
	}
	if _, err := m.git.RunWriting(ctx, src, []string{repo.GitDir}, "worktree", "unlock", wt.Path); err != nil {
		return fmt.Errorf("worktree: unlock worktree: %w", err)
	}
	return nil
}

// relativize rewrites the .git file `git worktree add` wrote in wt
// ("gitdir: <absolute path of the source's .git/worktrees/<name>>") with the
// same location relative to wt, so that the file (which tools in a worktree
// execution may show) names no host path; Git resolves a relative gitdir
// against the directory holding the .git file. The source's back-pointer
// (.git/worktrees/<name>/gitdir) stays absolute: Git 2.39 resolves a
// relative one against its current directory, then reports the worktree
// prunable and `git worktree prune` or `git gc` deletes it. The result is
// checked like every worktree before it is used, and returned.
func (m *Manager) relativize(ctx context.Context, src *gitrepo.Repository, wt *Worktree) (*gitrepo.Repository, error) {
	dotgit := filepath.Join(wt.Path, ".git")
	target, err := absoluteGitdir(dotgit)
	if err != nil {
		return nil, err
	}
	if target == "" {
		return nil, fmt.Errorf("worktree: unexpected .git file from git worktree add: %w", gitrepo.ErrGit)
	}
	rel, err := filepath.Rel(wt.Path, target)
	if err != nil {
		return nil, fmt.Errorf("worktree: relative gitdir: %w", err)
	}
	// The temporary file sits next to the worktree, not in it: left behind
	// by a crash, it must not make the worktree dirty.
	tmp := filepath.Join(filepath.Dir(wt.Path), "."+wt.Key+".git-tmp")
	if err := os.WriteFile(tmp, []byte("gitdir: "+filepath.ToSlash(rel)+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("worktree: write .git file: %w", err)
	}
	if err := os.Rename(tmp, dotgit); err != nil {
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("worktree: write .git file: %w", err)
	}
	repo, err := m.openWorktree(src, wt.Path)
	if err != nil {
		return nil, err
	}
	if err := m.check(ctx, repo); err != nil {
		return nil, err
	}
	return repo, nil
}

// undoCreate removes what a failed Create added, with its own deadline so a
// cancelled ctx does not stop it. The path did not exist before the attempt
// (checkFree), so whatever is there now came from it.
func (m *Manager) undoCreate(ctx context.Context, src *gitrepo.Repository, wt *Worktree, head string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if list, err := m.list(ctx, src); err == nil {
		if _, ok := find(list, wt.Path); ok {
			_, _ = m.git.RunWriting(ctx, src, adminWrites(src, wt.Path), writeArgs("worktree", "remove", "--force", "--force", wt.Path)...)
		}
	}
	_ = os.RemoveAll(wt.Path)
	short := shortOf(wt.Branch)
	_ = m.updateRef(ctx, src, "refs/heads/"+wt.Branch, "", head)
	_ = m.updateRef(ctx, src, baseRefPrefix+short, "", head)
	_ = os.Remove(creatingMarker(wt.Path))
}

// absoluteGitdir returns the target of the .git file at dotgit when it is
// "gitdir: <absolute path>", and "" for anything else (a relative gitdir, a
// directory, a missing file). It opens only a regular file, without
// blocking, and reads at most 4 KiB: the worktree is a command's to change.
func absoluteGitdir(dotgit string) (string, error) {
	fi, err := os.Lstat(dotgit)
	if err != nil || !fi.Mode().IsRegular() {
		return "", nil
	}
	f, err := os.OpenFile(dotgit, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", fmt.Errorf("worktree: read .git file: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", nil
	}
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", fmt.Errorf("worktree: read .git file: %w", err)
	}
	target, ok := strings.CutPrefix(strings.TrimRight(string(data), "\n"), "gitdir: ")
	if !ok || !filepath.IsAbs(target) {
		return "", nil
	}
	return target, nil
}

// checkFree returns ErrConflict unless neither wt's path nor its refs exist.
func (m *Manager) checkFree(ctx context.Context, src *gitrepo.Repository, wt *Worktree) error {
	if _, err := os.Lstat(wt.Path); err == nil {
		return fmt.Errorf("worktree: %s exists: %w", wt.Path, ErrConflict)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("worktree: %w", err)
	}
	for _, ref := range []string{"refs/heads/" + wt.Branch, baseRefPrefix + shortOf(wt.Branch)} {
		id, err := m.resolveRef(ctx, src, ref)
		if err != nil {
			return err
		}
		if id != "" {
			return fmt.Errorf("worktree: %s exists: %w", ref, ErrConflict)
		}
	}
	return nil
}
