// Package worktree manages the Git worktrees DevSpace creates for executions
// opened with checkoutKind "worktree" (docs/design.md §6). It knows nothing about
// MCP: callers pass a Project root and an opaque key (the execution ID, say)
// and get back a Worktree.
//
// Layout and naming. The worktree of key for the repository at root lives at
// Dir/<repo>/<key>, where <repo> is the first 16 hex digits of the SHA-256 of
// the canonical root path. The per-repository directory keeps Prune, which
// only touches what lies under it, away from other repositories' worktrees.
// Its branch is devspace/<short>, <short> being the first 10 hex digits of
// the SHA-256 of key, and the ref refs/devspace/base/<short> records the
// commit it was created from (Worktree.BaseCommit); it also keeps that commit
// reachable. Both refs live in the source repository.
//
// Git. Every operation first checks the source repository's metadata with
// gitrepo.OpenRepository (nothing may point outside the Project root) and,
// for an existing worktree, the worktree's (it may point into the worktree
// and the source Project root only); when that fails it returns
// gitrepo.ErrRepositoryUnsafe (wrapped) and runs no Git. Every invocation
// then goes through gitrepo.Git on the verified repository: explicit
// GIT_DIR, GIT_COMMON_DIR and GIT_WORK_TREE, scrubbed environment, no
// system or global configuration, fsmonitor, hooks, pager and transports
// off, process-group kill. After `git worktree add` the worktree's .git
// file is rewritten relative, so it names no host path (see relativize).
// Creating and removing a worktree write to the source repository's .git
// (worktrees/ metadata, refs), which is the point of this package; each
// invocation, confined, may write only what it needs (writes.go), never
// the source's hooks/ or config while Git reads work tree content. Before
// Git compares work tree content (Dirty; the checkout of Create, which runs
// smudge filters; `git worktree remove`, which runs `git status`)
// gitrepo.Git.CheckContent, run in that worktree's own context, refuses
// executable filters and diff or merge drivers (ErrUnsafe) and checked-out
// submodules whose metadata leads outside (gitrepo.ErrRepositoryUnsafe).
// That is why Create registers the worktree without a checkout, checks it
// from inside, and only then checks it out: the source's configuration may
// mean something else there (OpenRepository refuses conditional includes,
// whose conditions name the branch and the repository directory).
//
// Crash safety. Create adds the refs, then registers the worktree directly
// at the final path, locked "initializing" until it is checked out; on any
// failure it removes what it added. A process killed meanwhile leaves at
// most a worktree Git marks as still initializing, an empty directory, or
// the two refs pointing at the same commit. Prune, and Create for the same
// key, remove exactly those; they never remove a worktree that finished, a
// non-empty directory Git does not know, or a branch that moved past its
// base, so no work is ever lost to them. Only Remove deletes a finished
// worktree, and only a clean one.
//
// One Manager must own Dir: two processes sharing it could see each other's
// creations in progress as half-created.
package worktree

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/devspace-dev/devspace/internal/gitrepo"
)

// DefaultGitTimeout bounds one Git invocation when Options.Git is nil. It is
// generous because `git worktree add` checks out the whole tree.
const DefaultGitTimeout = 5 * time.Minute

// BranchPrefix starts the name of every branch this package creates.
const BranchPrefix = "devspace/"

// baseRefPrefix starts the refs recording each branch's base commit.
const baseRefPrefix = "refs/devspace/base/"

// cleanupTimeout bounds the clean-up after a failed Create, which runs even
// when the caller's context has ended.
const cleanupTimeout = time.Minute

// maxKeyLen bounds a key, which becomes a file name.
const maxKeyLen = 128

