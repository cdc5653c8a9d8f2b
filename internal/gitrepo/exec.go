package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// Defaults used when the corresponding GitOptions field is zero.
const (
	defaultTimeout   = 20 * time.Second
	defaultMaxOutput = listCap
)

// ErrOutputTooLarge: Git printed more than GitOptions.MaxOutput bytes on
// stdout and was killed. Git.Run owns it and wraps it together with ErrGit.
var ErrOutputTooLarge = errors.New("git output over the limit")

// GitOptions configures a Git. The zero value means "all defaults".
type GitOptions struct {
	// Git is the git executable: a path, or a name looked up in the server's
	// PATH. Empty means "git".
	Git string
	// Timeout bounds one Run (or one check). Zero means 20 seconds.
	Timeout time.Duration
	// MaxOutput caps the stdout Run keeps; beyond it Git is killed and Run
	// fails with ErrOutputTooLarge. Zero means 8 MiB.
	MaxOutput int64
	// Confine, when set, makes each Git invocation run in a kernel
	// sandbox (process.Manager.Confine): p lists the repository's
	// directories, read-only, and for Git.RunWriting the directories the
	// invocation writes.
	// Whatever the repository makes Git run then has no more access than
	// that. Nil runs Git unconfined. An error refuses the invocation.
	Confine Confiner
}

// Git runs Git in a Project repository (or a worktree of one): environment
// built from scratch with no inherited GIT_* variable, no system or global
// configuration, fsmonitor, untracked cache, hooks, external diff and every
// transport off, safe.directory set to the canonical directory, stdin from
// the null device, its own process group killed as a whole on timeout,
// bounded output. See the package doc for why.
//
// Run makes no read-only promise: the caller picks the subcommand, and
// commands such as `worktree add` write to the repository. Callers that
// let Git compare work tree content (diff-files, status, or a command
// running them such as `worktree remove` without --force) must call
// CheckContent first.
//
// A Git holds no mutable state and is safe for concurrent use; the zero value
// is not usable, use NewGit.
type Git struct {
	program   string
	timeout   time.Duration
	maxOutput int64
	confine   Confiner
	pathEnv   string
}

// NewGit returns a Git with opts' zero fields replaced by the defaults. It
// captures the server's PATH once, for Git to find its helpers.
func NewGit(opts GitOptions) *Git {
	g := &Git{
		program:   opts.Git,
		timeout:   opts.Timeout,
		maxOutput: opts.MaxOutput,
		confine:   opts.Confine,
		pathEnv:   os.Getenv("PATH"),
	}
	if g.program == "" {
		g.program = "git"
	}
	if g.timeout <= 0 {
		g.timeout = defaultTimeout
	}
	if g.maxOutput <= 0 {
		g.maxOutput = defaultMaxOutput
	}
	if g.pathEnv == "" {
		g.pathEnv = "/usr/local/bin:/usr/bin:/bin"
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
	return fmt.Sprintf("gitrepo: git %s exited with status %d: %s", e.Command, e.Code, msg)
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
	return g.run(ctx, repo, dirs, g.maxOutput, args...)
}

// RunCapped is Run with stdout capped at limit bytes instead of
// GitOptions.MaxOutput, for a caller that can use the start of a larger
// output: past limit, Git is killed and RunCapped returns the first limit
// bytes with ErrOutputTooLarge and ErrGit (wrapped). Its other errors are
// Run's.
func (g *Git) RunCapped(ctx context.Context, repo *Repository, limit int64, args ...string) ([]byte, error) {
	return g.run(ctx, repo, nil, limit, args...)
}

// run runs one invocation for Run, RunWriting and RunCapped.
func (g *Git) run(ctx context.Context, repo *Repository, dirs []string, limit int64, args ...string) ([]byte, error) {
	if len(args) == 0 || repo == nil {
		return nil, fmt.Errorf("gitrepo: git without arguments or repository: %w", os.ErrInvalid)
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	runner := &gitRunner{git: g, repo: repo, writable: dirs}
	res, err := runner.run(ctx, limit, args...)
	if err != nil {
		return nil, err
	}
	sub := subcommand(args)
	if res.truncated {
		return res.stdout, fmt.Errorf("gitrepo: git %s: stdout over %d bytes: %w: %w", sub, limit, ErrOutputTooLarge, ErrGit)
	}
	if res.exitCode != 0 {
		return res.stdout, &ExitError{Command: sub, Code: res.exitCode, Stderr: res.stderr}
	}
	return res.stdout, nil
}

// Check returns repo's object format, "sha1" or "sha256", once Git accepts
// repo as a repository with a work tree (the check callers run after
// OpenRepository).
//
// Errors: ErrNotRepository and ErrGit (wrapped); the error of ctx.
func (g *Git) Check(ctx context.Context, repo *Repository) (format string, err error) {
	err = g.check(ctx, repo, func(ctx context.Context, r *gitRunner) error {
		var err error
		format, err = r.checkRepository(ctx)
		return err
	})
	return format, err
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
		return fmt.Errorf("gitrepo: no repository: %w", os.ErrInvalid)
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	return fn(ctx, &gitRunner{git: g, repo: repo})
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
