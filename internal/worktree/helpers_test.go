package worktree

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/testutil"
)

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
	dir := testutil.NewRepo(t)
	if commit {
		testutil.WriteFile(t, dir, "a.txt", "one\n")
		testutil.WriteFile(t, dir, ".gitignore", "*.log\n")
		testutil.Git(t, dir, "add", "-A")
		testutil.Git(t, dir, "commit", "-q", "-m", "initial")
	}
	return dir
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
	for _, l := range lines(testutil.Git(t, repo, "worktree", "list", "--porcelain")) {
		if p, ok := strings.CutPrefix(l, "worktree "); ok {
			paths = append(paths, p)
		}
	}
	return paths
}

// devspaceRefs lists the refs this package creates in repo.
func devspaceRefs(t *testing.T, repo string) []string {
	t.Helper()
	refs := lines(testutil.Git(t, repo, "for-each-ref", "--format=%(refname)", "refs/heads/devspace/", "refs/devspace/"))
	slices.Sort(refs)
	return refs
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