// Errors returned by the Manager. The worktree package owns them; they come
// wrapped with lowercase context meant for logs, so test them with
// errors.Is. They say no code: package executions answers ErrNotRepository,
// ErrNotTopLevel, ErrNoCommits and ErrUnsafe as ErrWorktreeUnavailable
// (project_worktree_unavailable) and ErrDirty as ErrWorktreeDirty;
// gitrepo.ErrRepositoryUnsafe, which every operation may return (wrapped)
// when repository metadata points outside the allowed directories, says
// its own (repository_unsafe).
var (
	// ErrNotRepository: the Project root is not inside a Git work tree.
	ErrNotRepository = errors.New("project root is not in a git repository")
	// ErrNotTopLevel: the Project root is inside a Git repository but is not
	// its work tree's top level.
	ErrNotTopLevel = errors.New("project root is not the git top level")
	// ErrNoCommits: the repository has no commit yet, so there is no HEAD to
	// branch from.
	ErrNoCommits = errors.New("repository has no commits")
	// ErrUnsafe: the repository configures executable clean, smudge or
	// process filters, textconv or external diff drivers, or merge
	// drivers, which a checkout or a status could run.
	ErrUnsafe = errors.New("repository configures executable git filters or diff drivers")
	// ErrInvalidKey: the key is empty, too long, or not made of ASCII
	// letters, digits, '.', '_' and '-' starting with a letter or digit.
	ErrInvalidKey = errors.New("invalid worktree key")
	// ErrNotFound: no finished worktree is registered for the key.
	ErrNotFound = errors.New("worktree not found")
	// ErrConflict: the key's path or branch is taken by something this
	// package did not leave behind, or that holds work (a non-empty
	// directory Git does not know, a branch that moved past its base, a
	// branch checked out elsewhere); nothing was changed.
	ErrConflict = errors.New("worktree path or branch already in use")
	// ErrDirty: the worktree has staged, unstaged or untracked (not ignored)
	// changes; nothing was removed.
	ErrDirty = errors.New("worktree has uncommitted changes")
)

// Options configures a Manager.
type Options struct {
	// Dir holds the worktrees, typically STATE_DIR/worktrees. Required. It
	// is created with mode 0700 when missing; an existing directory keeps
	// its mode.
	Dir string
	// Git runs Git. Nil means gitrepo.NewGit with Timeout DefaultGitTimeout.
	Git *gitrepo.Git
}

// Manager creates, finds, inspects and removes managed worktrees. It is safe
// for concurrent use: operations that change a repository's worktrees are
// serialized per repository. The zero value is not usable, use New.
type Manager struct {
	dir string
	git *gitrepo.Git

	mu    sync.Mutex
	locks map[string]chan struct{} // canonical root → 1-slot semaphore

	// started is closed when the startup prune (PruneAtStart) is over;
	// nil when there is none. begin begins it.
	started chan struct{}
	begin   func()
}

// Worktree is one managed worktree.
type Worktree struct {
	// Source is the absolute, symlink-free top level of the Project
	// repository the worktree belongs to.
	Source string
	// Key is the caller's key.
	Key string
	// Path is the absolute, symlink-free path of the worktree's top level.
	Path string
	// Branch is the short name of its branch, "devspace/<short>".
	Branch string
	// BaseCommit is the full ID of the commit the branch was created from,
	// or "" when its record (refs/devspace/base/<short>) was deleted.
	BaseCommit string
}

// New returns a Manager for opts, creating opts.Dir when missing.
//
// Errors: os.ErrInvalid (wrapped) when opts.Dir is empty; a filesystem error
// when Dir cannot be created or resolved.
func New(opts Options) (*Manager, error) {
	if opts.Dir == "" {
		return nil, fmt.Errorf("worktree: empty directory: %w", os.ErrInvalid)
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("worktree: create directory: %w", err)
	}
	dir, err := resolveDir(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("worktree: resolve directory: %w", err)
	}
	g := opts.Git
	if g == nil {
		g = gitrepo.NewGit(gitrepo.GitOptions{Timeout: DefaultGitTimeout})
	}
	return &Manager{dir: dir, git: g, locks: map[string]chan struct{}{}}, nil
}

