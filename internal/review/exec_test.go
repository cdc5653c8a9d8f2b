//go:build unix

package review

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/testutil"
)

func TestGitRun(t *testing.T) {
	dir := testutil.NewRepo(t)
	testutil.WriteFile(t, dir, "a.txt", "a\n")
	commitAll(t, dir)
	other := testutil.NewRepo(t)
	t.Setenv("GIT_DIR", filepath.Join(other, ".git"))
	t.Setenv("GIT_WORK_TREE", other)
	t.Setenv("GIT_CONFIG_PARAMETERS", "'core.hookspath'='/tmp/evil'")
	g := NewGit(GitOptions{})

	out, err := g.Run(t.Context(), dir, "rev-parse", "--show-toplevel")
	if err != nil || strings.TrimSpace(string(out)) != dir {
		t.Errorf("rev-parse --show-toplevel = %q, %v; want %q (inherited GIT_* must not apply)", out, err, dir)
	}
	out, err = g.Run(t.Context(), dir, "config", "--get", "core.hookspath")
	if err != nil || strings.TrimSpace(string(out)) != "/dev/null" {
		t.Errorf("core.hooksPath = %q, %v", out, err)
	}

	_, err = g.Run(t.Context(), dir, "-c", "x.y=z", "rev-parse", "--verify", "-q", "refs/heads/missing")
	var exit *ExitError
	if !errors.As(err, &exit) || exit.Code != 1 || exit.Command != "rev-parse" || !errors.Is(err, ErrGit) {
		t.Errorf("missing ref: %v (%#v)", err, exit)
	}

	small := NewGit(GitOptions{MaxOutput: 8})
	out, err = small.Run(t.Context(), dir, "rev-parse", "HEAD")
	if !errors.Is(err, ErrOutputTooLarge) || !errors.Is(err, ErrGit) || len(out) != 8 {
		t.Errorf("capped output = %q, %v", out, err)
	}

	if err := g.CheckTopLevel(t.Context(), filepath.Join(dir, ".git")); !errors.Is(err, ErrNotTopLevel) {
		t.Errorf("CheckTopLevel(.git) = %v", err)
	}
	if head, err := g.Head(t.Context(), other); err != nil || head != "" {
		t.Errorf("Head of an empty repository = %q, %v", head, err)
	}
}

func TestChangesLinkedWorktree(t *testing.T) {
	dir := testutil.NewRepo(t)
	testutil.WriteFile(t, dir, "a.txt", "a\n")
	commitAll(t, dir)
	base := strings.TrimSpace(testutil.Git(t, dir, "rev-parse", "HEAD"))
	wt := filepath.Join(filepath.Dir(dir), filepath.Base(dir)+"-wt")
	testutil.Git(t, dir, "worktree", "add", "-q", "-b", "side", wt)
	t.Cleanup(func() { testutil.Git(t, dir, "worktree", "remove", "--force", wt) })

	if err := NewGit(GitOptions{}).CheckTopLevel(t.Context(), wt); err != nil {
		t.Errorf("CheckTopLevel(linked worktree) = %v", err)
	}
	testutil.WriteFile(t, wt, "a.txt", "a\nb\n")
	c := review(t, Options{}, wt)
	checkFiles(t, c.Files, []FileChange{{Path: "a.txt", Status: "modified", Unstaged: true, Added: 1}})

	testutil.Git(t, wt, "commit", "-q", "-am", "b")
	testutil.WriteFile(t, wt, "c.txt", "c\n")
	since, err := New(Options{}).ChangesSince(t.Context(), wt, base)
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, since.Files, []FileChange{
		{Path: "a.txt", Status: "modified", Staged: true, Added: 1},
		{Path: "c.txt", Status: "untracked", Added: 1},
	})
	for _, bad := range []string{"HEAD", "--output=/tmp/x", strings.Repeat("0", 40)} {
		if _, err := New(Options{}).ChangesSince(t.Context(), wt, bad); !errors.Is(err, ErrGit) {
			t.Errorf("ChangesSince(%q) = %v, want ErrGit", bad, err)
		}
	}
}
