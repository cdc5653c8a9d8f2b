//go:build unix

package review

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/gitrepo"
	"github.com/devspace-dev/devspace/internal/testutil"
)

func TestChangesLinkedWorktree(t *testing.T) {
	dir := testutil.NewRepo(t)
	testutil.WriteFile(t, dir, "a.txt", "a\n")
	testutil.CommitAll(t, dir)
	base := strings.TrimSpace(testutil.Git(t, dir, "rev-parse", "HEAD"))
	wt := filepath.Join(filepath.Dir(dir), filepath.Base(dir)+"-wt")
	testutil.Git(t, dir, "worktree", "add", "-q", "-b", "side", wt)
	t.Cleanup(func() { testutil.Git(t, dir, "worktree", "remove", "--force", wt) })

	testutil.WriteFile(t, wt, "a.txt", "a\nb\n")
	if _, err := New(Options{}).Changes(t.Context(), wt); !errors.Is(err, gitrepo.ErrRepositoryUnsafe) {
		t.Errorf("Changes(linked worktree) = %v, want gitrepo.ErrRepositoryUnsafe", err)
	}
	c, err := New(Options{}).ChangesSince(t.Context(), wt, base, dir)
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, c.Files, []FileChange{{Path: "a.txt", Status: "modified", Unstaged: true, Added: 1}})

	testutil.Git(t, wt, "commit", "-q", "-am", "b")
	testutil.WriteFile(t, wt, "c.txt", "c\n")
	since, err := New(Options{}).ChangesSince(t.Context(), wt, base, dir)
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, since.Files, []FileChange{
		{Path: "a.txt", Status: "modified", Staged: true, Added: 1},
		{Path: "c.txt", Status: "untracked", Added: 1},
	})
	for _, bad := range []string{"HEAD", "--output=/tmp/x", strings.Repeat("0", 40)} {
		if _, err := New(Options{}).ChangesSince(t.Context(), wt, bad, dir); !errors.Is(err, gitrepo.ErrGit) {
			t.Errorf("ChangesSince(%q) = %v, want gitrepo.ErrGit", bad, err)
		}
	}
}