// Eligible reports whether the Project root at rootPath can host managed
// worktrees: it is exactly the top level of a Git work tree (a linked
// worktree qualifies), HEAD names a commit, and the configuration defines no
// executable filter, diff or merge driver. It only reads the repository.
//
// Errors: ErrNotRepository, ErrNotTopLevel, ErrNoCommits, ErrUnsafe
// (wrapped); gitrepo.ErrGit (wrapped) when Git failed; the error of ctx; a
// filesystem error when rootPath cannot be resolved.
func (m *Manager) Eligible(ctx context.Context, rootPath string) error {
	if err := m.waitStart(ctx); err != nil {
		return err
	}
	return m.eligibleRoot(ctx, rootPath)
}

// eligibleRoot is Eligible without waiting for the startup prune.
func (m *Manager) eligibleRoot(ctx context.Context, rootPath string) error {
	src, err := m.openSource(rootPath)
	if err != nil {
		return err
	}
	_, err = m.eligible(ctx, src)
	return err
}

// eligible is Eligible for a verified source repository; it returns HEAD.
func (m *Manager) eligible(ctx context.Context, src *gitrepo.Repository) (head string, err error) {
	if err := m.check(ctx, src); err != nil {
		return "", err
	}
	head, err = m.git.Head(ctx, src)
	if err != nil {
		return "", fmt.Errorf("worktree: %w", err)
	}
	if head == "" {
		return "", fmt.Errorf("worktree: %w", ErrNoCommits)
	}
	if err := m.checkFilters(ctx, src); err != nil {
		return "", err
	}
	return head, nil
}

// checkFilters runs gitrepo's work tree content checks, mapping the filter
// check to ErrUnsafe (a submodule leading outside stays
// gitrepo.ErrRepositoryUnsafe).
func (m *Manager) checkFilters(ctx context.Context, repo *gitrepo.Repository) error {
	err := m.git.CheckContent(ctx, repo)
	if errors.Is(err, gitrepo.ErrUnsafeFilters) {
		return fmt.Errorf("worktree: %w", ErrUnsafe)
	}
	if err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	return nil
}

// Get returns the finished worktree registered for key.
//
// Errors: ErrInvalidKey; ErrNotFound (wrapped) when none is, including while
// Create is still making it; gitrepo.ErrGit (wrapped) when Git failed; the
// error of ctx; a filesystem error when rootPath cannot be resolved.
func (m *Manager) Get(ctx context.Context, rootPath, key string) (*Worktree, error) {
	if err := m.waitStart(ctx); err != nil {
		return nil, err
	}
	src, err := m.openKeyed(rootPath, key)
	if err != nil {
		return nil, err
	}
	return m.get(ctx, src, key)
}

// openKeyed checks key and opens the source repository at rootPath.
func (m *Manager) openKeyed(rootPath, key string) (*gitrepo.Repository, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	return m.openSource(rootPath)
}

func (m *Manager) get(ctx context.Context, src *gitrepo.Repository, key string) (*Worktree, error) {
	wt := m.layout(src.WorkTree, key)
	list, err := m.list(ctx, src)
	if err != nil {
		return nil, err
	}
	if e, ok := find(list, wt.Path); !ok || !finished(e) {
		return nil, fmt.Errorf("worktree: %w", ErrNotFound)
	}
	if wt.BaseCommit, err = m.base(ctx, src, wt.Branch); err != nil {
		return nil, err
	}
	return wt, nil
}

