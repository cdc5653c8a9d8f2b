//go:build unix

package worktree

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/gitrepo"
	"github.com/devspace-dev/devspace/internal/review"
	"github.com/devspace-dev/devspace/internal/testutil"
)

func TestEligible(t *testing.T) {
	m := newManager(t)
	repo := newRepo(t, true)
	testutil.WriteFile(t, repo, "sub/b.txt", "b\n")
	testutil.Git(t, repo, "add", "-A")
	testutil.Git(t, repo, "commit", "-q", "-m", "sub")
	unsafe := newRepo(t, true)
	testutil.Git(t, unsafe, "config", "filter.lfs.smudge", "touch /tmp/pwned")

	tests := []struct {
		name string
		root string
		want error
	}{
		{"top level", repo, nil},
		{"subdirectory", filepath.Join(repo, "sub"), ErrNotTopLevel},
		{"no commits", newRepo(t, false), ErrNoCommits},
		{"not a repository", t.TempDir(), ErrNotRepository},
		{"unsafe filter", unsafe, ErrUnsafe},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := m.Eligible(t.Context(), tt.root)
			if tt.want == nil && err != nil || !errors.Is(err, tt.want) {
				t.Errorf("Eligible = %v, want %v", err, tt.want)
			}
		})
	}

	t.Run("Create refuses", func(t *testing.T) {
		if _, err := m.Create(t.Context(), filepath.Join(repo, "sub"), "k"); !errors.Is(err, ErrNotTopLevel) {
			t.Errorf("Create in subdirectory = %v, want ErrNotTopLevel", err)
		}
		if _, err := m.Create(t.Context(), unsafe, "k"); !errors.Is(err, ErrUnsafe) {
			t.Errorf("Create with unsafe filter = %v, want ErrUnsafe", err)
		}
		if exists("/tmp/pwned") {
			t.Error("smudge filter ran")
		}
	})
}

func TestCreateIsIdempotent(t *testing.T) {
	m := newManager(t)
	repo := newRepo(t, true)
	head := strings.TrimSpace(testutil.Git(t, repo, "rev-parse", "HEAD"))

	wt, err := m.Create(t.Context(), repo, "exec-1")
	if err != nil {
		t.Fatal(err)
	}
	if wt.Key != "exec-1" || !strings.HasPrefix(wt.Branch, "devspace/") || len(wt.Branch) != len("devspace/")+10 ||
		wt.BaseCommit != head || !filepath.IsAbs(wt.Path) || filepath.Base(wt.Path) != "exec-1" ||
		!strings.HasPrefix(wt.Path, m.dir+string(filepath.Separator)) {
		t.Errorf("Create = %+v (HEAD %s)", wt, head)
	}
	if got := strings.TrimSpace(testutil.Git(t, wt.Path, "rev-parse", "--abbrev-ref", "HEAD")); got != wt.Branch {
		t.Errorf("worktree on %q, want %q", got, wt.Branch)
	}
	info, err := os.Stat(filepath.Dir(wt.Path))
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("repository directory mode = %v, %v", info.Mode(), err)
	}

	// A new commit in the source does not change the replay.
	testutil.WriteFile(t, repo, "a.txt", "two\n")
	testutil.Git(t, repo, "commit", "-q", "-am", "second")
	again, err := m.Create(t.Context(), repo, "exec-1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, wt) {
		t.Errorf("second Create = %+v, want %+v", again, wt)
	}
	got, err := m.Get(t.Context(), repo, "exec-1")
	if err != nil || !reflect.DeepEqual(got, wt) {
		t.Errorf("Get = %+v, %v, want %+v", got, err, wt)
	}
	if paths := worktreePaths(t, repo); !slices.Equal(paths, []string{repo, wt.Path}) {
		t.Errorf("worktrees = %q", paths)
	}
	if branches := lines(testutil.Git(t, repo, "branch", "--list", "devspace/*")); len(branches) != 1 {
		t.Errorf("branches = %q", branches)
	}
	if _, err := m.Get(t.Context(), repo, "other"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get unknown key = %v, want ErrNotFound", err)
	}
}

func TestCreateConcurrent(t *testing.T) {
	m := newManager(t)
	repo := newRepo(t, true)
	const n = 4
	results := make([]*Worktree, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = m.Create(t.Context(), repo, "same")
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Create %d: %v", i, errs[i])
		}
		if !reflect.DeepEqual(results[i], results[0]) {
			t.Errorf("Create %d = %+v, want %+v", i, results[i], results[0])
		}
	}
	if paths := worktreePaths(t, repo); len(paths) != 2 {
		t.Errorf("worktrees = %q", paths)
	}
}

