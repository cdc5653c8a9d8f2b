package app_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/worktree"
)

// TestDoctorReportsWorktrees: doctor lists each Project's managed
// worktrees and what a crash left half-created — without removing it,
// also while the server runs — and the next start's prune.
func TestDoctorReportsWorktrees(t *testing.T) {
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	root := env.Roots["alpha"]
	for _, args := range [][]string{{"init", "-q"}, {"commit", "-q", "--allow-empty", "-m", "init"}} {
		cmd := exec.Command("git", append([]string{"-C", root, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	env.Restart() // the Project is a repository now
	m, err := worktree.New(worktree.Options{Dir: filepath.Join(env.StateDir, "worktrees")})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := m.Create(context.Background(), root, "exec1")
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ := run(t, envOf(env), "doctor")
	if code != 0 || !strings.Contains(out, "✓ Project alpha: 1 managed worktree(s), none half-created") ||
		!strings.Contains(out, "pruned 0 half-created worktree item(s) in 1 Project(s)") ||
		!strings.Contains(out, "✓ retained command output: 0 record(s), 0.0 MiB") {
		t.Fatalf("doctor: %d\n%s", code, out)
	}

	// A crash right after `mkdir` leaves an empty directory.
	half := filepath.Join(filepath.Dir(wt.Path), "exec2")
	if err := os.Mkdir(half, 0o700); err != nil {
		t.Fatal(err)
	}
	code, out, _ = run(t, envOf(env), "doctor")
	if code != 0 || !strings.Contains(out, "! Project alpha: 1 managed worktree(s); 1 half-created item(s) left by a crash") ||
		!strings.Contains(out, half) {
		t.Fatalf("doctor with a half-created worktree: %d\n%s", code, out)
	}
	if _, err := os.Stat(half); err != nil {
		t.Fatal("doctor removed it")
	}
	env.Restart()
	if _, err := os.Stat(half); !os.IsNotExist(err) {
		t.Fatalf("start did not prune it: %v", err)
	}
	code, out, _ = run(t, envOf(env), "doctor")
	if code != 0 || !strings.Contains(out, "none half-created") || !strings.Contains(out, "pruned 1 half-created worktree item(s) in 1 Project(s)") {
		t.Fatalf("doctor after the prune: %d\n%s", code, out)
	}
}

// TestDoctorOnlyLooks: on a missing state, doctor says so in one line and
// creates nothing (it used to create the directory and a database while
// printing "no such file"); on an existing state it changes no byte of the
// state directory.
func TestDoctorOnlyLooks(t *testing.T) {
	projDir := t.TempDir()
	missing := filepath.Join(t.TempDir(), "state")
	code, out, _ := run(t, map[string]string{"DEVSPACE_STATE_DIR": missing, "DEVSPACE_PROJECTS": "p=" + projDir}, "doctor")
	if code == 0 || strings.Count(out, "✗") != 1 || !strings.Contains(out, "no DevSpace state in "+missing+": run `devspace init`") ||
		strings.Contains(out, "database opens") {
		t.Fatalf("doctor on a missing state: %d\n%s", code, out)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("doctor created the state directory: %v", err)
	}

	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	if _, out, _ := run(t, envOf(env), "doctor"); !strings.Contains(out, "a DevSpace server answers on") {
		t.Fatalf("doctor with the server up:\n%s", out)
	}
	env.Stop()
	before := snapshotDir(t, env.StateDir)
	if code, out, _ := run(t, envOf(env), "doctor"); !strings.Contains(out, "database opens") || !strings.Contains(out, "this state is not being served") {
		t.Fatalf("doctor: %d\n%s", code, out)
	}
	if after := snapshotDir(t, env.StateDir); after != before {
		t.Fatalf("doctor changed the state directory:\nbefore %s\nafter  %s", before, after)
	}
}

// snapshotDir renders every file below dir with its size and content hash.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(fmt.Sprintf("%s:%x ", rel, sha256.Sum256(data)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestProjectsListAsksTheServer: the owner's shell often lacks the
// server's DEVSPACE_PROJECTS; projects list asks the running server and
// says so, and falls back to the state directory (saying that) when none
// answers. A missing state names its directory and does not just send the
// owner to create a second one.
func TestProjectsListAsksTheServer(t *testing.T) {
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	vars := envOf(env)
	delete(vars, "DEVSPACE_PROJECTS")
	code, out, errOut := run(t, vars, "projects", "list")
	if code != 0 || !strings.Contains(out, "alpha") || !strings.Contains(errOut, "from the running server") {
		t.Fatalf("projects list with the server up: %d\n%s\n%s", code, out, errOut)
	}
	env.Stop()
	code, out, errOut = run(t, vars, "projects", "list")
	if code != 0 || strings.Contains(out, "alpha") || !strings.Contains(errOut, "no server answered") {
		t.Fatalf("projects list with the server down: %d\n%s\n%s", code, out, errOut)
	}
	vars["DEVSPACE_STATE_DIR"] = filepath.Join(t.TempDir(), "elsewhere")
	code, _, errOut = run(t, vars, "grants", "list")
	if code == 0 || !strings.Contains(errOut, "no DevSpace state in "+vars["DEVSPACE_STATE_DIR"]) || !strings.Contains(errOut, "DEVSPACE_STATE_DIR") {
		t.Fatalf("grants list without state: %d\n%s", code, errOut)
	}
}