// Dirty reports whether wt has staged, unstaged or untracked changes;
// ignored files (.gitignore, info/exclude) do not count, nor do files whose
// timestamps changed but whose content did not. It only reads: three
// plumbing commands that never refresh or write the index, as in the review
// package, instead of `git status`:
//
//   - diff-index --cached --quiet HEAD: staged changes (index against
//     HEAD; no work tree content involved);
//   - diff-files --numstat: unstaged changes. Plumbing does not refresh the
//     index, so a file whose stat data changed is compared by content, and
//     --numstat lists only real differences (a mode change as 0/0), unlike
//     --raw or --quiet, which also report stat-only ones;
//   - ls-files --others --exclude-standard --directory
//     --no-empty-directory: untracked files, ignored ones left out, empty
//     directories too (`git worktree remove` does not count those either).
//
// Errors: ErrNotFound (wrapped) when wt.Path is no longer the top level of a
// worktree; ErrUnsafe (wrapped); gitrepo.ErrGit (wrapped) when Git failed; the
// error of ctx; os.ErrInvalid (wrapped) when wt is not one of this
// Manager's worktrees.
func (m *Manager) Dirty(ctx context.Context, wt *Worktree) (bool, error) {
	if err := m.waitStart(ctx); err != nil {
		return false, err
	}
	if err := m.owns(wt); err != nil {
		return false, err
	}
	src, err := m.openSource(wt.Source)
	if err != nil {
		return false, err
	}
	if m.repoDir(src.WorkTree) != filepath.Dir(wt.Path) {
		return false, fmt.Errorf("worktree: not a worktree of its source: %w", os.ErrInvalid)
	}
	return m.dirty(ctx, src, wt.Path)
}

func (m *Manager) dirty(ctx context.Context, src *gitrepo.Repository, path string) (bool, error) {
	repo, err := m.openWorktree(src, path)
	if errors.Is(err, ErrNotRepository) || errors.Is(err, ErrNotTopLevel) || errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("worktree: %w", ErrNotFound)
	}
	if err != nil {
		return false, err
	}
	if err := m.check(ctx, repo); err != nil {
		if errors.Is(err, ErrNotRepository) {
			return false, fmt.Errorf("worktree: %w", ErrNotFound)
		}
		return false, err
	}
	if err := m.checkFilters(ctx, repo); err != nil {
		return false, err
	}
	var exit *gitrepo.ExitError
	_, err = m.git.Run(ctx, repo, "diff-index", "--cached", "--quiet", "--no-ext-diff", "--no-textconv", "HEAD", "--")
	switch {
	case errors.As(err, &exit) && exit.Code == 1:
		return true, nil
	case err != nil:
		return false, fmt.Errorf("worktree: staged changes: %w", err)
	}
	out, err := m.git.Run(ctx, repo, "diff-files", "-z", "--numstat", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty", "--")
	switch {
	case errors.Is(err, gitrepo.ErrOutputTooLarge) || len(out) > 0 && err == nil:
		return true, nil
	case err != nil:
		return false, fmt.Errorf("worktree: unstaged changes: %w", err)
	}
	out, err = m.git.Run(ctx, repo, "ls-files", "-z", "--others", "--exclude-standard", "--directory", "--no-empty-directory", "--")
	switch {
	case errors.Is(err, gitrepo.ErrOutputTooLarge) || len(out) > 0 && err == nil:
		return true, nil
	case err != nil:
		return false, fmt.Errorf("worktree: untracked files: %w", err)
	}
	return false, nil
}