func TestInvalidKey(t *testing.T) {
	m := newManager(t)
	repo := newRepo(t, true)
	for _, key := range []string{"", ".", "..", "../x", "a/b", ".hidden", "-opt", "a b", strings.Repeat("k", 129)} {
		if _, err := m.Create(t.Context(), repo, key); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Create(%q) = %v, want ErrInvalidKey", key, err)
		}
	}
}

func TestWorktreeLeavesSourceUntouched(t *testing.T) {
	m := newManager(t)
	repo := newRepo(t, true)
	wt, err := m.Create(t.Context(), repo, "k")
	if err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, wt.Path, "new.txt", "made in the worktree\n")
	testutil.WriteFile(t, wt.Path, "a.txt", "changed\n")
	if exists(filepath.Join(repo, "new.txt")) {
		t.Error("new.txt appeared in the source")
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(b) != "one\n" {
		t.Errorf("source a.txt = %q", b)
	}
	if st := testutil.Git(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("source status = %q", st)
	}
}

func TestDirty(t *testing.T) {
	m := newManager(t)
	repo := newRepo(t, true)
	wt, err := m.Create(t.Context(), repo, "k")
	if err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(strings.TrimSpace(testutil.Git(t, wt.Path, "rev-parse", "--absolute-git-dir")), "index")
	check := func(step string, want bool) {
		t.Helper()
		got, err := m.Dirty(t.Context(), wt)
		if err != nil {
			t.Fatalf("%s: Dirty: %v", step, err)
		}
		if got != want {
			t.Errorf("%s: Dirty = %v, want %v", step, got, want)
		}
	}

	check("fresh", false)
	testutil.WriteFile(t, wt.Path, "ignored.log", "noise\n")
	check("ignored file", false)
	if err := os.Mkdir(filepath.Join(wt.Path, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	check("empty directory", false)

	// Touched but unchanged: stat-dirty only. Dirty must compare content
	// and leave the index alone.
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(wt.Path, "a.txt"), future, future); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(index)
	check("touched", false)
	if after, _ := os.ReadFile(index); string(after) != string(before) {
		t.Error("Dirty rewrote the index")
	}

	testutil.WriteFile(t, wt.Path, "a.txt", "two\n")
	check("modified", true)
	testutil.Git(t, wt.Path, "add", "a.txt")
	check("staged", true)
	testutil.Git(t, wt.Path, "commit", "-q", "-m", "in worktree")
	check("committed", false)
	testutil.WriteFile(t, wt.Path, "dir/untracked.txt", "x\n")
	check("untracked", true)
	if err := os.RemoveAll(filepath.Join(wt.Path, "dir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(wt.Path, "a.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	check("mode change", true)
}

func TestRemove(t *testing.T) {
	m := newManager(t)
	repo := newRepo(t, true)
	wt, err := m.Create(t.Context(), repo, "k")
	if err != nil {
		t.Fatal(err)
	}

	for _, step := range []struct {
		name string
		do   func()
	}{
		{"modified", func() { testutil.WriteFile(t, wt.Path, "a.txt", "dirty\n") }},
		{"untracked", func() {
			testutil.Git(t, wt.Path, "checkout", "--", "a.txt")
			testutil.WriteFile(t, wt.Path, "new.txt", "x\n")
		}},
	} {
		step.do()
		if err := m.Remove(t.Context(), repo, wt); !errors.Is(err, ErrDirty) {
			t.Fatalf("%s: Remove = %v, want ErrDirty", step.name, err)
		}
		if !exists(filepath.Join(wt.Path, "a.txt")) || len(worktreePaths(t, repo)) != 2 || len(devspaceRefs(t, repo)) != 2 {
			t.Fatalf("%s: Remove of a dirty worktree removed something", step.name)
		}
	}

	if err := os.Remove(filepath.Join(wt.Path, "new.txt")); err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, wt.Path, "kept.log", "ignored files go with the worktree\n")
	if err := m.Remove(t.Context(), repo, wt); err != nil {
		t.Fatalf("Remove clean: %v", err)
	}
	if exists(wt.Path) {
		t.Error("worktree directory remains")
	}
	if b := testutil.Git(t, repo, "branch", "--list", "devspace/*"); b != "" {
		t.Errorf("branches remain: %q", b)
	}
	if refs := devspaceRefs(t, repo); len(refs) != 0 {
		t.Errorf("refs remain: %q", refs)
	}
	if paths := worktreePaths(t, repo); !slices.Equal(paths, []string{repo}) {
		t.Errorf("worktrees = %q", paths)
	}
	if _, err := m.Get(t.Context(), repo, "k"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Remove = %v, want ErrNotFound", err)
	}
	if err := m.Remove(t.Context(), repo, wt); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Remove = %v, want ErrNotFound", err)
	}
}

// halfCreate leaves what a Create killed inside `git worktree add` leaves:
// its marker, both refs, and a worktree Git still marks as initializing.
func halfCreate(t *testing.T, m *Manager, repo, key string) *Worktree {
	t.Helper()
	wt := m.layout(repo, key)
	if err := os.MkdirAll(filepath.Dir(wt.Path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(creatingMarker(wt.Path), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	head := strings.TrimSpace(testutil.Git(t, repo, "rev-parse", "HEAD"))
	testutil.Git(t, repo, "update-ref", baseRefPrefix+shortOf(wt.Branch), head)
	testutil.Git(t, repo, "update-ref", "refs/heads/"+wt.Branch, head)
	testutil.Git(t, repo, "worktree", "add", "-q", "--lock", "--reason", "initializing", wt.Path, wt.Branch)
	return wt
}

func TestPruneAfterCrash(t *testing.T) {
	m := newManager(t)
	repo := newRepo(t, true)
	head := strings.TrimSpace(testutil.Git(t, repo, "rev-parse", "HEAD"))

	done, err := m.Create(t.Context(), repo, "done")
	if err != nil {
		t.Fatal(err)
	}
	half := halfCreate(t, m, repo, "half")
	if _, err := m.Get(t.Context(), repo, "half"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of a half-created worktree = %v, want ErrNotFound", err)
	}

	// Refs only: killed between update-ref and worktree add.
	refsOnly := m.layout(repo, "refs-only")
	testutil.Git(t, repo, "update-ref", baseRefPrefix+shortOf(refsOnly.Branch), head)
	testutil.Git(t, repo, "update-ref", "refs/heads/"+refsOnly.Branch, head)
	// A base ref alone: killed before the branch.
	baseOnly := m.layout(repo, "base-only")
	testutil.Git(t, repo, "update-ref", baseRefPrefix+shortOf(baseOnly.Branch), head)
	// A branch that moved past its base, its worktree gone: kept.
	moved := m.layout(repo, "moved")
	testutil.Git(t, repo, "update-ref", baseRefPrefix+shortOf(moved.Branch), head)
	testutil.Git(t, repo, "commit", "-q", "--allow-empty", "-m", "work")
	testutil.Git(t, repo, "update-ref", "refs/heads/"+moved.Branch, strings.TrimSpace(testutil.Git(t, repo, "rev-parse", "HEAD")))
	// A registered worktree whose directory vanished.
	gone, err := m.Create(t.Context(), repo, "gone")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(gone.Path); err != nil {
		t.Fatal(err)
	}
	// Directories Git does not know: an empty one (killed right after
	// mkdir) and one with content (kept).
	repoDir := filepath.Dir(done.Path)
	if err := os.Mkdir(filepath.Join(repoDir, "empty"), 0o700); err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, repoDir, "stray/file.txt", "keep me\n")

	// Check (doctor) sees what a crash left and changes nothing.
	report, err := m.Check(t.Context(), repo)
	if err != nil {
		t.Fatal(err)
	}
	if report.Managed != 1 || !slices.Contains(report.Unfinished, half.Path) || !slices.Contains(report.Unfinished, gone.Path) ||
		!slices.Contains(report.Unfinished, filepath.Join(repoDir, "empty")) ||
		!slices.Contains(report.Unfinished, "refs/devspace/base/"+shortOf(baseOnly.Branch)) {
		t.Errorf("Check before Prune = %+v", report)
	}
	if !exists(filepath.Join(repoDir, "empty")) || !exists(half.Path) {
		t.Error("Check removed something")
	}

	removed, err := m.Prune(t.Context(), repo)
	if err != nil {
		t.Fatal(err)
	}
	if report, err := m.Check(t.Context(), repo); err != nil || report.Managed != 1 || len(report.Unfinished) != 0 {
		t.Errorf("Check after Prune = %+v, %v", report, err)
	}
	slices.Sort(removed)
	want := []string{
		"refs/devspace/base/" + shortOf(baseOnly.Branch),
		"refs/devspace/base/" + shortOf(gone.Branch),
		"refs/devspace/base/" + shortOf(half.Branch),
		"refs/devspace/base/" + shortOf(refsOnly.Branch),
		"refs/heads/" + gone.Branch,
		"refs/heads/" + half.Branch,
		"refs/heads/" + refsOnly.Branch,
		gone.Path,
		half.Path,
		filepath.Join(repoDir, "empty"),
	}
	slices.Sort(want)
	if !slices.Equal(removed, want) {
		t.Errorf("Prune removed\n got: %q\nwant: %q", removed, want)
	}
	if paths := worktreePaths(t, repo); !slices.Equal(paths, []string{repo, done.Path}) {
		t.Errorf("worktrees after Prune = %q", paths)
	}
	wantRefs := []string{
		"refs/devspace/base/" + shortOf(done.Branch),
		"refs/devspace/base/" + shortOf(moved.Branch),
		"refs/heads/" + done.Branch,
		"refs/heads/" + moved.Branch,
	}
	slices.Sort(wantRefs)
	if refs := devspaceRefs(t, repo); !slices.Equal(refs, wantRefs) {
		t.Errorf("refs after Prune\n got: %q\nwant: %q", refs, wantRefs)
	}
	if exists(half.Path) || !exists(filepath.Join(repoDir, "stray", "file.txt")) {
		t.Error("Prune removed the wrong directories")
	}
	if again, err := m.Prune(t.Context(), repo); err != nil || len(again) != 0 {
		t.Errorf("second Prune = %q, %v", again, err)
	}

	// The finished worktree is untouched, and the half one can be created.
	if got, err := m.Get(t.Context(), repo, "done"); err != nil || !reflect.DeepEqual(got, done) {
		t.Errorf("Get(done) = %+v, %v", got, err)
	}
	if _, err := m.Create(t.Context(), repo, "half"); err != nil {
		t.Errorf("Create after Prune: %v", err)
	}
	// A moved branch blocks its key rather than losing the commit.
	if _, err := m.Create(t.Context(), repo, "moved"); !errors.Is(err, ErrConflict) {
		t.Errorf("Create over a moved branch = %v, want ErrConflict", err)
	}
	if _, err := m.Create(t.Context(), repo, "stray"); !errors.Is(err, ErrConflict) {
		t.Errorf("Create over a non-empty directory = %v, want ErrConflict", err)
	}
}

func TestCreateRecoversWithoutPrune(t *testing.T) {
	m := newManager(t)
	repo := newRepo(t, true)
	half := halfCreate(t, m, repo, "k")
	testutil.WriteFile(t, half.Path, "partial.txt", "left by the killed checkout\n")
	wt, err := m.Create(t.Context(), repo, "k")
	if err != nil {
		t.Fatal(err)
	}
	if wt.Path != half.Path || exists(filepath.Join(wt.Path, "partial.txt")) {
		t.Errorf("Create = %+v; partial checkout kept: %v", wt, exists(filepath.Join(wt.Path, "partial.txt")))
	}
	if paths := worktreePaths(t, repo); len(paths) != 2 {
		t.Errorf("worktrees = %q", paths)
	}
	if got := lines(testutil.Git(t, repo, "worktree", "list", "--porcelain")); slices.ContainsFunc(got, func(l string) bool { return strings.HasPrefix(l, "locked") }) {
		t.Errorf("worktree still locked: %q", got)
	}
}

func TestCreateForeignBranch(t *testing.T) {
	m := newManager(t)
	repo := newRepo(t, true)
	wt := m.layout(repo, "k")
	testutil.Git(t, repo, "branch", wt.Branch)
	if _, err := m.Create(t.Context(), repo, "k"); !errors.Is(err, ErrConflict) {
		t.Fatalf("Create = %v, want ErrConflict", err)
	}
	if refs := devspaceRefs(t, repo); !slices.Equal(refs, []string{"refs/heads/" + wt.Branch}) {
		t.Errorf("refs = %q", refs)
	}
	if exists(wt.Path) || len(worktreePaths(t, repo)) != 1 {
		t.Error("Create left something behind")
	}
}

// TestCreateFailureCleansUp makes `git worktree add` register the worktree
// and then fail, through a wrapper around git.
func TestCreateFailureCleansUp(t *testing.T) {
	bin := t.TempDir()
	wrapper := filepath.Join(bin, "git-wrapper")
	script := "#!/bin/sh\nfor a; do if [ \"$a\" = add ]; then git \"$@\"; exit 3; fi; done\nexec git \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := New(Options{Dir: filepath.Join(t.TempDir(), "wt"), Git: gitrepo.NewGit(gitrepo.GitOptions{Git: wrapper})})
	if err != nil {
		t.Fatal(err)
	}
	repo := newRepo(t, true)
	if _, err := m.Create(t.Context(), repo, "k"); !errors.Is(err, gitrepo.ErrGit) {
		t.Fatalf("Create = %v, want gitrepo.ErrGit", err)
	}
	if paths := worktreePaths(t, repo); len(paths) != 1 {
		t.Errorf("worktrees = %q", paths)
	}
	if refs := devspaceRefs(t, repo); len(refs) != 0 {
		t.Errorf("refs = %q", refs)
	}
	if exists(m.layout(repo, "k").Path) {
		t.Error("directory remains")
	}
}

func TestInheritedGitEnvironmentIgnored(t *testing.T) {
	m := newManager(t)
	repo := newRepo(t, true)
	other := newRepo(t, true)
	t.Setenv("GIT_DIR", filepath.Join(other, ".git"))
	t.Setenv("GIT_WORK_TREE", other)
	t.Setenv("GIT_INDEX_FILE", filepath.Join(other, ".git", "index"))
	t.Setenv("GIT_COMMON_DIR", filepath.Join(other, ".git"))
	m2, err := New(Options{Dir: filepath.Join(t.TempDir(), "wt")}) // captures the environment now
	if err != nil {
		t.Fatal(err)
	}

	for _, m := range []*Manager{m, m2} {
		if err := m.Eligible(t.Context(), filepath.Join(repo, ".gitignore")); err == nil {
			t.Error("Eligible accepted a file")
		}
		if err := m.Eligible(t.Context(), t.TempDir()); !errors.Is(err, ErrNotRepository) {
			t.Errorf("Eligible(plain directory) = %v, want ErrNotRepository", err)
		}
		wt, err := m.Create(t.Context(), repo, "k")
		if err != nil {
			t.Fatal(err)
		}
		testutil.WriteFile(t, wt.Path, "x.txt", "x\n")
		if dirty, err := m.Dirty(t.Context(), wt); err != nil || !dirty {
			t.Errorf("Dirty = %v, %v, want true", dirty, err)
		}
		if err := os.Remove(filepath.Join(wt.Path, "x.txt")); err != nil {
			t.Fatal(err)
		}
		if err := m.Remove(t.Context(), repo, wt); err != nil {
			t.Errorf("Remove: %v", err)
		}
	}
	if paths := worktreePaths(t, other); len(paths) != 1 {
		t.Errorf("other repository got worktrees: %q", paths)
	}
	if refs := devspaceRefs(t, other); len(refs) != 0 {
		t.Errorf("other repository got refs: %q", refs)
	}
	if paths := worktreePaths(t, repo); len(paths) != 1 {
		t.Errorf("worktrees = %q", paths)
	}
}

func TestReviewOfWorktree(t *testing.T) {
	m := newManager(t)
	repo := newRepo(t, true)
	wt, err := m.Create(t.Context(), repo, "k")
	if err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, wt.Path, "a.txt", "one\nmore\n")
	testutil.WriteFile(t, wt.Path, "new.txt", "fresh\n")
	r := review.New(review.Options{})
	if _, err := r.Changes(t.Context(), wt.Path); !errors.Is(err, gitrepo.ErrRepositoryUnsafe) {
		t.Errorf("Changes on a managed worktree without its source = %v, want gitrepo.ErrRepositoryUnsafe", err)
	}
	c, err := r.ChangesSince(t.Context(), wt.Path, wt.BaseCommit, repo)
	if err != nil {
		t.Fatalf("ChangesSince on a managed worktree: %v", err)
	}
	var paths []string
	for _, f := range c.Files {
		paths = append(paths, f.Path+":"+f.Status)
	}
	if !slices.Equal(paths, []string{"a.txt:modified", "new.txt:untracked"}) || !strings.Contains(c.Diff, "+more\n") {
		t.Errorf("Changes files = %q, diff:\n%s", paths, c.Diff)
	}
	if src, err := r.Changes(t.Context(), repo); err != nil || len(src.Files) != 0 {
		t.Errorf("source Changes = %+v, %v", src, err)
	}

	// Committed on the branch: kept by ChangesSince.
	testutil.Git(t, wt.Path, "add", "-A")
	testutil.Git(t, wt.Path, "commit", "-q", "-m", "work")
	since, err := r.ChangesSince(t.Context(), wt.Path, wt.BaseCommit, repo)
	if err != nil {
		t.Fatal(err)
	}
	paths = nil
	for _, f := range since.Files {
		paths = append(paths, f.Path+":"+f.Status)
	}
	if !slices.Equal(paths, []string{"a.txt:modified", "new.txt:added"}) {
		t.Errorf("ChangesSince files = %q", paths)
	}
}
