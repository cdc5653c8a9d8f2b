package process

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Limits and defaults of a Spec (docs/design.md §9).
const (
	// MaxTimeout is the longest a command may run; it is also the timeout
	// of a Spec that sets none.
	MaxTimeout = 6 * time.Hour
	// DefaultMaxOutputBytes is the spool cap of a Spec that sets none.
	DefaultMaxOutputBytes = 64 << 20
)

// Spec describes one command. Exactly one mode is set: direct (Program and
// Args) or shell (Shell and Command).
type Spec struct {
	// Program is run directly with Args, without a shell. A name without a
	// slash is looked up in the PATH of Env (relative PATH entries against
	// Dir); a relative path is taken against Dir.
	Program string
	Args    []string

	// Shell runs Command with `/bin/bash -c` (`/bin/sh -c` where bash is
	// missing): not a login shell, so no profile is read and startup stays
	// fast and predictable.
	Shell   bool
	Command string

	// Dir is the absolute host path of the working directory. The caller
	// has already checked that it is contained in the Project.
	Dir string

	// Root is the absolute host path of the Project (or managed worktree)
	// root: the only hierarchy a confined command may write besides its
	// scratch directory. Empty means Dir.
	Root string

	// Tenant is whose command this is (the server passes the grant): a
	// tenant's commands together get at most its share of the pids and
	// memory commands may use (LimitsState) and of the output spool
	// (Options.SpoolShareBytes), and, under a cgroup, an equal share of
	// the CPU with every other tenant's. Empty means the group's own.
	Tenant string

	// ReadOnly makes Root and the tool home read-only for a confined
	// command.
	ReadOnly bool

	// Tools keys the command's tool home (the server passes the
	// Project's fingerprint): ToolHome(SandboxOptions.ToolsDir, Tools)
	// is its HOME (unless ReadOnly), holds its GOPATH, CARGO_HOME, npm
	// prefix and caches, and its bin directories come first on PATH
	// (docs/design.md §7). Empty, or no ToolsDir: none.
	Tools string

	// ReadPaths are further absolute, canonical hierarchies this command
	// may read (never write) when confined: a managed worktree's source
	// repository directory, so that Git works read-only in the worktree.
	// Each is opened without following symlinks (a command of the source
	// Project could replace it with one to anywhere): one that is a
	// symlink is not readable at all.
	ReadPaths []string

	// Env is the command's full environment (BaseEnv merged with the
	// caller's validated variables). Nil means BaseEnv(os.Environ()).
	Env []string

	// TTY gives the command a pseudo-terminal (120×40, its own session, the
	// pty as controlling terminal) instead of pipes. Output then includes
	// the echo of the input.
	TTY bool

	// Stdin is written to the command first (at most MaxStdinBytes);
	// CloseStdin then closes stdin (under a pty: sends one Ctrl-D). Without
	// a pty, CloseStdin with no Stdin gives the command /dev/null.
	Stdin      []byte
	CloseStdin bool

	// Timeout bounds the whole tree's lifetime; when it elapses the tree is
	// killed (SIGTERM, grace, SIGKILL) with reason "timeout". Zero means
	// MaxTimeout; more than MaxTimeout is invalid.
	Timeout time.Duration

	// MaxOutputBytes caps the spool of this process; zero means
	// DefaultMaxOutputBytes. Output beyond it is counted and dropped (the
	// last 64 KiB stay available to Tail) and State.Truncated is set.
	MaxOutputBytes int64

	// KillOnOutputLimit kills the tree (reason "output_limit") as soon as
	// output is dropped, instead of letting the command run on.
	KillOnOutputLimit bool
}

// launch is a validated, resolved Spec.
type launch struct {
	path      string
	argv      []string
	dir       string
	env       []string
	tty       bool
	stdin     []byte
	closeIn   bool
	timeout   time.Duration
	maxOutput int64
	killOnCap bool
	preview   string // for logs, only when Options.LogCommands
	root      string
	readOnly  bool
	readPaths []string
	tenant    string
	tools     string // the tool home's path; "" when none
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidSpec}, args...)...)
}

