//go:build linux

package gitrepo

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/devspace-dev/devspace/internal/process"
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
func newConfiner(t testing.TB) Confiner { return testutil.Confiner(t) }

// TestConfinedGitRunsRepositoryCodeConfined: a filter the repository
// configures after the check (a command can write .git/config while a
// review runs) runs in DevSpace's Git. Confined, it can read nothing
// outside the repository and write nothing at all (Git.Run, and
// Git.RunCapped, a review's); unconfined, the twin shows the filter really
// ran and read the secret.
func TestConfinedGitRunsRepositoryCodeConfined(t *testing.T) {
	confine := newConfiner(t)
	secret := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(secret, []byte("SECRET-master-key"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	dir := testutil.NewRepo(t)
	testutil.WriteFile(t, dir, "a.txt", "one\n")
	testutil.WriteFile(t, dir, ".gitattributes", "a.txt filter=x\n")
	testutil.CommitAll(t, dir)
	testutil.WriteFile(t, dir, "a.txt", "two\n")
	f, err := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The filter copies the secret out of the repository, into the work
	// tree and into the metadata, then passes its input through.
	fmt.Fprintf(f, "[filter \"x\"]\n\tclean = \"cat %s > %s/leak; cat %s > %s/leak; cat %s > %s/.git/leak; cat\"\n",
		secret, outside, secret, dir, secret, dir)
	f.Close()
	repo, err := OpenRepository(dir)
	if err != nil {
		t.Fatal(err)
	}
	leaks := func() (found []string) {
		for _, p := range []string{filepath.Join(outside, "leak"), filepath.Join(dir, "leak"), filepath.Join(dir, ".git", "leak")} {
			if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), "SECRET") {
				found = append(found, p)
			}
			_ = os.Remove(p)
		}
		return found
	}

	// Unconfined, the filter runs and reads the secret (the control).
	if _, err := NewGit(GitOptions{}).Run(t.Context(), repo, "hash-object", "a.txt"); err != nil {
		t.Fatal(err)
	}
	if got := leaks(); len(got) != 3 {
		t.Fatalf("control: the unconfined filter leaked into %v, want all three places", got)
	}

	// Confined, as Git.Run and as a review's Git.RunCapped (both
	// read-only).
	g := NewGit(GitOptions{Confine: confine})
	if _, err := g.Run(t.Context(), repo, "hash-object", "a.txt"); err != nil {
		t.Logf("confined git: %v", err) // the filter's failures may fail Git: either way nothing leaks
	}
	if got := leaks(); len(got) != 0 {
		t.Errorf("confined Git.Run: the repository's filter read the secret into %v", got)
	}
	var exit *ExitError
	if _, err := g.RunCapped(t.Context(), repo, 1<<20, "hash-object", "a.txt"); err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	if got := leaks(); len(got) != 0 {
		t.Errorf("confined Git.RunCapped: the repository's filter read the secret into %v", got)
	}
}

// TestConfinedGitStillWorks: worktree operations behave the same
// confined (reviews: review.TestConfinedChangesWork).
func TestConfinedGitStillWorks(t *testing.T) {
	confine := newConfiner(t)
	dir := testutil.NewRepo(t)
	testutil.WriteFile(t, dir, "a.txt", "one\n")
	testutil.CommitAll(t, dir)
	repo, err := OpenRepository(dir)
	if err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(t.TempDir(), "wt")
	if err := os.Mkdir(wt, 0o755); err != nil {
		t.Fatal(err)
	}
	g := NewGit(GitOptions{Confine: confine})
	if err := os.Mkdir(filepath.Join(repo.CommonDir, "worktrees"), 0o755); err != nil {
		t.Fatal(err)
	}
	writes := []string{wt, filepath.Join(repo.CommonDir, "worktrees"), filepath.Join(repo.CommonDir, "refs"), filepath.Join(repo.CommonDir, "logs")}
	if out, err := g.RunWriting(t.Context(), repo, writes, "-c", "user.name=t", "-c", "user.email=t@t", "worktree", "add", "-q", "-b", "side", wt); err != nil {
		t.Fatalf("confined worktree add: %v %s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(wt, "a.txt")); err != nil || string(b) != "one\n" {
		t.Errorf("worktree checkout: %q %v", b, err)
	}
	// Outside what it was given, even a worktree operation writes nothing.
	elsewhere := filepath.Join(t.TempDir(), "wt2")
	if err := os.Mkdir(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Run(t.Context(), repo, "worktree", "add", "-q", "-b", "side2", elsewhere); err == nil {
		t.Errorf("a confined Git.Run checked out into a directory it was not given")
	}
}

// liveWith returns the live processes (not zombies) whose command line
// holds marker.
func liveWith(marker string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.HasPrefix(b, []byte("sleep\x00"+marker)) {
			continue
		}
		st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(st, ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// TestConfinedGitLeavesNothingBehind: a filter that backgrounds a process
// (also in a process group of its own) left it running after DevSpace's
// Git returned, with the invocation's domain and rights, in the server's
// session where nothing looked (found by an attacker review). Nothing the
// program started outlives the invocation now.
func TestConfinedGitLeavesNothingBehind(t *testing.T) {
	confine := newConfiner(t)
	dir := testutil.NewRepo(t)
	testutil.WriteFile(t, dir, "a.txt", "one\n")
	testutil.WriteFile(t, dir, ".gitattributes", "a.txt filter=x\n")
	testutil.CommitAll(t, dir)
	testutil.WriteFile(t, dir, "a.txt", "two\n")
	for i, bg := range []string{"sleep %s", "set -m; sleep %s"} {
		marker := fmt.Sprintf("%d.%d", 97+i, os.Getpid())
		t.Cleanup(func() {
			for _, pid := range liveWith(marker) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		})
		if err := os.WriteFile(filepath.Join(dir, ".git", "config.x"), []byte(fmt.Sprintf(
			"[filter \"x\"]\n\tclean = \"(%s >/dev/null 2>&1 </dev/null &) ; cat\"\n", fmt.Sprintf(bg, marker))), 0o644); err != nil {
			t.Fatal(err)
		}
		testutil.Git(t, dir, "config", "include.path", "config.x")
		repo, err := OpenRepository(dir)
		if err != nil {
			t.Fatal(err)
		}
		// The control: unconfined, the process outlives Git.
		if _, err := NewGit(GitOptions{}).Run(t.Context(), repo, "hash-object", "a.txt"); err != nil {
			t.Fatal(err)
		}
		if len(liveWith(marker)) == 0 {
			t.Fatalf("%q: control: the filter left nothing running", bg)
		}
		for _, pid := range liveWith(marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if _, err := NewGit(GitOptions{Confine: confine}).RunWriting(t.Context(), repo, []string{t.TempDir()}, "hash-object", "a.txt"); err != nil {
			t.Fatal(err)
		}
		if pids := liveWith(marker); len(pids) > 0 {
			t.Errorf("%q: processes the repository's filter started outlive DevSpace's confined Git: %v", bg, pids)
		}
	}
}
