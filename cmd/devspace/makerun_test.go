package main

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// makeRunHint is the line `make run` prints for the owner's other shell
// (the Makefile's run target); the README quotes it. The walk below runs
// the owner commands exactly as it says, with `grants list` replaced by
// each command.
var makeRunHint = regexp.MustCompile(`(?m)^Owner commands for this instance \(another shell\): ` +
	`(DEVSPACE_STATE_DIR=(\S+) \./bin/devspace) grants list$`)

// TestMakeRunOwnerWalk is the README's quick start as a test: `make run`
// itself (in a scratch checkout made of links to this one, so bin/ and
// .data/ land there), then, in "another shell", the owner commands as
// its hint prints them: projects list, grants list and doctor must read
// the running server's state (and say so), including a grant approved
// over OAuth with the password the first run printed. Without the hint's
// DEVSPACE_STATE_DIR the CLI names that server rather than sending the
// owner to create a second state.
//
// The only departure from a user's shell: the listeners move to free
// ports (DEVSPACE_LISTEN, _CONTROL_LISTEN, _METRICS_LISTEN and the public
// URL, set for make and for the owner shell alike, as a profile would), so
// the test never meets another instance on 7676–7678.
func TestMakeRunOwnerWalk(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary through make")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	src, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	checkout := t.TempDir()
	for _, name := range []string{"Makefile", "go.mod", "go.sum", "cmd", "internal"} {
		if err := os.Symlink(filepath.Join(src, name), filepath.Join(checkout, name)); err != nil {
			t.Fatal(err)
		}
	}
	port, ctl := freePort(t), "127.0.0.1:"+freePort(t)
	publicURL := "http://127.0.0.1:" + port
	xdg := t.TempDir() // where the CLI looks without DEVSPACE_STATE_DIR: empty
	shell := cleanEnv("DEVSPACE_LISTEN=127.0.0.1:"+port, "DEVSPACE_CONTROL_LISTEN="+ctl,
		"DEVSPACE_METRICS_LISTEN=127.0.0.1:"+freePort(t), "DEVSPACE_ADMIN_LISTEN=127.0.0.1:"+freePort(t), "DEVSPACE_PUBLIC_BASE_URL="+publicURL, "XDG_DATA_HOME="+xdg)

	var out testutil.SyncBuffer
	mk := exec.Command("make", "--no-print-directory", "run")
	mk.Dir, mk.Env, mk.Stdout, mk.Stderr = checkout, shell, &out, &out
	mk.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // make and the server it starts, stopped together
	if err := mk.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- mk.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-mk.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-mk.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			t.Logf("make run:\n%s", out.String())
		}
	})
	deadline := time.Now().Add(5 * time.Minute) // a cold build on a busy machine
	for {
		if resp, err := http.Get(publicURL + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("make run exited: %v\n%s", err, out.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("make run did not serve within 5 minutes:\n%s", out.String())
		}
	}

	printed := out.String()
	m := makeRunHint.FindStringSubmatch(printed)
	if m == nil {
		t.Fatalf("make run printed no owner-command hint:\n%s", printed)
	}
	prefix, state := m[1], m[2]
	if want := filepath.Join(checkout, ".data", "state"); state != want {
		t.Fatalf("the hint names the state %s, want %s", state, want)
	}
	readme, err := os.ReadFile(filepath.Join(src, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if quoted := strings.ReplaceAll(m[0], checkout, "<checkout>"); !strings.Contains(string(readme), "`"+
		strings.TrimPrefix(quoted, "Owner commands for this instance (another shell): ")+"`") {
		t.Errorf("README.md does not quote make run's hint as printed: %s", quoted)
	}
	pw := regexp.MustCompile(`Owner password \(shown once[^\n]*\n\n\s+(\S[^\n]*)\n`).FindStringSubmatch(printed)
	if pw == nil {
		t.Fatalf("the first make run printed no Owner password:\n%s", printed)
	}
	_, _ = apptest.Attach(t, publicURL).Grant(apptest.Approval{Password: pw[1], Projects: []string{"sample"}})

	owner := func(command string) (int, string, string) {
		t.Helper()
		c := exec.Command("sh", "-c", prefix+" "+command)
		var stdout, stderr bytes.Buffer
		c.Dir, c.Env, c.Stdout, c.Stderr = checkout, shell, &stdout, &stderr
		err := c.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, stdout.String(), stderr.String()
	}
	fromServer := "(from the running server on " + ctl + "; state " + state + ")"
	code, stdout, stderr := owner("projects list")
	if code != 0 || !strings.Contains(stdout, "sample") || !strings.Contains(stdout, filepath.Join(checkout, ".data", "sample-project")) ||
		!strings.Contains(stderr, fromServer) {
		t.Errorf("projects list: %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = owner("grants list")
	if code != 0 || !strings.Contains(stdout, "Test Client") || !strings.Contains(stdout, "sample") ||
		!strings.Contains(stdout, "active") || !strings.Contains(stderr, fromServer) {
		t.Errorf("grants list: %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = owner("doctor")
	if code != 0 || !strings.Contains(stdout, "✓ state directory "+state+"\n") ||
		!strings.Contains(stdout, "✓ a DevSpace server answers on "+ctl+" and serves this state") ||
		!strings.Contains(stdout, "✓ the server serves 1 Project(s): sample") || strings.Contains(stdout, "no project is approved") {
		t.Errorf("doctor: %d\n%s\n%s", code, stdout, stderr)
	}

	// The same shell without the hint's DEVSPACE_STATE_DIR.
	c := exec.Command("./bin/devspace", "grants", "list")
	c.Dir, c.Env = checkout, shell
	got, err := c.CombinedOutput()
	want := "devspace: no DevSpace state in " + filepath.Join(xdg, "devspace") + ": a DevSpace server answers on " + ctl +
		" with another state; set DEVSPACE_STATE_DIR (or --state-dir) to the directory it serves"
	if err == nil || !strings.HasPrefix(string(got), want) {
		t.Errorf("grants list without the hint's state: %v\n got %s\nwant %s…", err, got, want)
	}
}

// cleanEnv is this process's environment without DevSpace's settings and
// the parent make's, with extra added: a user's shell, not the test's.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "DEVSPACE_"), name == "CGO_ENABLED", name == "XDG_DATA_HOME",
			name == "MAKEFLAGS", name == "MAKELEVEL", name == "MFLAGS":
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}
