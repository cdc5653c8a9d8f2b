//go:build unix

package worktree

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/gitrepo"
	"github.com/devspace-dev/devspace/internal/review"
	"github.com/devspace-dev/devspace/internal/sandbox"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// fastManager's Git gives up after 5 s, so a Git blocked on a planted FIFO
// fails the test quickly instead of hanging it.
func fastManager(t *testing.T) *Manager {
	t.Helper()
	m, err := New(Options{Dir: filepath.Join(t.TempDir(), "worktrees"), Git: gitrepo.NewGit(gitrepo.GitOptions{Timeout: 5 * time.Second})})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRefusesEscapingMetadata: a source repository whose metadata points
// outside its root (at a FIFO wherever Git would read) is refused by every
// operation before any Git runs, and nothing is created anywhere.
func TestRefusesEscapingMetadata(t *testing.T) {
	for _, e := range testutil.Escapes() {
		t.Run(e.Name, func(t *testing.T) {
			m := fastManager(t)
			repo := newRepo(t, true)
			outside := testutil.CanonicalTempDir(t)
			e.Plant(t, repo, outside)
			start := time.Now()
			if err := m.Eligible(t.Context(), repo); !errors.Is(err, gitrepo.ErrRepositoryUnsafe) {
				t.Errorf("Eligible = %v, want gitrepo.ErrRepositoryUnsafe", err)
			}
			if _, err := m.Create(t.Context(), repo, "k"); !errors.Is(err, gitrepo.ErrRepositoryUnsafe) {
				t.Errorf("Create = %v, want gitrepo.ErrRepositoryUnsafe", err)
			}
			if _, err := m.Prune(t.Context(), repo); !errors.Is(err, gitrepo.ErrRepositoryUnsafe) {
				t.Errorf("Prune = %v, want gitrepo.ErrRepositoryUnsafe", err)
			}
			if _, err := m.Check(t.Context(), repo); !errors.Is(err, gitrepo.ErrRepositoryUnsafe) {
				t.Errorf("Check = %v, want gitrepo.ErrRepositoryUnsafe", err)
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Errorf("took %v: something waited on a FIFO", d)
			}
			if exists(m.layout(repo, "k").Path) {
				t.Error("a worktree directory was created")
			}
		})
	}
}

// TestRefusesEscapeAfterCreate: metadata changed after the worktree was
// made, in the worktree or in the source, stops Dirty, Get and Remove.
func TestRefusesEscapeAfterCreate(t *testing.T) {
	t.Run("worktree .git file", func(t *testing.T) {
		m := fastManager(t)
		repo := newRepo(t, true)
		wt, err := m.Create(t.Context(), repo, "k")
		if err != nil {
			t.Fatal(err)
		}
		outside := testutil.CanonicalTempDir(t)
		testutil.OutsideRepo(t, filepath.Join(outside, "repo"), true)
		testutil.WriteFile(t, wt.Path, ".git", "gitdir: "+filepath.Join(outside, "repo", ".git")+"\n")
		if _, err := m.Dirty(t.Context(), wt); !errors.Is(err, gitrepo.ErrRepositoryUnsafe) {
			t.Errorf("Dirty = %v, want gitrepo.ErrRepositoryUnsafe", err)
		}
		if err := m.Remove(t.Context(), repo, wt); !errors.Is(err, gitrepo.ErrRepositoryUnsafe) {
			t.Errorf("Remove = %v, want gitrepo.ErrRepositoryUnsafe", err)
		}
		if !exists(wt.Path) {
			t.Error("the worktree was removed")
		}
	})
	t.Run("source include", func(t *testing.T) {
		m := fastManager(t)
		repo := newRepo(t, true)
		wt, err := m.Create(t.Context(), repo, "k")
		if err != nil {
			t.Fatal(err)
		}
		outside := testutil.CanonicalTempDir(t)
		for _, e := range testutil.Escapes() {
			if e.Name == "include.path" {
				e.Plant(t, repo, outside)
			}
		}
		if _, err := m.Get(t.Context(), repo, "k"); !errors.Is(err, gitrepo.ErrRepositoryUnsafe) {
			t.Errorf("Get = %v, want gitrepo.ErrRepositoryUnsafe", err)
		}
		if _, err := m.Dirty(t.Context(), wt); !errors.Is(err, gitrepo.ErrRepositoryUnsafe) {
			t.Errorf("Dirty = %v, want gitrepo.ErrRepositoryUnsafe", err)
		}
		if err := m.Remove(t.Context(), repo, wt); !errors.Is(err, gitrepo.ErrRepositoryUnsafe) {
			t.Errorf("Remove = %v, want gitrepo.ErrRepositoryUnsafe", err)
		}
	})
}

// TestRunsNoRepositoryCode: hooks (post-checkout on worktree add,
// reference-transaction on every ref update, post-index-change…),
// fsmonitor, pagers and the like planted in the source repository never
// run during Create, Dirty and Remove; plain Git runs them (the control).
func TestRunsNoRepositoryCode(t *testing.T) {
	m := newManager(t)
	repo := newRepo(t, true)
	markers := filepath.Join(testutil.CanonicalTempDir(t), "markers")
	testutil.PlantRepositoryCode(t, repo, markers)

	wt, err := m.Create(t.Context(), repo, "k")
	if err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, wt.Path, "a.txt", "changed\n")
	if dirty, err := m.Dirty(t.Context(), wt); err != nil || !dirty {
		t.Errorf("Dirty = %v, %v", dirty, err)
	}
	testutil.WriteFile(t, wt.Path, "a.txt", "one\n")
	if _, err := m.Prune(t.Context(), repo); err != nil {
		t.Error(err)
	}
	if err := m.Remove(t.Context(), repo, wt); err != nil {
		t.Fatal(err)
	}
	if got := testutil.Markers(t, markers); len(got) != 0 {
		t.Fatalf("repository code ran: %v", got)
	}
	testutil.Git(t, repo, "worktree", "add", "-q", filepath.Join(testutil.CanonicalTempDir(t), "control"))
	got := strings.Join(testutil.Markers(t, markers), " ")
	for _, want := range []string{"hook-post-checkout", "hook-reference-transaction"} {
		if !strings.Contains(got, want) {
			t.Errorf("control: plain git worktree add did not run %s (ran %q)", want, got)
		}
	}
}