// Remove deletes a clean worktree, its branch and its base ref: `git worktree
// remove` without --force, then `git branch -D`. Commits made on the branch
// are no longer referenced afterwards (Git's reflog of HEAD in the source
// does not list them either); callers that want to keep them must merge or
// push first. Remove is the only operation that deletes a finished worktree.
//
// Errors: ErrDirty (wrapped) when the worktree has changes (Dirty), checked
// again by Git itself, and nothing is removed; ErrNotFound (wrapped) when no
// finished worktree is registered for wt.Key; ErrUnsafe (wrapped);
// gitrepo.ErrGit (wrapped) when Git failed or refused (a locked worktree, one
// with submodules); the error of ctx; os.ErrInvalid (wrapped) when wt is not
// one of this Manager's worktrees of rootPath.
func (m *Manager) Remove(ctx context.Context, rootPath string, wt *Worktree) error {
	if err := m.waitStart(ctx); err != nil {
		return err
	}
	if err := m.owns(wt); err != nil {
		return err
	}
	src, err := m.openSource(rootPath)
	if err != nil {
		return err
	}
	root := src.WorkTree
	if want := m.layout(root, wt.Key); want.Path != wt.Path {
		return fmt.Errorf("worktree: not a worktree of this root: %w", os.ErrInvalid)
	}
	unlock, err := m.lock(ctx, root)
	if err != nil {
		return err
	}
	defer unlock()

	cur, err := m.get(ctx, src, wt.Key)
	if err != nil {
		return err
	}
	dirty, err := m.dirty(ctx, src, cur.Path)
	if err != nil {
		return err
	}
	if dirty {
		return fmt.Errorf("worktree: %w", ErrDirty)
	}
	// Git checks again (with `git status`, filters already checked above),
	// which covers a write since the check.
	// Removing the directory itself needs its parent, which holds this
	// repository's other worktrees: a filter Git runs here (the check)
	// could write them and the source's worktrees/, not the state, keys,
	// other Projects, or the source's hooks and config (adminWrites).
	if _, err := m.git.RunWriting(ctx, src, adminWrites(src, cur.Path), writeArgs("worktree", "remove", cur.Path)...); err != nil {
		var exit *gitrepo.ExitError
		if errors.As(err, &exit) && strings.Contains(string(exit.Stderr), "contains modified or untracked files") {
			return fmt.Errorf("worktree: %w", ErrDirty)
		}
		return fmt.Errorf("worktree: remove worktree: %w", err)
	}
	branchRef := "refs/heads/" + cur.Branch
	id, err := m.resolveRef(ctx, src, branchRef)
	if err != nil {
		return err
	}
	if id != "" {
		// branch -D, not update-ref: it refuses a branch checked out in
		// another worktree.
		if _, err := m.git.RunWriting(ctx, src, refDeleteWrites(src), writeArgs("branch", "-D", cur.Branch)...); err != nil {
			return fmt.Errorf("worktree: delete branch: %w", err)
		}
	}
	if err := m.updateRef(ctx, src, baseRefPrefix+shortOf(cur.Branch), "", ""); err != nil {
		return err
	}
	return nil
}

// owns checks that wt looks like one of this Manager's worktrees.
func (m *Manager) owns(wt *Worktree) error {
	if wt == nil || checkKey(wt.Key) != nil || !filepath.IsAbs(wt.Path) || !filepath.IsAbs(wt.Source) ||
		filepath.Base(wt.Path) != wt.Key || filepath.Dir(filepath.Dir(wt.Path)) != m.dir {
		return fmt.Errorf("worktree: not a managed worktree: %w", os.ErrInvalid)
	}
	return nil
}

// layout returns the Worktree key would have for root, without BaseCommit.
func (m *Manager) layout(root, key string) *Worktree {
	return &Worktree{
		Source: root,
		Key:    key,
		Path:   filepath.Join(m.repoDir(root), key),
		Branch: BranchPrefix + hash(key)[:10],
	}
}

// repoDir is the directory holding root's worktrees.
func (m *Manager) repoDir(root string) string {
	return filepath.Join(m.dir, hash(root)[:16])
}

// base returns the commit refs/devspace/base/<short> names, or "".
func (m *Manager) base(ctx context.Context, src *gitrepo.Repository, branch string) (string, error) {
	return m.resolveRef(ctx, src, baseRefPrefix+shortOf(branch))
}

