package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/devspace-dev/devspace/internal/sandbox"
)

// listCap bounds the output of the invocations this package's checks run
// (rev-parse, the configuration listing, check-ignore), and by default
// Run's.
const listCap = 8 << 20

// stderrCap bounds the stderr kept from one Git invocation.
const stderrCap = 4096

// waitDelay bounds how long Wait waits for output pipes after the process
// group was killed.
const waitDelay = 2 * time.Second

// transports lists Git's built-in transports. Each gets
// protocol.<name>.allow=never on the command line, which wins over the
// repository's own per-protocol settings; protocol.allow=never covers the
// rest. Nothing here needs the network, and a lazy fetch in a partial clone
// must not reach one.
var transports = [...]string{"file", "git", "ssh", "http", "https", "ext"}

// gitRunner runs hardened Git invocations in one verified repository. It
// is the one place that builds a DevSpace Git command line and environment;
// every method of Git (and through them the review and worktree packages)
// uses it.
type gitRunner struct {
	git  *Git
	repo *Repository
	// writable are the directories a confined Git may write
	// (Git.RunWriting); nil for the read-only invocations.
	writable []string
}

// result is what one invocation produced.
type result struct {
	stdout    []byte
	stderr    []byte
	exitCode  int
	truncated bool // stdout passed its cap; the process was killed
}

// env is the complete environment of every Git invocation: nothing is
// inherited but PATH, and the repository's locations are the ones
// OpenRepository checked, so Git looks up neither .git nor commondir again.
func (g *gitRunner) env() []string {
	return []string{
		"PATH=" + g.git.pathEnv,
		"HOME=" + os.DevNull,
		"XDG_CONFIG_HOME=" + os.DevNull,
		"LANG=C",
		"LC_ALL=C",
		"GIT_DIR=" + g.repo.GitDir,
		"GIT_COMMON_DIR=" + g.repo.CommonDir,
		"GIT_WORK_TREE=" + g.repo.WorkTree,
		"GIT_CEILING_DIRECTORIES=" + filepath.Dir(g.repo.WorkTree),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_SYSTEM=" + os.DevNull,
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_NO_LAZY_FETCH=1",
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_PAGER=cat",
		"PAGER=cat",
		"GIT_EDITOR=:",
		"GIT_ASKPASS=",
		"SSH_ASKPASS=",
	}
}

// hardening is the configuration every invocation passes on the command
// line, where it wins over the repository's: nothing the repository
// configures as a program runs (hooks, fsmonitor, pager, external diff,
// editor, ssh, credential helpers, automatic gc or maintenance), no lock is
// taken only to refresh, no transport is allowed, submodules are not
// recursed into.
var hardening = []string{
	"core.fsmonitor=false",
	"core.untrackedCache=false",
	"core.hooksPath=" + os.DevNull,
	"core.pager=cat",
	"core.editor=:",
	"core.sshCommand=false",
	"core.askPass=",
	"core.bare=false",
	"credential.helper=",
	"diff.external=",
	"core.quotePath=false",
	"gc.auto=0",
	"maintenance.auto=false",
	"log.showSignature=false",
	"submodule.recurse=false",
	"protocol.allow=never",
}

// args prefixes sub with the global options of every invocation.
func (g *gitRunner) args(sub []string) []string {
	a := []string{"--no-pager", "--no-optional-locks", "--no-replace-objects"}
	if len(sub) == 0 || sub[0] != "check-ignore" {
		// check-ignore refuses literal pathspecs; checkNested passes it
		// every path as "./<path>", which no pathspec magic matches.
		a = append(a, "--literal-pathspecs")
	}
	for _, kv := range hardening {
		a = append(a, "-c", kv)
	}
	for _, t := range transports {
		a = append(a, "-c", "protocol."+t+".allow=never")
	}
	for _, d := range []string{g.repo.WorkTree, g.repo.GitDir, g.repo.CommonDir} {
		a = append(a, "-c", "safe.directory="+d)
	}
	return append(a, sub...)
}

