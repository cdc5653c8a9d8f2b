//go:build linux

package worktree

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/gitrepo"
	"github.com/devspace-dev/devspace/internal/process"
	"github.com/devspace-dev/devspace/internal/sandbox"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// TestMain lets this test binary play process.ConfineCommand for
// newConfiner's Manager.
func TestMain(m *testing.M) {
	if code, ok := process.InternalMain(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// newConfiner returns a process.Manager's Confine (testutil.Confiner).
func newConfiner(t *testing.T) gitrepo.Confiner { return testutil.Confiner(t) }

// TestConfinedGitWritesNoHooksOrConfig: a filter that slips past the
// checks (planted by a concurrent command right before the invocation that
// reads work tree content) runs inside DevSpace's confined Git. During the
// checkout of Create, the dirty check and `git worktree remove` it can
// write neither the source's .git/hooks nor its .git/config, though it
// ran (its output shows). Unconfined, the twin writes both (the control).
func TestConfinedGitWritesNoHooksOrConfig(t *testing.T) {
	confine := newConfiner(t)
	tests := []struct {
		name    string
		trigger string // the argument of the invocation before which the filter is planted
		// op runs the operation and reports whether the filter's output
		// showed in its result.
		op func(t *testing.T, m *Manager, repo string) bool
	}{
		{"create checkout", "read-tree", func(t *testing.T, m *Manager, repo string) bool {
			wt, err := m.Create(t.Context(), repo, "k")
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(wt.Path, "a.txt"))
			return err == nil && string(b) == "filtered\n"
		}},
		{"dirty check", "diff-files", func(t *testing.T, m *Manager, repo string) bool {
			wt := createTouched(t, m, repo)
			dirty, err := m.Dirty(t.Context(), wt)
			if err != nil {
				t.Fatal(err)
			}
			return dirty
		}},
		{"worktree remove", "remove", func(t *testing.T, m *Manager, repo string) bool {
			wt := createTouched(t, m, repo)
			err := m.Remove(t.Context(), repo, wt)
			if err != nil && !errors.Is(err, ErrDirty) {
				t.Fatal(err)
			}
			return errors.Is(err, ErrDirty)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, confined := range []bool{false, true} {
				repo := newRepo(t, true)
				gitDir := filepath.Join(repo, ".git")
				hook := filepath.Join(gitDir, "hooks", "post-checkout")
				config := filepath.Join(gitDir, "config")
				planted := false
				conf := func(cmd *exec.Cmd, p sandbox.Policy) error {
					if !planted && slices.Contains(cmd.Args, tt.trigger) {
						planted = true
						program := "sh -c \"echo exit 0 > '" + hook + "'; echo '[planted]' >> '" + config + "'; cat >/dev/null; echo filtered\" --"
						testutil.Git(t, repo, "config", "filter.x.clean", program)
						testutil.Git(t, repo, "config", "filter.x.smudge", program)
						testutil.WriteFile(t, gitDir, "info/attributes", "* filter=x\n")
					}
					if confined {
						return confine(cmd, p)
					}
					return nil
				}
				m, err := New(Options{Dir: filepath.Join(t.TempDir(), "worktrees"), Git: gitrepo.NewGit(gitrepo.GitOptions{Confine: conf})})
				if err != nil {
					t.Fatal(err)
				}
				ran := tt.op(t, m, repo)
				b, err := os.ReadFile(config)
				if err != nil {
					t.Fatal(err)
				}
				var wrote []string
				if exists(hook) {
					wrote = append(wrote, "hooks/post-checkout")
				}
				if strings.Contains(string(b), "\n[planted]\n") { // a line of its own, not the program's text
					wrote = append(wrote, "config")
				}
				switch {
				case !planted || !ran:
					t.Errorf("confined %v: the filter did not run (planted %v)", confined, planted)
				case confined && len(wrote) > 0:
					t.Errorf("a filter run by DevSpace's confined Git wrote %v in the source's .git", wrote)
				case !confined && len(wrote) != 2:
					t.Errorf("control: the unconfined filter wrote only %v", wrote)
				}
			}
		})
	}
}

// TestConfinedLifecycle: with each invocation confined to what it writes,
// Create (also in a repository without logs/ and worktrees/ yet), the
// dirty check, Remove (also of refs packed meanwhile) and the Prune of a
// half-created worktree still work.
func TestConfinedLifecycle(t *testing.T) {
	m, err := New(Options{Dir: filepath.Join(t.TempDir(), "worktrees"), Git: gitrepo.NewGit(gitrepo.GitOptions{Confine: newConfiner(t)})})
	if err != nil {
		t.Fatal(err)
	}
	repo := newRepo(t, true)
	if err := os.RemoveAll(filepath.Join(repo, ".git", "logs")); err != nil {
		t.Fatal(err)
	}
	wt, err := m.Create(t.Context(), repo, "k")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(wt.Path, "a.txt")); err != nil || string(b) != "one\n" {
		t.Errorf("checked out a.txt = %q, %v", b, err)
	}
	if dirty, err := m.Dirty(t.Context(), wt); err != nil || dirty {
		t.Errorf("Dirty = %v, %v, want clean", dirty, err)
	}
	testutil.WriteFile(t, wt.Path, "a.txt", "two\n")
	if dirty, err := m.Dirty(t.Context(), wt); err != nil || !dirty {
		t.Errorf("Dirty = %v, %v, want dirty", dirty, err)
	}
	if err := m.Remove(t.Context(), repo, wt); !errors.Is(err, ErrDirty) {
		t.Errorf("Remove of a dirty worktree = %v, want ErrDirty", err)
	}
	testutil.WriteFile(t, wt.Path, "a.txt", "one\n")
	testutil.Git(t, repo, "pack-refs", "--all")
	if err := m.Remove(t.Context(), repo, wt); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if exists(wt.Path) || len(worktreePaths(t, repo)) != 1 || len(devspaceRefs(t, repo)) != 0 {
		t.Errorf("after Remove: directory %v, worktrees %q, refs %q", exists(wt.Path), worktreePaths(t, repo), devspaceRefs(t, repo))
	}

	half := halfCreate(t, m, repo, "half")
	if removed, err := m.Prune(t.Context(), repo); err != nil || len(removed) != 3 {
		t.Errorf("Prune = %q, %v, want the worktree and its two refs", removed, err)
	}
	if exists(half.Path) || len(worktreePaths(t, repo)) != 1 || len(devspaceRefs(t, repo)) != 0 {
		t.Errorf("after Prune: directory %v, worktrees %q, refs %q", exists(half.Path), worktreePaths(t, repo), devspaceRefs(t, repo))
	}
}

// createTouched creates the worktree of key "k" and touches a.txt, so that
// the next comparison of its content runs the clean filter.
func createTouched(t *testing.T, m *Manager, repo string) *Worktree {
	t.Helper()
	wt, err := m.Create(t.Context(), repo, "k")
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(wt.Path, "a.txt"), later, later); err != nil {
		t.Fatal(err)
	}
	return wt
}
