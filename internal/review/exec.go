package review

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// DefaultMaxOutput is the stdout cap of one Git.Run when GitOptions.MaxOutput
// is zero.
const DefaultMaxOutput = listCap

// ErrOutputTooLarge: Git printed more than GitOptions.MaxOutput bytes on
// stdout and was killed. Git.Run owns it and wraps it together with ErrGit.
var ErrOutputTooLarge = errors.New("git output over the limit")

// GitOptions configures a Git. The zero value means "all defaults".
type GitOptions struct {
	// Git is the git executable: a path, or a name looked up in the server's
	// PATH. Empty means "git".
	Git string
	// Timeout bounds one Run (or one check). Zero means DefaultTimeout.
	Timeout time.Duration
	// MaxOutput caps the stdout Run keeps; beyond it Git is killed and Run
	// fails with ErrOutputTooLarge. Zero means DefaultMaxOutput.
	MaxOutput int64
	// Confine is Options.Confine.
	Confine Confiner
}

// Git runs Git in a Project repository (or a worktree of one) exactly the
// way Changes does: environment built from scratch with no inherited GIT_*
// variable, no system or global configuration, fsmonitor, untracked cache,
// hooks, external diff and every transport off, safe.directory set to the
// canonical directory, stdin from the null device, its own process group
// killed as a whole on timeout, bounded output. See the package doc for why.
//
// Unlike Changes, Run makes no read-only promise: the caller picks the
// subcommand, and commands such as `worktree add` write to the repository.
// Callers that let Git compare work tree content (diff-files, status, or a
// command running them such as `worktree remove` without --force) must call
// CheckContent first, as Changes does.
//
// A Git holds no mutable state and is safe for concurrent use; the zero value
// is not usable, use NewGit.
type Git struct {
	r         *Reviewer
	maxOutput int64
}

// NewGit returns a Git with opts' zero fields replaced by the defaults. It
// captures the server's PATH once, for Git to find its helpers.
func NewGit(opts GitOptions) *Git {
	g := &Git{r: New(Options{Git: opts.Git, Timeout: opts.Timeout, Confine: opts.Confine}), maxOutput: opts.MaxOutput}
	if g.maxOutput <= 0 {
		g.maxOutput = DefaultMaxOutput
	}
	return g
}

// ExitError reports that Git ran and exited with a non-zero status. It
// matches ErrGit with errors.Is. Stderr may name host paths: log it, never
// show it to a client.
type ExitError struct {
	// Command is the Git subcommand (the first argument that is not a
	// global option).
	Command string
	// Code is the exit status, or -1 when Git died from a signal.
	Code int
	// Stderr is the start (at most 4 KiB) of what Git printed on stderr.
	Stderr []byte
}

// Error returns the subcommand, the status and the first line of stderr.
func (e *ExitError) Error() string {
	msg, _, _ := strings.Cut(strings.TrimSpace(string(e.Stderr)), "\n")
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return fmt.Sprintf("review: git %s exited with status %d: %s", e.Command, e.Code, msg)
}

// Unwrap returns ErrGit.
func (e *ExitError) Unwrap() error { return ErrGit }

// Run runs `git <hardening options> args...` in repo, which
// OpenRepository checked, and returns its stdout. args may start with
// global options such as "-c", "key=value"; they come after the hardening
// ones and so override them.
//
// Errors: *ExitError for a non-zero exit (stdout is returned too); ErrGit
// (wrapped) when Git could not be started; ErrOutputTooLarge and ErrGit
// (wrapped) when stdout passed its cap (the part kept is returned); the error
// of ctx, also context.DeadlineExceeded when GitOptions.Timeout expires.
//
// Confined (GitOptions.Confine), Git may write nothing: Run is for the
// invocations that only read (rev-parse, config, worktree list, the
// plumbing diffs, which refresh no index); RunWriting is for the others.
func (g *Git) Run(ctx context.Context, repo *Repository, args ...string) ([]byte, error) {
	return g.RunWriting(ctx, repo, nil, args...)
}

// RunWriting is Run for an invocation that writes: confined, Git may write
// beneath dirs and nowhere else, the repository's metadata included. dirs
// are absolute, canonical directories, opened without following a symlink
// (one that is missing or a symlink allows nothing). A directory allows its
// whole subtree, so name the narrowest ones the invocation needs (.git/refs
// rather than .git, which holds hooks/ and config, whose programs the
// owner's Git runs).
func (g *Git) RunWriting(ctx context.Context, repo *Repository, dirs []string, args ...string) ([]byte, error) {
	if len(args) == 0 || repo == nil {
		return nil, fmt.Errorf("review: git without arguments or repository: %w", os.ErrInvalid)
	}
	ctx, cancel := context.WithTimeout(ctx, g.r.timeout)
	defer cancel()
	runner := &gitRunner{r: g.r, repo: repo, writable: dirs}
	res, err := runner.run(ctx, g.maxOutput, args...)
	if err != nil {
		return nil, err
	}
	sub := subcommand(args)
	if res.truncated {
		return res.stdout, fmt.Errorf("review: git %s: stdout over %d bytes: %w: %w", sub, g.maxOutput, ErrOutputTooLarge, ErrGit)
	}
	if res.exitCode != 0 {
		return res.stdout, &ExitError{Command: sub, Code: res.exitCode, Stderr: res.stderr}
	}
	return res.stdout, nil
}