// resolveRef returns the object ID ref names, or "" when it does not exist.
func (m *Manager) resolveRef(ctx context.Context, src *gitrepo.Repository, ref string) (string, error) {
	out, err := m.git.Run(ctx, src, "rev-parse", "-q", "--verify", ref)
	var exit *gitrepo.ExitError
	if errors.As(err, &exit) && exit.Code == 1 {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("worktree: resolve %s: %w", ref, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// updateRef sets ref to newID, or deletes it when newID is "", if it
// currently is oldID ("" meaning: must not exist when creating, any value
// when deleting).
func (m *Manager) updateRef(ctx context.Context, src *gitrepo.Repository, ref, newID, oldID string) error {
	args, writes := writeArgs("update-ref", "-m", "devspace: create worktree", ref, newID, oldID), refWrites(src)
	if newID == "" {
		args, writes = writeArgs("update-ref", "-m", "devspace: remove worktree", "-d", ref), refDeleteWrites(src)
		if oldID != "" {
			args = append(args, oldID)
		}
	}
	if _, err := m.git.RunWriting(ctx, src, writes, args...); err != nil {
		return fmt.Errorf("worktree: update %s: %w", ref, err)
	}
	return nil
}

// openSource checks the metadata of the Project repository at rootPath,
// which must stay inside rootPath (gitrepo.OpenRepository), with this
// package's errors.
func (m *Manager) openSource(rootPath string) (*gitrepo.Repository, error) {
	return m.open(rootPath)
}

// openWorktree checks the metadata of the managed worktree at path of the
// source repository src: it may point inside the worktree or the source
// Project root, nowhere else.
func (m *Manager) openWorktree(src *gitrepo.Repository, path string) (*gitrepo.Repository, error) {
	return m.open(path, src.WorkTree)
}

func (m *Manager) open(dir string, allowed ...string) (*gitrepo.Repository, error) {
	repo, err := gitrepo.OpenRepository(dir, allowed...)
	switch {
	case err == nil:
		return repo, nil
	case errors.Is(err, gitrepo.ErrNotRepository):
		return nil, fmt.Errorf("worktree: %w", ErrNotRepository)
	case errors.Is(err, gitrepo.ErrNotTopLevel):
		return nil, fmt.Errorf("worktree: %w", ErrNotTopLevel)
	}
	return nil, fmt.Errorf("worktree: %w", err)
}

// check runs Git's own repository check in repo, with this package's
// errors.
func (m *Manager) check(ctx context.Context, repo *gitrepo.Repository) error {
	_, err := m.git.Check(ctx, repo)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, gitrepo.ErrNotRepository):
		return fmt.Errorf("worktree: %w", ErrNotRepository)
	}
	return fmt.Errorf("worktree: %w", err)
}

// lock serializes changes to root's worktrees.
func (m *Manager) lock(ctx context.Context, root string) (unlock func(), err error) {
	m.mu.Lock()
	sem, ok := m.locks[root]
	if !ok {
		sem = make(chan struct{}, 1)
		m.locks[root] = sem
	}
	m.mu.Unlock()
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("worktree: wait for repository: %w", ctx.Err())
	}
}

// writeArgs prefixes a writing command with a fixed identity, so that the
// reflog entries it writes do not depend on the server's user (system and
// global configuration are off).
func writeArgs(args ...string) []string {
	return append([]string{"-c", "user.name=DevSpace", "-c", "user.email=devspace@localhost"}, args...)
}

// finished reports whether e is a worktree Create completed and that still
// has its directory.
func finished(e entry) bool {
	return !e.halfCreated() && !e.prunable && !e.bare
}

// shortOf returns the <short> of a "devspace/<short>" branch.
func shortOf(branch string) string {
	return strings.TrimPrefix(branch, BranchPrefix)
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// checkKey returns ErrInvalidKey unless key is a safe file name.
func checkKey(key string) error {
	if key == "" || len(key) > maxKeyLen {
		return fmt.Errorf("worktree: key of %d bytes: %w", len(key), ErrInvalidKey)
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return fmt.Errorf("worktree: key %q: %w", key, ErrInvalidKey)
		}
	}
	return nil
}

// resolveDir returns the absolute, symlink-free form of an existing
// directory.
func resolveDir(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s: not a directory: %w", real, os.ErrInvalid)
	}
	return real, nil
}

// isEmptyDir reports whether p is a directory with no entries.
func isEmptyDir(p string) bool {
	// Lstat first: opening a FIFO would block, and a symlink is not ours.
	if fi, err := os.Lstat(p); err != nil || !fi.IsDir() {
		return false
	}
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.IsDir() {
		return false
	}
	_, err = f.Readdirnames(1)
	return err == io.EOF
}