// resolve validates spec and finds the program. Errors wrap ErrInvalidSpec
// (malformed) or ErrSpawn (well formed but cannot run: nothing started).
func resolve(spec Spec) (launch, error) {
	l := launch{
		dir: spec.Dir, env: spec.Env, tty: spec.TTY, stdin: spec.Stdin, closeIn: spec.CloseStdin,
		timeout: spec.Timeout, maxOutput: spec.MaxOutputBytes, killOnCap: spec.KillOnOutputLimit,
		root: spec.Root, readOnly: spec.ReadOnly, readPaths: spec.ReadPaths, tenant: spec.Tenant,
	}
	switch {
	case spec.Shell && (spec.Program != "" || len(spec.Args) > 0):
		return l, invalid("shell mode takes Command only")
	case spec.Shell && spec.Command == "":
		return l, invalid("shell mode needs a Command")
	case !spec.Shell && spec.Command != "":
		return l, invalid("Command needs shell mode")
	case !spec.Shell && spec.Program == "":
		return l, invalid("direct mode needs a Program")
	}
	for _, s := range append([]string{spec.Program, spec.Command, spec.Dir, spec.Root}, spec.Args...) {
		if strings.IndexByte(s, 0) >= 0 {
			return l, invalid("NUL byte in program, arguments, command or directory")
		}
	}
	for _, kv := range spec.Env {
		if strings.IndexByte(kv, 0) >= 0 || !strings.Contains(kv, "=") {
			return l, invalid("malformed environment entry")
		}
	}
	if !filepath.IsAbs(spec.Dir) {
		return l, invalid("working directory must be an absolute path")
	}
	if l.root == "" {
		l.root = spec.Dir
	}
	if !filepath.IsAbs(l.root) {
		return l, invalid("root must be an absolute path")
	}
	if spec.Timeout < 0 || spec.Timeout > MaxTimeout {
		return l, invalid("timeout must be between 0 and %s", MaxTimeout)
	}
	if l.timeout == 0 {
		l.timeout = MaxTimeout
	}
	if spec.MaxOutputBytes < 0 {
		return l, invalid("negative output cap")
	}
	if l.maxOutput == 0 {
		l.maxOutput = DefaultMaxOutputBytes
	}
	if len(spec.Stdin) > MaxStdinBytes {
		return l, invalid("stdin exceeds %d bytes", MaxStdinBytes)
	}
	if l.env == nil {
		l.env = BaseEnv(os.Environ())
	}
	if fi, err := os.Stat(spec.Dir); err != nil || !fi.IsDir() {
		return l, fmt.Errorf("%w: the working directory does not exist", ErrSpawn)
	}
	if spec.Shell {
		l.path = "/bin/bash"
		if !isExecutable(l.path) {
			l.path = "/bin/sh"
		}
		l.argv = []string{filepath.Base(l.path), "-c", spec.Command}
		l.preview = spec.Command
		return l, nil
	}
	path, err := lookPath(spec.Program, envValue(l.env, "PATH"), spec.Dir)
	if err != nil {
		return l, err
	}
	l.path = path
	l.argv = append([]string{spec.Program}, spec.Args...)
	l.preview = strings.Join(l.argv, " ")
	return l, nil
}

// lookPath finds program the way a shell would, but against the command's
// PATH and working directory rather than the server's.
func lookPath(program, pathEnv, dir string) (string, error) {
	if strings.Contains(program, "/") {
		p := program
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if !isExecutable(p) {
			return "", fmt.Errorf("%w: the program does not exist or is not executable", ErrSpawn)
		}
		return p, nil
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		if p := filepath.Join(d, program); isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: executable file not found in PATH", ErrSpawn)
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}