func TestRunsNoFilters(t *testing.T) {
	m := newManager(t)
	repo := newRepo(t, true)
	markers := filepath.Join(testutil.CanonicalTempDir(t), "markers")
	testutil.PlantFilters(t, repo, markers)
	if _, err := m.Create(t.Context(), repo, "k"); !errors.Is(err, ErrUnsafe) {
		t.Errorf("Create = %v, want ErrUnsafe", err)
	}
	if got := testutil.Markers(t, markers); len(got) != 0 {
		t.Fatalf("a filter ran: %v", got)
	}
	testutil.Git(t, repo, "worktree", "add", "-q", filepath.Join(testutil.CanonicalTempDir(t), "control"))
	if got := testutil.Markers(t, markers); len(got) == 0 {
		t.Error("control: plain git worktree add ran no smudge filter")
	}
}

// TestGitFileRelative: the worktree's .git file names its repository
// directory relative to the worktree, and Git, plain and DevSpace's, still
// works in both directions.
func TestGitFileRelative(t *testing.T) {
	m := newManager(t)
	repo := newRepo(t, true)
	wt, err := m.Create(t.Context(), repo, "k")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(wt.Path, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	target, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: ")
	if !ok || filepath.IsAbs(target) || strings.Contains(string(data), repo) || strings.Contains(string(data), m.dir) {
		t.Fatalf(".git file = %q, want a relative gitdir", data)
	}
	if got := filepath.Join(wt.Path, target); got != filepath.Join(repo, ".git", "worktrees", "k") {
		t.Errorf(".git file resolves to %s", got)
	}

	// Plain Git in the worktree and in the source.
	if got := strings.TrimSpace(testutil.Git(t, wt.Path, "rev-parse", "--git-common-dir")); got != filepath.Join(repo, ".git") {
		t.Errorf("common dir from the worktree = %q", got)
	}
	testutil.WriteFile(t, wt.Path, "b.txt", "b\n")
	testutil.Git(t, wt.Path, "add", "b.txt")
	testutil.Git(t, wt.Path, "commit", "-q", "-m", "b")
	if got := testutil.Git(t, repo, "worktree", "list", "--porcelain"); !strings.Contains(got, "worktree "+wt.Path+"\n") || strings.Contains(got, "prunable") {
		t.Errorf("worktree list in the source:\n%s", got)
	}
	testutil.Git(t, repo, "worktree", "prune")
	if _, err := m.Get(t.Context(), repo, "k"); err != nil {
		t.Fatalf("Get after git worktree prune: %v", err)
	}
	// DevSpace's Git.
	if dirty, err := m.Dirty(t.Context(), wt); err != nil || dirty {
		t.Errorf("Dirty = %v, %v", dirty, err)
	}
	since, err := review.New(review.Options{}).ChangesSince(t.Context(), wt.Path, wt.BaseCommit, repo)
	if err != nil || len(since.Files) != 1 || since.Files[0].Path != "b.txt" {
		t.Errorf("ChangesSince = %+v, %v", since, err)
	}
	if err := m.Remove(t.Context(), repo, wt); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if exists(wt.Path) || len(worktreePaths(t, repo)) != 1 {
		t.Error("worktree remains")
	}
}

// TestRefusesSubmoduleLeadingOutside: a submodule directory in the worktree
// whose .git names an outside repository (HEAD a FIFO) stops Dirty and
// Remove: diff-files and `git status` would read that HEAD.
func TestRefusesSubmoduleLeadingOutside(t *testing.T) {
	m := fastManager(t)
	repo := newRepo(t, true)
	outside := filepath.Join(testutil.CanonicalTempDir(t), "repo")
	testutil.OutsideRepo(t, outside, false)
	id := strings.TrimSpace(testutil.Git(t, outside, "rev-parse", "HEAD"))
	testutil.Git(t, repo, "update-index", "--add", "--cacheinfo", "160000,"+id+",sub")
	testutil.Git(t, repo, "commit", "-q", "-m", "submodule")
	wt, err := m.Create(t.Context(), repo, "k")
	if err != nil {
		t.Fatal(err)
	}
	head := filepath.Join(outside, ".git", "HEAD")
	if err := os.Remove(head); err != nil {
		t.Fatal(err)
	}
	testutil.Mkfifo(t, head)
	testutil.WriteFile(t, wt.Path, "sub/.git", "gitdir: "+filepath.Join(outside, ".git")+"\n")
	refusedAtOnce(t, m, repo, wt)
}

// TestRefusesWorkTreeFIFOIgnore: a FIFO .gitignore or .gitattributes in
// the worktree stops Dirty and Remove at once: diff-files and ls-files
// --others would block opening it until the timeout.
func TestRefusesWorkTreeFIFOIgnore(t *testing.T) {
	for _, name := range []string{"sub/.gitignore", ".gitattributes"} {
		t.Run(name, func(t *testing.T) {
			m := fastManager(t)
			repo := newRepo(t, true)
			wt, err := m.Create(t.Context(), repo, "k")
			if err != nil {
				t.Fatal(err)
			}
			testutil.Mkfifo(t, filepath.Join(wt.Path, name))
			refusedAtOnce(t, m, repo, wt)
			if !exists(wt.Path) {
				t.Error("the worktree was removed")
			}
		})
	}
}

// TestPruneRelativizesOlderWorktrees: a worktree made before .git files
// were written relative gets a relative one at the next Prune (startup).
func TestPruneRelativizesOlderWorktrees(t *testing.T) {
	m := newManager(t)
	repo := newRepo(t, true)
	wt, err := m.Create(t.Context(), repo, "k")
	if err != nil {
		t.Fatal(err)
	}
	dotgit := filepath.Join(wt.Path, ".git")
	testutil.WriteFile(t, wt.Path, ".git", "gitdir: "+filepath.Join(repo, ".git", "worktrees", "k")+"\n")
	if _, err := m.Prune(t.Context(), repo); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(dotgit)
	if err != nil {
		t.Fatal(err)
	}
	if target, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: "); !ok || filepath.IsAbs(target) {
		t.Errorf(".git after Prune = %q, want relative", data)
	}
	if dirty, err := m.Dirty(t.Context(), wt); err != nil || dirty {
		t.Errorf("Dirty = %v, %v", dirty, err)
	}
	if got := testutil.Markers(t, filepath.Dir(wt.Path)); len(got) != 1 {
		t.Errorf("files next to the worktree: %v", got)
	}
}