// run runs git with args in the work tree, keeping at most limit bytes of
// stdout. It returns an error only when Git could not be started or ctx
// ended; a non-zero exit is reported in the result.
func (g *gitRunner) run(ctx context.Context, limit int64, args ...string) (result, error) {
	return g.runInput(ctx, limit, nil, args...)
}

// runInput is run with input on stdin (the null device when nil).
func (g *gitRunner) runInput(ctx context.Context, limit int64, input []byte, args ...string) (result, error) {
	runCtx, kill := context.WithCancel(ctx)
	defer kill()
	cmd := exec.CommandContext(runCtx, g.git.program, g.args(args)...)
	cmd.Dir = g.repo.WorkTree
	cmd.Env = g.env()
	if input != nil {
		cmd.Stdin = bytes.NewReader(input)
	}
	stdout := &capWriter{limit: limit, onFull: kill}
	stderr := &capWriter{limit: stderrCap}
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	setProcessGroup(cmd)
	cmd.WaitDelay = waitDelay
	if g.git.confine != nil {
		// The repository's directories (OpenRepository checked that
		// everything Git reads lies beneath them), read-only unless the
		// invocation writes.
		p := sandbox.Policy{ReadExec: g.repo.allowed, ReadWrite: g.writable}
		if err := g.git.confine(cmd, p); err != nil {
			return result{}, fmt.Errorf("gitrepo: confine git %s: %w: %w", args[0], ErrGit, err)
		}
	}

	err := cmd.Run()
	res := result{stdout: stdout.buf, stderr: stderr.buf, truncated: stdout.full}
	if ctx.Err() != nil {
		return res, fmt.Errorf("gitrepo: git %s: %w", args[0], ctx.Err())
	}
	if err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			if res.truncated {
				// Killed for its output (WaitDelay may report the pipes).
				res.exitCode = -1
				return res, nil
			}
			return res, fmt.Errorf("gitrepo: run git %s: %w: %w", args[0], ErrGit, err)
		}
		res.exitCode = exit.ExitCode()
	}
	return res, nil
}

// failed describes a non-zero exit for logs.
func (g *gitRunner) failed(sub string, res result) error {
	msg, _, _ := strings.Cut(strings.TrimSpace(string(res.stderr)), "\n")
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return fmt.Errorf("gitrepo: git %s exited with status %d: %s: %w", sub, res.exitCode, msg, ErrGit)
}

// checkRepository returns the repository's object format after making sure
// Git accepts the verified locations as a repository with a work tree.
func (g *gitRunner) checkRepository(ctx context.Context) (string, error) {
	res, err := g.run(ctx, listCap, "rev-parse", "--show-object-format", "--is-inside-work-tree")
	if err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimSuffix(string(res.stdout), "\n"), "\n")
	if res.exitCode != 0 {
		if bytes.Contains(res.stderr, []byte("not a git repository")) {
			return "", fmt.Errorf("gitrepo: %w", ErrNotRepository)
		}
		return "", g.failed("rev-parse", res)
	}
	if len(lines) != 2 || lines[1] != "true" || (lines[0] != "sha1" && lines[0] != "sha256") {
		return "", fmt.Errorf("gitrepo: unexpected git rev-parse output: %w", ErrGit)
	}
	return lines[0], nil
}

// head returns the full HEAD commit ID, or "" when HEAD is unborn.
func (g *gitRunner) head(ctx context.Context) (string, error) {
	res, err := g.run(ctx, 1024, "rev-parse", "-q", "--verify", "HEAD^{commit}")
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(res.stdout))
	switch {
	case res.exitCode == 1 && id == "":
		return "", nil
	case res.exitCode != 0:
		return "", g.failed("rev-parse", res)
	case !IsObjectID(id):
		return "", fmt.Errorf("gitrepo: unexpected HEAD %q: %w", id, ErrGit)
	}
	return id, nil
}

