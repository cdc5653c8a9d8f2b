//go:build unix

package review

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/gitrepo"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// TestChangesRefusesEscapingMetadata plants, for each way repository
// metadata can point outside the root, a FIFO where Git would read: Git
// opening it would block until the timeout, so a gitrepo.ErrRepositoryUnsafe
// answer proves that nothing outside was opened.
func TestChangesRefusesEscapingMetadata(t *testing.T) {
	for _, e := range testutil.Escapes() {
		t.Run(e.Name, func(t *testing.T) {
			root := testutil.NewRepo(t)
			testutil.WriteFile(t, root, "a.txt", "a\n")
			testutil.CommitAll(t, root)
			base := strings.TrimSpace(testutil.Git(t, root, "rev-parse", "HEAD"))
			testutil.WriteFile(t, root, "a.txt", "b\n")
			outside := testutil.CanonicalTempDir(t)
			e.Plant(t, root, outside)

			r := New(Options{Timeout: 5 * time.Second})
			start := time.Now()
			if _, err := r.Changes(t.Context(), root); !errors.Is(err, gitrepo.ErrRepositoryUnsafe) {
				t.Errorf("Changes = %v, want gitrepo.ErrRepositoryUnsafe", err)
			}
			if _, err := r.ChangesSince(t.Context(), root, base, root); !errors.Is(err, gitrepo.ErrRepositoryUnsafe) {
				t.Errorf("ChangesSince = %v, want gitrepo.ErrRepositoryUnsafe", err)
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Errorf("took %v: something waited on a FIFO", d)
			}
		})
	}
}

// TestChangesRunsNoRepositoryCode plants hooks, fsmonitor, pagers, an
// external diff and an ssh command in the repository; the review runs none
// of them, while plain Git does (the control).
func TestChangesRunsNoRepositoryCode(t *testing.T) {
	root := testutil.NewRepo(t)
	testutil.WriteFile(t, root, "a.txt", "a\n")
	testutil.WriteFile(t, root, "staged.txt", "s\n")
	testutil.CommitAll(t, root)
	testutil.WriteFile(t, root, "a.txt", "b\n")
	testutil.WriteFile(t, root, "staged.txt", "t\n")
	testutil.Git(t, root, "add", "staged.txt")
	testutil.WriteFile(t, root, "new.txt", "n\n")
	markers := filepath.Join(testutil.CanonicalTempDir(t), "markers")
	testutil.PlantRepositoryCode(t, root, markers)

	c := review(t, Options{}, root)
	if len(c.Files) != 3 {
		t.Errorf("files = %+v", c.Files)
	}
	if m := testutil.Markers(t, markers); len(m) != 0 {
		t.Fatalf("the review ran repository code: %v", m)
	}
	testutil.Git(t, root, "status", "--short")
	if m := testutil.Markers(t, markers); len(m) == 0 {
		t.Fatal("control: plain git status ran nothing")
	}
}

func TestChangesRunsNoFilters(t *testing.T) {
	root := testutil.NewRepo(t)
	testutil.WriteFile(t, root, "a.txt", "a\n")
	testutil.CommitAll(t, root)
	testutil.WriteFile(t, root, "a.txt", "b\n")
	markers := filepath.Join(testutil.CanonicalTempDir(t), "markers")
	testutil.PlantFilters(t, root, markers)
	if _, err := New(Options{}).Changes(t.Context(), root); !errors.Is(err, gitrepo.ErrUnsafeFilters) {
		t.Errorf("Changes = %v, want gitrepo.ErrUnsafeFilters", err)
	}
	if m := testutil.Markers(t, markers); len(m) != 0 {
		t.Fatalf("the review ran a filter: %v", m)
	}
	testutil.Git(t, root, "diff")
	if m := testutil.Markers(t, markers); len(m) == 0 {
		t.Fatal("control: plain git diff ran no filter")
	}
}

// TestChangesRefusesConditionalInclude: a configuration file included
// under a condition (includeIf) means one thing where Git is checked and
// another where it runs (onbranch: after a branch switch or in a worktree
// on another branch; gitdir: in a worktree, whose repository directory is
// elsewhere; hasconfig: under another worktree's config.worktree), so a
// filter it defines can pass the check and run after it. Every one is
// refused, also included by an include, whatever its condition says here;
// a plain include is not.
func TestChangesRefusesConditionalInclude(t *testing.T) {
	const onBranch = "includeIf.onbranch:devspace/**.path"
	tests := []struct {
		name  string
		key   string // set to value in .git/config
		value string
		files map[string]string // more files in .git
		want  error
	}{
		{"onbranch, another branch", onBranch, "evil.cfg", nil, gitrepo.ErrRepositoryUnsafe},
		{"onbranch, this branch", "includeIf.onbranch:**.path", "evil.cfg", nil, gitrepo.ErrRepositoryUnsafe},
		{"gitdir", "includeIf.gitdir:**/worktrees/.path", "evil.cfg", nil, gitrepo.ErrRepositoryUnsafe},
		{"gitdir/i", "includeIf.gitdir/i:/.path", "evil.cfg", nil, gitrepo.ErrRepositoryUnsafe},
		{"hasconfig", "includeIf.hasconfig:remote.*.url:**.path", "evil.cfg", nil, gitrepo.ErrRepositoryUnsafe},
		{"missing file", onBranch, "later.cfg", nil, gitrepo.ErrRepositoryUnsafe},
		{"include of an include", "include.path", "inner.cfg",
			map[string]string{"inner.cfg": "[includeIf \"onbranch:devspace/**\"]\n\tpath = evil.cfg\n"}, gitrepo.ErrRepositoryUnsafe},
		{"plain include", "include.path", "plain.cfg", map[string]string{"plain.cfg": "[core]\n\tabbrev = 12\n"}, nil},
		{"empty conditional path", onBranch, "", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := testutil.NewRepo(t)
			testutil.WriteFile(t, root, "a.txt", "a\n")
			testutil.WriteFile(t, root, ".gitattributes", "* filter=x\n")
			testutil.CommitAll(t, root)
			testutil.WriteFile(t, root, "a.txt", "b\n")
			gitDir := filepath.Join(root, ".git")
			marker := filepath.Join(testutil.CanonicalTempDir(t), "marker")
			testutil.WriteFile(t, gitDir, "evil.cfg", "[filter \"x\"]\n\tclean = \"sh -c \\\"touch '"+marker+"'; cat\\\" --\"\n")
			for name, content := range tt.files {
				testutil.WriteFile(t, gitDir, name, content)
			}
			testutil.Git(t, root, "config", tt.key, tt.value)
			_, err := New(Options{}).Changes(t.Context(), root)
			if tt.want == nil && err != nil || !errors.Is(err, tt.want) {
				t.Errorf("Changes = %v, want %v", err, tt.want)
			}
			if _, err := os.Lstat(marker); err == nil {
				t.Error("the included filter ran")
			}
		})
	}
}
