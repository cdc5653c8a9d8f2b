//go:build unix

package gitrepo

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
	testutil.CommitAll(t, dir)
	other := testutil.NewRepo(t)
	t.Setenv("GIT_DIR", filepath.Join(other, ".git"))
	t.Setenv("GIT_WORK_TREE", other)
	t.Setenv("GIT_CONFIG_PARAMETERS", "'core.hookspath'='/tmp/evil'")
	g := NewGit(GitOptions{})
	repo, err := OpenRepository(dir)
	if err != nil {
		t.Fatal(err)
	}

	out, err := g.Run(t.Context(), repo, "rev-parse", "--show-toplevel")
	if err != nil || strings.TrimSpace(string(out)) != dir {
		t.Errorf("rev-parse --show-toplevel = %q, %v; want %q (inherited GIT_* must not apply)", out, err, dir)
	}
	out, err = g.Run(t.Context(), repo, "config", "--get", "core.hookspath")
	if err != nil || strings.TrimSpace(string(out)) != "/dev/null" {
		t.Errorf("core.hooksPath = %q, %v", out, err)
	}

	_, err = g.Run(t.Context(), repo, "-c", "x.y=z", "rev-parse", "--verify", "-q", "refs/heads/missing")
	var exit *ExitError
	if !errors.As(err, &exit) || exit.Code != 1 || exit.Command != "rev-parse" || !errors.Is(err, ErrGit) {
		t.Errorf("missing ref: %v (%#v)", err, exit)
	}

	small := NewGit(GitOptions{MaxOutput: 8})
	out, err = small.Run(t.Context(), repo, "rev-parse", "HEAD")
	if !errors.Is(err, ErrOutputTooLarge) || !errors.Is(err, ErrGit) || len(out) != 8 {
		t.Errorf("capped output = %q, %v", out, err)
	}

	if _, err := OpenRepository(filepath.Join(dir, ".git")); !errors.Is(err, ErrNotTopLevel) {
		t.Errorf("OpenRepository(.git) = %v", err)
	}
	otherRepo, err := OpenRepository(other)
	if err != nil {
		t.Fatal(err)
	}
	if head, err := g.Head(t.Context(), otherRepo); err != nil || head != "" {
		t.Errorf("Head of an empty repository = %q, %v", head, err)
	}
}

// TestOpenRepositoryLinkedWorktree: a linked worktree's .git names its
// repository directory in the source's .git, which is allowed only when
// the source's root is.
func TestOpenRepositoryLinkedWorktree(t *testing.T) {
	dir := testutil.NewRepo(t)
	testutil.WriteFile(t, dir, "a.txt", "a\n")
	testutil.CommitAll(t, dir)
	wt := filepath.Join(filepath.Dir(dir), filepath.Base(dir)+"-wt")
	testutil.Git(t, dir, "worktree", "add", "-q", "-b", "side", wt)
	t.Cleanup(func() { testutil.Git(t, dir, "worktree", "remove", "--force", wt) })

	if _, err := OpenRepository(wt); !errors.Is(err, ErrRepositoryUnsafe) {
		t.Errorf("OpenRepository(linked worktree) = %v, want ErrRepositoryUnsafe: its .git lies outside", err)
	}
	repo, err := OpenRepository(wt, dir)
	if err != nil {
		t.Fatalf("OpenRepository(linked worktree, source) = %v", err)
	}
	if format, err := NewGit(GitOptions{}).Check(t.Context(), repo); err != nil || format != "sha1" {
		t.Errorf("Check(linked worktree) = %q, %v", format, err)
	}
}