// Check returns nil when Git accepts repo as a repository with a work tree,
// with the same check Changes runs after OpenRepository.
//
// Errors: ErrNotRepository and ErrGit (wrapped); the error of ctx.
func (g *Git) Check(ctx context.Context, repo *Repository) error {
	return g.check(ctx, repo, func(ctx context.Context, r *gitRunner) error {
		_, err := r.checkRepository(ctx)
		return err
	})
}

// CheckContent runs the checks due before Git compares work tree content
// in repo (diff-files, status, a checkout): it returns ErrUnsafeFilters
// (wrapped) when the configuration Git uses in repo, in repo's own context
// (HEAD, repository directory), defines an executable filter, diff or merge
// driver, and ErrRepositoryUnsafe (wrapped) when a checked-out submodule's
// metadata leads outside the directories repo was opened with (see the
// package doc). Git must not then compare work tree content there.
//
// Errors: ErrUnsafeFilters, ErrRepositoryUnsafe and ErrGit (wrapped); the
// error of ctx.
func (g *Git) CheckContent(ctx context.Context, repo *Repository) error {
	return g.check(ctx, repo, func(ctx context.Context, r *gitRunner) error {
		return r.checkContent(ctx)
	})
}

// Head returns the full ID of the commit HEAD names in repo, or "" when HEAD
// is unborn (no commit yet).
//
// Errors: ErrGit (wrapped); the error of ctx.
func (g *Git) Head(ctx context.Context, repo *Repository) (string, error) {
	var head string
	err := g.check(ctx, repo, func(ctx context.Context, r *gitRunner) error {
		var err error
		head, err = r.head(ctx)
		return err
	})
	return head, err
}

// check runs fn with a runner in repo under the timeout.
func (g *Git) check(ctx context.Context, repo *Repository, fn func(context.Context, *gitRunner) error) error {
	if repo == nil {
		return fmt.Errorf("review: no repository: %w", os.ErrInvalid)
	}
	ctx, cancel := context.WithTimeout(ctx, g.r.timeout)
	defer cancel()
	return fn(ctx, &gitRunner{r: g.r, repo: repo})
}

// subcommand returns the first argument that is neither a global option nor
// the value of a "-c" or "-C" option.
func subcommand(args []string) string {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-c" || a == "-C":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return args[0]
}

// ChangesSince is Changes with the staged side diffed against base, a full
// commit ID, instead of HEAD: for a managed worktree whose base is its branch
// point, the review then covers what was committed on the branch as well as
// what is staged, unstaged or untracked. Committed and staged changes are
// both reported as Staged. Changes.Head is still HEAD.
//
// source is the Project root the worktree belongs to: the worktree's
// metadata may point inside rootPath or source (its .git file names
// source's .git/worktrees/<id>), nowhere else.
//
// Errors: as Changes; ErrGit (wrapped) also when base is not a full
// lowercase hexadecimal commit ID that names a commit in the repository.
func (r *Reviewer) ChangesSince(ctx context.Context, rootPath, base, source string) (_ *Changes, err error) {
	if !isHex(base) || len(base) > 64 {
		return nil, fmt.Errorf("review: base %q is not a full commit ID: %w", base, ErrGit)
	}
	defer func(parent context.Context) { err = timedOut(parent, err) }(ctx)
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()

	repo, err := OpenRepository(rootPath, source)
	if err != nil {
		return nil, err
	}
	g := &gitRunner{r: r, repo: repo}
	if _, err := g.checkRepository(ctx); err != nil {
		return nil, err
	}
	head, err := g.head(ctx)
	if err != nil {
		return nil, err
	}
	res, err := g.run(ctx, 1024, "rev-parse", "-q", "--verify", base+"^{commit}")
	if err != nil {
		return nil, err
	}
	if res.exitCode != 0 || !bytes.Equal(bytes.TrimSpace(res.stdout), []byte(base)) {
		return nil, fmt.Errorf("review: base %s is not a commit of the repository: %w", base, ErrGit)
	}
	if err := g.checkContent(ctx); err != nil {
		return nil, err
	}

	// The rest mirrors Changes with base in place of HEAD.
	b := &builder{r: r, files: map[string]*FileChange{}}
	if err := b.side(ctx, g, true, "diff-index", "--cached", "-M", base); err != nil {
		return nil, err
	}
	if err := b.side(ctx, g, false, "diff-files", "--ignore-submodules=dirty"); err != nil {
		return nil, err
	}
	if err := b.untracked(ctx, g, repo.WorkTree); err != nil {
		return nil, err
	}
	files := b.list()
	c := &Changes{Files: files, Diff: b.diff.String(), Truncated: b.truncated}
	if head != "" {
		c.Head = head[:min(12, len(head))]
	}
	c.Revision = revision(c)
	return c, nil
}
