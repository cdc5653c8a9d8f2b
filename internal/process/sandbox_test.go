package process

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/sandbox"
)

// appliance is the layout of issue 16's takeover: a state directory with
// auth.json, the database and grant B's retained output; Projects alpha
// (grant A) and beta (grant B).
type appliance struct {
	state, alpha, beta string
	m                  *Manager
}

func newAppliance(t *testing.T, opts Options) *appliance {
	t.Helper()
	if !sandbox.Probe().Available() && !opts.Sandbox.Off {
		t.Skip("no Landlock on this kernel")
	}
	a := &appliance{state: t.TempDir(), alpha: t.TempDir(), beta: t.TempDir()}
	for path, body := range map[string]string{
		filepath.Join(a.state, "auth.json"):             `{"masterKey":"SECRET-auth"}`,
		filepath.Join(a.state, "devspace.db"):           "SECRET-db",
		filepath.Join(a.state, "output", "b.out"):       "SECRET-output-of-B",
		filepath.Join(a.alpha, "README"):                "alpha readme",
		filepath.Join(a.beta, "secret.txt"):             "SECRET-beta",
		filepath.Join(a.alpha, "sub", "nested", "file"): "nested",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	opts.SpoolDir = filepath.Join(a.state, "output")
	opts.Sandbox.ScratchDir = filepath.Join(a.state, "scratch")
	a.m = newTestManager(t, opts, false)
	return a
}

// run runs a shell command of group (execution) under root and returns
// its exit code and output.
func (a *appliance) run(t *testing.T, group, root string, readOnly bool, cmd string) (int, string) {
	t.Helper()
	p, err := a.m.Start(context.Background(), group, Spec{Shell: true, Command: cmd, Dir: root, Root: root,
		ReadOnly: readOnly, Env: BaseEnv(os.Environ()), Timeout: 90 * time.Second})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	st := waitExit(t, p, 90*time.Second)
	waitDone(t, p, 10*time.Second)
	out := string(p.Head(1 << 20))
	if st.ExitCode == nil {
		return -1, out
	}
	return *st.ExitCode, out
}

// denied reports whether output carries the error of a refused access.
func denied(out string) bool {
	return strings.Contains(out, "Permission denied") || strings.Contains(out, "Operation not permitted")
}

// TestSandboxEscapes replays issue 16's takeover from a command of grant A
// on alpha. Every attack has its positive twin (the same operation where
// it is allowed), so a sandbox that blocks everything fails the test too.
func TestSandboxEscapes(t *testing.T) {
	a := newAppliance(t, Options{})
	if a.m.Sandbox().Mode != SandboxLandlock {
		t.Fatalf("sandbox mode %q", a.m.Sandbox().Mode)
	}
	// Grant B's command runs on beta with a secret in its environment.
	env := MergeEnv(BaseEnv(os.Environ()), map[string]string{"B_SECRET": "SECRET-env-of-B"})
	b, err := a.m.Start(context.Background(), "execB", Spec{Shell: true, Command: "sleep 1000", Dir: a.beta, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Kill("close") })
	server := strconv.Itoa(os.Getpid())
	bPID := strconv.Itoa(b.pid)

	cases := []struct {
		name     string
		readOnly bool
		cmd      string
		wantOK   bool
	}{
		{"read auth.json", false, "cat " + filepath.Join(a.state, "auth.json"), false},
		{"read the database", false, "cat " + filepath.Join(a.state, "devspace.db"), false},
		{"read B's retained output", false, "cat " + filepath.Join(a.state, "output", "b.out"), false},
		{"list the state directory", false, "ls " + a.state, false},
		{"read beta", false, "cat " + filepath.Join(a.beta, "secret.txt"), false},
		{"read alpha (positive)", false, "cat " + filepath.Join(a.alpha, "README"), true},
		{"read the system (positive)", false, "cat /etc/passwd >/dev/null", true},
		{"server environ", false, "cat /proc/" + server + "/environ", false},
		{"B's command environ", false, "cat /proc/" + bPID + "/environ", false},
		{"B's command memory", false, "head -c1 /proc/" + bPID + "/mem", false},
		{"server fds", false, "ls -l /proc/" + server + "/fd/", false},
		{"server maps", false, "cat /proc/" + server + "/maps", false},
		{"B's command cmdline", false, "cat /proc/" + bPID + "/cmdline", false},
		{"own environ (positive)", false, "cat /proc/$$/environ | tr '\\0' '\\n' | grep -q '^PATH='", true},
		{"system /proc files (positive)", false, "cat /proc/cpuinfo /proc/meminfo /proc/sys/kernel/ostype >/dev/null", true},
		{"signal the server", false, "kill -0 " + server, false},
		{"signal B's command", false, "kill -0 " + bPID, false},
		{"kill the supervisor", false, "kill -9 $PPID", false},
		{"signal own child (positive)", false, "sleep 5 & kill -0 $! && kill $!", true},
		{"write beta", false, "echo x > " + filepath.Join(a.beta, "pwned"), false},
		{"write the state directory", false, "echo x > " + filepath.Join(a.state, "pwned"), false},
		{"write /tmp", false, "echo x > /tmp/devspace-sandbox-test-" + randomToken(4), false},
		{"write the cgroup tree", false, "echo $$ > /sys/fs/cgroup/cgroup.procs", false},
		{"workspaceWrite writes alpha (positive)", false, "echo x > new.txt && mkdir -p d/e && mv new.txt d/e/ && rm -r d", true},
		{"readOnly cannot write alpha", true, "echo x > new.txt", false},
		{"readOnly cannot remove in alpha", true, "rm README", false},
		{"readOnly reads alpha (positive)", true, "cat README sub/nested/file", true},
		{"scratch is HOME and TMPDIR (positive)", true, `test "$HOME" = "$TMPDIR" && echo x > "$HOME/f" && mkdir "$TMPDIR/d" && cat "$HOME/f"`, true},
		{"dev null (positive)", true, "echo x > /dev/null && head -c1 /dev/urandom >/dev/null", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out := a.run(t, "execA", a.alpha, c.readOnly, c.cmd)
			if c.wantOK {
				if code != 0 {
					t.Errorf("allowed operation failed (exit %d): %s", code, out)
				}
				return
			}
			if code == 0 || !denied(out) {
				t.Errorf("attack was not refused by the kernel (exit %d): %q", code, out)
			}
			if strings.Contains(out, "SECRET") {
				t.Errorf("secret leaked: %q", out)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(a.beta, "pwned")); err == nil {
		t.Error("beta was written")
	}
	if b.State().Status != StatusRunning {
		t.Errorf("B's command was disturbed: %+v", b.State())
	}
}

// TestSandboxOtherScratch: one execution cannot reach another's scratch
// directory, and a closed execution's scratch directory is removed.
func TestSandboxOtherScratch(t *testing.T) {
	a := newAppliance(t, Options{})
	code, out := a.run(t, "execB", a.beta, false, `echo SECRET-scratch-B > "$HOME/note"; echo "$HOME"`)
	if code != 0 {
		t.Fatalf("B: %d %s", code, out)
	}
	home := strings.TrimSpace(out)
	code, out = a.run(t, "execA", a.alpha, false, "cat "+filepath.Join(home, "note"))
	if code == 0 || !denied(out) {
		t.Errorf("A read B's scratch (exit %d): %q", code, out)
	}
	a.m.KillGroup("execB", "close")
	if _, err := os.Stat(home); !os.IsNotExist(err) {
		t.Errorf("B's scratch directory survived its execution: %v", err)
	}
}

// TestSandboxNetwork: with DenyNetwork a TCP connect to a loopback
// listener fails; without it the same connect works.
func TestSandboxNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	cmd := "exec 3<>/dev/tcp/127.0.0.1/" + port + " && echo connected"
	for _, deny := range []bool{false, true} {
		a := newAppliance(t, Options{Sandbox: SandboxOptions{DenyNetwork: deny}})
		if deny && !a.m.Sandbox().NetworkEnforced {
			t.Skip("the kernel's Landlock has no TCP rules")
		}
		code, out := a.run(t, "execA", a.alpha, false, cmd)
		if deny && (code == 0 || !denied(out)) {
			t.Errorf("network deny: connect was not refused (exit %d): %q", code, out)
		}
		if !deny && (code != 0 || !strings.Contains(out, "connected")) {
			t.Errorf("network allow: connect failed (exit %d): %q", code, out)
		}
	}
}

// TestSandboxTTY: a confined command under a pty can use its own
// terminal.
func TestSandboxTTY(t *testing.T) {
	a := newAppliance(t, Options{})
	p, err := a.m.Start(context.Background(), "execA", Spec{Shell: true, Command: "tty && echo hi > /dev/tty && echo via-tty",
		Dir: a.alpha, TTY: true, Env: BaseEnv(os.Environ()), CloseStdin: true})
	if err != nil {
		t.Fatal(err)
	}
	st := waitExit(t, p, 10*time.Second)
	waitDone(t, p, 10*time.Second)
	out := string(p.Head(1 << 20))
	if st.ExitCode == nil || *st.ExitCode != 0 || !strings.Contains(out, "via-tty") || !strings.Contains(out, "/dev/pts/") {
		t.Errorf("tty command: %+v %q", st, out)
	}
	if p.Sandbox() == "" {
		t.Error("the command does not report its sandbox")
	}
}

// TestSandboxUnavailable: with Landlock forced unavailable commands are
// refused (fail closed), unless the owner turned the sandbox off.
func TestSandboxUnavailable(t *testing.T) {
	none := func() sandbox.Status { return sandbox.Status{Reason: "forced by the test"} }
	m := newTestManager(t, Options{Sandbox: SandboxOptions{Probe: none}}, false)
	if m.Sandbox().Mode != SandboxUnavailable {
		t.Fatalf("mode %q", m.Sandbox().Mode)
	}
	if _, err := m.Start(context.Background(), "g", Spec{Program: "true", Dir: t.TempDir()}); !errors.Is(err, ErrSandboxUnavailable) {
		t.Fatalf("Start = %v, want ErrSandboxUnavailable", err)
	}
	off := newTestManager(t, Options{Sandbox: SandboxOptions{Probe: none, Off: true}}, false)
	p := startT(t, off, Spec{Program: "true"})
	if st := waitExit(t, p, 10*time.Second); *st.ExitCode != 0 || p.Sandbox() != "" {
		t.Errorf("sandbox off: %+v rules %q", st, p.Sandbox())
	}
}
