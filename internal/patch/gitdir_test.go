package patch

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// TestApplyRefusesGitDirWithLinkedMarkers plants Git directories that are
// not named .git and that Git accepts (the test runs git status through
// each) but whose markers are not a plain HEAD, objects and refs: Git
// tests them with access(), which follows symlinks, and a linked
// worktree's gitdir has a commondir instead of objects and refs. A write
// there is a core.fsmonitor command at the owner's next git status, so
// apply_patch must refuse it as repository metadata. Before isGitDir
// counted a marker of any type, each of these patches was applied.
func TestApplyRefusesGitDirWithLinkedMarkers(t *testing.T) {
	// separate makes proj/work a work tree whose repository is proj/meta,
	// with meta's marker moved to proj/store and replaced by a symlink.
	separate := func(marker string) func(t *testing.T, proj string) (string, string) {
		return func(t *testing.T, proj string) (string, string) {
			if err := os.MkdirAll(filepath.Join(proj, "work"), 0o755); err != nil {
				t.Fatal(err)
			}
			testutil.Git(t, proj, "init", "-q", "--separate-git-dir", "meta", "work")
			if err := os.Rename(filepath.Join(proj, "meta", marker), filepath.Join(proj, "store")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("../store", filepath.Join(proj, "meta", marker)); err != nil {
				t.Fatal(err)
			}
			return "work", "meta/config"
		}
	}
	// linked makes proj/wt a linked worktree of proj/main whose gitdir
	// is proj/wtmeta, outside main's .git, reading a per-worktree
	// configuration: wtmeta has a HEAD and a commondir, no objects or refs.
	linked := func(t *testing.T, proj string) (string, string) {
		main := filepath.Join(proj, "main")
		if err := os.MkdirAll(main, 0o755); err != nil {
			t.Fatal(err)
		}
		testutil.Git(t, main, "init", "-q")
		testutil.Git(t, main, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "init")
		testutil.Git(t, main, "config", "extensions.worktreeConfig", "true")
		testutil.Git(t, main, "worktree", "add", "-q", "--detach", "../wt")
		if err := os.Rename(filepath.Join(main, ".git", "worktrees", "wt"), filepath.Join(proj, "wtmeta")); err != nil {
			t.Fatal(err)
		}
		testutil.WriteFile(t, proj, "wtmeta/commondir", "../main/.git\n")
		testutil.WriteFile(t, proj, "wt/.git", "gitdir: ../wtmeta\n")
		return "wt", "wtmeta/config.worktree"
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, proj string) (workTree, target string)
	}{
		{"symlinked objects", separate("objects")},
		{"symlinked refs", separate("refs")},
		{"linked worktree gitdir", linked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := testutil.CanonicalTempDir(t)
			proj := filepath.Join(dir, "proj")
			work, target := tt.setup(t, proj)
			testutil.Git(t, filepath.Join(proj, work), "status") // Git accepts the repository
			marker := filepath.Join(dir, "marker")
			text := "*** Begin Patch\n*** Add File: " + target + "\n+[core]\n+\tfsmonitor = touch " + marker + "; false\n*** End Patch\n"
			if _, err := os.Stat(filepath.Join(proj, target)); err == nil {
				text = "*** Begin Patch\n*** Update File: " + target + "\n@@\n [core]\n+\tfsmonitor = touch " + marker + "; false\n*** End Patch\n"
			}
			before := testutil.Tree(t, proj)
			_, err := apply(t, proj, text, Options{AllowSensitive: true})
			if pe, ok := errors.AsType[*project.PathError](err); !ok || pe.Reason != project.ReasonRepository || !errors.Is(err, project.ErrPathDenied) {
				t.Fatalf("Apply to %s = %v, want path_denied (repository_metadata)", target, err)
			}
			diffSnapshots(t, before, testutil.Tree(t, proj))
			testutil.Git(t, filepath.Join(proj, work), "status")
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the owner's git status ran a command the patch planted")
			}
		})
	}
}