// IsObjectID reports whether s has the form of a full object ID as Git
// prints one: at least 40 lowercase hexadecimal digits (a SHA-1 ID has 40,
// a SHA-256 one 64). It opens no repository.
func IsObjectID(s string) bool {
	if len(s) < 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// indexListCap bounds `ls-files --stage` output, about 100 bytes per
// tracked file.
const indexListCap = 64 << 20

// checkContent runs the checks due before Git compares work tree content:
// checkFilters; then, from the index, each checked-out submodule
// (Repository.checkSubmodule: whenever a gitlink's directory exists,
// diff-files, even with --ignore-submodules=all, and `git status` resolve
// that submodule's HEAD through its .git, which is work tree content a
// write grant can point anywhere) and the nested repositories Git would
// probe while listing untracked files (checkNested).
func (g *gitRunner) checkContent(ctx context.Context) error {
	if err := g.checkFilters(ctx); err != nil {
		return err
	}
	gitlinks, files, err := g.indexEntries(ctx)
	if err != nil {
		return err
	}
	for _, l := range gitlinks {
		if err := g.repo.checkSubmodule(l); err != nil {
			return err
		}
	}
	return g.checkNested(ctx, gitlinks, files)
}

// checkFilters returns ErrUnsafeFilters when the configuration Git uses in
// the repository defines an executable filter, diff or merge driver (see
// the package doc). It asks Git in the repository's own context (its HEAD,
// its repository directory), which is the one Git runs in: check a new
// worktree from inside it, not from its source.
func (g *gitRunner) checkFilters(ctx context.Context) error {
	res, err := g.run(ctx, listCap, "config", "-z", "--includes", "--list")
	if err != nil {
		return err
	}
	if res.truncated {
		return fmt.Errorf("gitrepo: git configuration over %d bytes: %w", listCap, ErrGit)
	}
	if res.exitCode != 0 {
		return g.failed("config", res)
	}
	if key, ok := unsafeConfig(res.stdout); ok {
		return fmt.Errorf("gitrepo: %s is configured: %w", key, ErrUnsafeFilters)
	}
	return nil
}

// unsafeConfig scans `git config -z --list` output ("key\nvalue\0" or
// "key\0" entries, keys with lowercase section and variable names) for
// filter.<driver>.{clean,smudge,process}, diff.<driver>.{textconv,command}
// and merge.<driver>.driver. It returns the first such key, with the driver
// name left out.
func unsafeConfig(out []byte) (string, bool) {
	for _, entry := range bytes.Split(out, []byte{0}) {
		key, _, _ := bytes.Cut(entry, []byte{'\n'})
		k := strings.ToLower(string(key))
		section, rest, ok := strings.Cut(k, ".")
		if !ok {
			continue
		}
		i := strings.LastIndexByte(rest, '.')
		if i < 0 {
			continue // no driver subsection: diff.external and friends
		}
		name := rest[i+1:]
		switch {
		case section == "filter" && (name == "clean" || name == "smudge" || name == "process"):
			return "filter.<driver>." + name, true
		case section == "diff" && (name == "textconv" || name == "command"):
			return "diff.<driver>." + name, true
		case section == "merge" && name == "driver":
			// No DevSpace Git merges today; refused all the same, so that
			// no program the repository names is ever one Git may start.
			return "merge.<driver>.driver", true
		}
	}
	return "", false
}

// capWriter keeps the first limit bytes written to it and discards the rest,
// calling onFull once when something had to be discarded.
type capWriter struct {
	buf    []byte
	limit  int64
	full   bool
	onFull func()
}

func (w *capWriter) Write(p []byte) (int, error) {
	if w.full {
		return len(p), nil
	}
	room := w.limit - int64(len(w.buf))
	if int64(len(p)) <= room {
		w.buf = append(w.buf, p...)
		return len(p), nil
	}
	w.buf = append(w.buf, p[:room]...)
	w.full = true
	if w.onFull != nil {
		w.onFull()
	}
	return len(p), nil
}
