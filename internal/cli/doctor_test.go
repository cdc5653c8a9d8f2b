package cli_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/sandbox"
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
	// The start prunes in the background, right after it listens: wait
	// until doctor reports that prune.
	waitPrune := func(want string) (code int, out string) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			code, out, _ = run(t, envOf(env), "doctor")
			if strings.Contains(out, want) {
				return code, out
			}
			if time.Now().After(deadline) {
				t.Fatalf("doctor never reported %q:\n%s", want, out)
			}
		}
	}
	waitPrune("pruned 0 half-created worktree item(s) in 1 Project(s)")
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
	code, out = waitPrune("pruned 1 half-created worktree item(s) in 1 Project(s)")
	if _, err := os.Stat(half); !os.IsNotExist(err) {
		t.Fatalf("start did not prune it: %v", err)
	}
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
	vars := map[string]string{"DEVSPACE_STATE_DIR": missing, "DEVSPACE_PROJECTS": "p=" + projDir, "DEVSPACE_CONTROL_LISTEN": freeAddr(t)}
	code, out, _ := run(t, vars, "doctor")
	if code == 0 || strings.Count(out, "✗") != 1 || !strings.Contains(out, "✗ no DevSpace state in "+missing+": if a server runs with another DEVSPACE_STATE_DIR") ||
		strings.Contains(out, "database opens") {
		t.Fatalf("doctor on a missing state: %d\n%s", code, out)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("doctor created the state directory: %v", err)
	}
	// A directory that exists but holds nothing (made by hand, or an empty
	// volume) is the same single line, not one ✗ per missing file.
	if err := os.Mkdir(missing, 0o700); err != nil {
		t.Fatal(err)
	}
	code, out, _ = run(t, vars, "doctor")
	if code == 0 || strings.Count(out, "✗") != 1 || !strings.Contains(out, "✗ no DevSpace state in "+missing+": ") {
		t.Fatalf("doctor on an empty state directory: %d\n%s", code, out)
	}
	if entries, _ := os.ReadDir(missing); len(entries) != 0 {
		t.Fatalf("doctor wrote into the empty state directory: %v", entries)
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

// TestMissingStateNamesTheServersState (issue 19): an owner command run
// without make run's DEVSPACE_STATE_DIR used to say "run `devspace init`
// first" before anything else, and init then made a second state. The
// CLI error, doctor and init now lead with the state-directory choice,
// name a DevSpace server that answers with another state, and init refuses
// to create a second state beside it; doctor on another existing state
// warns that the server there is not this state's.
func TestMissingStateNamesTheServersState(t *testing.T) {
	server := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	missing := filepath.Join(t.TempDir(), "state")
	closed := freeAddr(t)

	// Nothing answers: one message, the state directory first, init last.
	vars := map[string]string{"DEVSPACE_STATE_DIR": missing, "DEVSPACE_CONTROL_LISTEN": closed}
	code, _, errOut := run(t, vars, "grants", "list")
	want := "devspace: no DevSpace state in " + missing + ": if a server runs with another DEVSPACE_STATE_DIR " +
		"(`make run` uses .data/state in its checkout), set it (or --state-dir); otherwise run `devspace init`\n"
	if code != 1 || errOut != want {
		t.Fatalf("grants list, nothing answering: %d\n got %q\nwant %q", code, errOut, want)
	}

	// A DevSpace server answers with another state: every path says so.
	vars["DEVSPACE_CONTROL_LISTEN"] = server.ControlAddr
	hint := "no DevSpace state in " + missing + ": a DevSpace server answers on " + server.ControlAddr + " with another state; " +
		"set DEVSPACE_STATE_DIR (or --state-dir) to the directory it serves"
	for _, args := range [][]string{{"grants", "list"}, {"projects", "list"}, {"serve"}} {
		code, _, errOut := run(t, vars, args...)
		if code != 1 || !strings.HasPrefix(errOut, "devspace: "+hint) || strings.Count(errOut, "\n") != 1 ||
			strings.Contains(errOut, "devspace init") {
			t.Errorf("%v with a server of another state: %d\n%s", args, code, errOut)
		}
	}
	code, out, _ := run(t, vars, "doctor")
	if code == 0 || strings.Count(out, "✗") != 1 || !strings.Contains(out, "✗ "+hint) {
		t.Errorf("doctor with a server of another state: %d\n%s", code, out)
	}
	code, out, errOut = run(t, vars, "init")
	if code != 1 || strings.Contains(out, "Owner password") ||
		!strings.Contains(errOut, "a DevSpace server answers on "+server.ControlAddr+" with another state") ||
		!strings.Contains(errOut, "instead of creating a second state in "+missing) {
		t.Errorf("init beside a server of another state: %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("refused init left a state directory: %v", err)
	}

	// Another, existing state: doctor warns that the server is not its.
	vars["DEVSPACE_CONTROL_LISTEN"] = closed
	if code, _, errOut := run(t, vars, "init"); code != 0 {
		t.Fatalf("init with nothing answering: %d %s", code, errOut)
	}
	vars["DEVSPACE_CONTROL_LISTEN"] = server.ControlAddr
	_, out, _ = run(t, vars, "doctor")
	if !strings.Contains(out, "! a DevSpace server answers on "+server.ControlAddr+" but serves another state, not "+missing) ||
		strings.Contains(out, "serves this state") {
		t.Errorf("doctor on another existing state:\n%s", out)
	}
}

// TestDoctorReportsChangedModes: Landlock has no right for chmod, so a
// command may change the mode of the output or scratch directory (every
// later command then fails to start); doctor names it and the remedy.
func TestDoctorReportsChangedModes(t *testing.T) {
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	env.Stop()
	if code, out, _ := run(t, envOf(env), "doctor"); strings.Contains(out, "not 700") {
		t.Fatalf("doctor on a fresh state: %d\n%s", code, out)
	}
	out := filepath.Join(env.StateDir, "output")
	if err := os.Chmod(out, 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(out, 0o700)
	if code, text, _ := run(t, envOf(env), "doctor"); code == 0 || !strings.Contains(text, "✗ "+out+" has mode ----------, not 700") {
		t.Fatalf("doctor with the output directory at mode 000: %d\n%s", code, text)
	}
	// The tool homes' directory (issue 34) is checked the same way.
	tools := envOf(env)["DEVSPACE_TOOLS_DIR"]
	if err := os.MkdirAll(tools, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	if code, text, _ := run(t, envOf(env), "doctor"); code == 0 || !strings.Contains(text, "✗ "+tools+" has mode -rwxr-xr-x, not 700") {
		t.Fatalf("doctor with the tools directory at mode 755: %d\n%s", code, text)
	}
}

// TestDoctorSandbox: doctor, run as the CLI against a real state, reports
// the kernel's Landlock, and flags DEVSPACE_COMMAND_SANDBOX=off as a risk
// while process:execute is offered.
func TestDoctorSandbox(t *testing.T) {
	st := sandbox.Probe()
	if !st.Available() {
		t.Skip("no Landlock on this kernel")
	}
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	vars := envOf(env)
	vars["DEVSPACE_OAUTH_SCOPES"] = "project:read project:write process:execute"
	code, out, _ := run(t, vars, "doctor")
	f := st.Features()
	f.UnixGate = sandbox.GateAvailable()
	if want := "✓ commands are confined by Landlock ABI " + strconv.Itoa(st.ABI) + " and a system call policy (rules: " + f.String() + ")\n"; code != 0 || !strings.Contains(out, want) {
		t.Errorf("doctor: %d, want %q in\n%s", code, want, out)
	}
	vars["DEVSPACE_COMMAND_SANDBOX"] = "off"
	code, out, _ = run(t, vars, "doctor")
	if want := "! DEVSPACE_COMMAND_SANDBOX=off: RISK, commands run with the server's own rights"; code != 0 || !strings.Contains(out, want) || strings.Contains(out, "confined by Landlock") {
		t.Errorf("doctor with the sandbox off: %d, want %q in\n%s", code, want, out)
	}
}
