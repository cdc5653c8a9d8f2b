package worktree

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// testEnv is the environment of the tests' own git commands: the process's
// minus every GIT_* variable, with system and global configuration off.
func testEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	return append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "LC_ALL=C")
}

// git runs a setup or inspection command in dir and returns its stdout.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = testEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// lines splits command output into its non-empty lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// newRepo returns the canonical path of a new repository with a local
// identity and, when commit is set, one commit holding a.txt and a
// .gitignore ignoring *.log.
func newRepo(t *testing.T, commit bool) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	git(t, dir, "init", "-q")
	git(t, dir, "config", "user.name", "Test")
	git(t, dir, "config", "user.email", "test@example.com")
	git(t, dir, "config", "commit.gpgsign", "false")
	if commit {
		write(t, dir, "a.txt", "one\n")
		write(t, dir, ".gitignore", "*.log\n")
		git(t, dir, "add", "-A")
		git(t, dir, "commit", "-q", "-m", "initial")
	}
	return dir
}

// write creates or replaces a file, with parents, relative to dir.
func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func newManager(t *testing.T) *Manager {
	t.Helper()
	m, err := New(Options{Dir: filepath.Join(t.TempDir(), "worktrees")})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// worktreePaths lists the paths `git worktree list` reports for repo.
func worktreePaths(t *testing.T, repo string) []string {
	t.Helper()
	var paths []string
	for _, l := range lines(git(t, repo, "worktree", "list", "--porcelain")) {
		if p, ok := strings.CutPrefix(l, "worktree "); ok {
			paths = append(paths, p)
		}
	}
	return paths
}

// devspaceRefs lists the refs this package creates in repo.
func devspaceRefs(t *testing.T, repo string) []string {
	t.Helper()
	refs := lines(git(t, repo, "for-each-ref", "--format=%(refname)", "refs/heads/devspace/", "refs/devspace/"))
	slices.Sort(refs)
	return refs
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