// refusedAtOnce checks that Dirty and Remove of wt answer
// gitrepo.ErrRepositoryUnsafe without waiting (on a FIFO).
func refusedAtOnce(t *testing.T, m *Manager, repo string, wt *Worktree) {
	t.Helper()
	start := time.Now()
	if _, err := m.Dirty(t.Context(), wt); !errors.Is(err, gitrepo.ErrRepositoryUnsafe) {
		t.Errorf("Dirty = %v, want gitrepo.ErrRepositoryUnsafe", err)
	}
	if err := m.Remove(t.Context(), repo, wt); !errors.Is(err, gitrepo.ErrRepositoryUnsafe) {
		t.Errorf("Remove = %v, want gitrepo.ErrRepositoryUnsafe", err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("took %v: something waited on a FIFO", d)
	}
}

// TestForgedLockKeepsWorktree: a command of a checkout execution may write
// the source's .git. It marks another execution's finished worktree as
// half-created (.git/worktrees/<id>/locked = "initializing", what `git
// worktree add` writes while it runs); the next Prune (every start) and a
// Create of that key used to remove it with `worktree remove --force
// --force`, uncommitted work included (found by an attacker review).
// Half-created needs Create's own marker, in the server's directory.
func TestForgedLockKeepsWorktree(t *testing.T) {
	m := newManager(t)
	src := newRepo(t, true)
	victim, err := m.Create(t.Context(), src, "victim")
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(victim.Path, "uncommitted-work.txt")
	testutil.WriteFile(t, victim.Path, "uncommitted-work.txt", "hours of work\n")
	lock := filepath.Join(src, ".git", "worktrees", filepath.Base(victim.Path), "locked")
	if err := os.WriteFile(lock, []byte("initializing"), 0o644); err != nil {
		t.Fatal(err)
	}
	if removed, err := m.Prune(t.Context(), src); err != nil || len(removed) != 0 {
		t.Errorf("Prune removed %v (%v)", removed, err)
	}
	if again, err := m.Create(t.Context(), src, "victim"); err != nil || again.Path != victim.Path {
		t.Errorf("Create of the same key = %+v, %v", again, err)
	}
	if b, err := os.ReadFile(work); err != nil || string(b) != "hours of work\n" {
		t.Errorf("another execution's uncommitted work is gone: %q %v", b, err)
	}
	if markers, _ := filepath.Glob(filepath.Join(filepath.Dir(victim.Path), ".*.creating")); len(markers) != 0 {
		t.Errorf("markers left behind: %v", markers)
	}
}

// TestRefusesConfigOfAnotherContext: a configuration that means something
// else where Git checks the worktree out than where DevSpace checked it
// (found by an attacker review: an include on the worktree's own branch,
// onbranch:devspace/**, defined a smudge filter that the check, run in
// the source with the source's HEAD, did not see; `git worktree add` ran it
// and it wrote a hook in the source's .git that the owner's next checkout
// ran). Create refuses every variant with gitrepo.ErrRepositoryUnsafe, and
// none of it runs; plain Git, in a worktree on such a branch, runs it (the
// control).
func TestRefusesConfigOfAnotherContext(t *testing.T) {
	const onBranch = "includeIf.onbranch:devspace/**.path"
	tests := []struct {
		name       string
		key        string // set to value in .git/config
		value      string
		files      map[string]string // more files in .git
		driver     string            // what evil.cfg defines: "filter" or "diff"
		attributes string            // where "* filter=x diff=x" is: "committed" or "info"
	}{
		{"onbranch", onBranch, "evil.cfg", nil, "filter", "committed"},
		{"gitdir", "includeIf.gitdir:**/.git/worktrees/.path", "evil.cfg", nil, "filter", "committed"},
		{"gitdir/i", "includeIf.gitdir/i:**/.GIT/WORKTREES/.path", "evil.cfg", nil, "filter", "committed"},
		{"include of an include", "include.path", "inner.cfg",
			map[string]string{"inner.cfg": "[includeIf \"onbranch:devspace/**\"]\n\tpath = evil.cfg\n"}, "filter", "committed"},
		{"diff driver", onBranch, "evil.cfg", nil, "diff", "committed"},
		{"info/attributes only", onBranch, "evil.cfg", nil, "filter", "info"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newManager(t)
			repo := newRepo(t, false)
			markers := filepath.Join(testutil.CanonicalTempDir(t), "markers")
			if err := os.Mkdir(markers, 0o755); err != nil {
				t.Fatal(err)
			}
			gitDir := filepath.Join(repo, ".git")
			hook := filepath.Join(gitDir, "hooks", "post-checkout")
			// The program leaves a marker and plants a hook in the source.
			program := "sh -c \"touch '" + filepath.Join(markers, tt.driver) + "'; echo exit 0 > '" + hook + "'; cat\" --"
			evil := fmt.Sprintf("[filter \"x\"]\n\tsmudge = %q\n\tclean = %q\n", program, program)
			if tt.driver == "diff" {
				evil = fmt.Sprintf("[diff \"x\"]\n\ttextconv = %q\n", program)
			}
			testutil.WriteFile(t, gitDir, "evil.cfg", evil)
			for name, content := range tt.files {
				testutil.WriteFile(t, gitDir, name, content)
			}
			attributes := "* filter=x diff=x\n"
			if tt.attributes == "info" {
				testutil.WriteFile(t, gitDir, "info/attributes", attributes)
			} else {
				testutil.WriteFile(t, repo, ".gitattributes", attributes)
			}
			testutil.WriteFile(t, repo, "a.txt", "one\n")
			testutil.Git(t, repo, "add", "-A")
			testutil.Git(t, repo, "commit", "-q", "-m", "initial")
			testutil.Git(t, repo, "config", tt.key, tt.value)

			if _, err := m.Create(t.Context(), repo, "k"); !errors.Is(err, gitrepo.ErrRepositoryUnsafe) {
				t.Errorf("Create = %v, want gitrepo.ErrRepositoryUnsafe", err)
			}
			if got := testutil.Markers(t, markers); len(got) != 0 {
				t.Errorf("the repository's %s ran: %v", tt.driver, got)
			}
			if exists(hook) {
				t.Error("a hook was planted in the source's .git/hooks")
			}
			if exists(m.layout(repo, "k").Path) {
				t.Error("a worktree directory remains")
			}

			// The control: plain Git on a devspace/ branch runs it.
			control := filepath.Join(testutil.CanonicalTempDir(t), "control")
			testutil.Git(t, repo, "worktree", "add", "-q", "-b", "devspace/control", control)
			if tt.driver == "diff" {
				testutil.WriteFile(t, control, "a.txt", "two\n")
				testutil.Git(t, control, "diff")
			}
			if got := testutil.Markers(t, markers); len(got) == 0 || !exists(hook) {
				t.Errorf("control: plain Git ran no %s (markers %v)", tt.driver, got)
			}
		})
	}
}

// TestCreateChecksInsideTheWorktree: a filter configured after the source
// passed the checks (a concurrent command writes .git/config right before
// `git worktree add`) is caught by the check Create runs inside the new
// worktree before its checkout: ErrUnsafe, the filter never ran, nothing
// of the attempt remains.
func TestCreateChecksInsideTheWorktree(t *testing.T) {
	repo := newRepo(t, true)
	marker := filepath.Join(testutil.CanonicalTempDir(t), "marker")
	planted := false
	plant := func(cmd *exec.Cmd, _ sandbox.Policy) error {
		if !planted && slices.Contains(cmd.Args, "add") {
			planted = true
			testutil.Git(t, repo, "config", "filter.x.smudge", "sh -c \"touch '"+marker+"'; cat\" --")
			testutil.WriteFile(t, filepath.Join(repo, ".git"), "info/attributes", "* filter=x\n")
		}
		return nil
	}
	m, err := New(Options{Dir: filepath.Join(t.TempDir(), "worktrees"), Git: gitrepo.NewGit(gitrepo.GitOptions{Confine: plant})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(t.Context(), repo, "k"); !errors.Is(err, ErrUnsafe) {
		t.Errorf("Create = %v, want ErrUnsafe", err)
	}
	if !planted || exists(marker) {
		t.Errorf("planted %v; the smudge filter ran: %v", planted, exists(marker))
	}
	if exists(m.layout(repo, "k").Path) || len(worktreePaths(t, repo)) != 1 || len(devspaceRefs(t, repo)) != 0 {
		t.Errorf("left behind: directory %v, worktrees %q, refs %q", exists(m.layout(repo, "k").Path), worktreePaths(t, repo), devspaceRefs(t, repo))
	}
}
