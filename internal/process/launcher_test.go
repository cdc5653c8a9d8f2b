package process

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// warmLaunchers waits until every idle supervisor of m has its warm
// launcher (a child running __launch) and returns their PIDs, by
// supervisor PID.
func warmLaunchers(t *testing.T, m *Manager) map[int]int {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		m.mu.Lock()
		var sups []int
		for _, s := range m.idle {
			sups = append(sups, s.cmd.Process.Pid)
		}
		m.mu.Unlock()
		warm := map[int]int{}
		for _, e := range listProcs() {
			if slices.Contains(sups, e.ppid) && e.state != 'Z' && isLauncher(e.pid) {
				warm[e.ppid] = e.pid
			}
		}
		if len(sups) > 0 && len(warm) == len(sups) {
			return warm
		}
		if time.Now().After(deadline) {
			t.Fatalf("idle supervisors %v, warm launchers %v", sups, warm)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// isLauncher reports whether pid has exec'd the launcher (between fork
// and exec it still has its supervisor's command line).
func isLauncher(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && slices.Contains(strings.Split(string(b), "\x00"), LauncherCommand)
}

// fdTable returns pid's descriptors that survive an exec (not
// close-on-exec) and what they point to.
func fdTable(t *testing.T, pid int) map[int]string {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, e := range ents {
		info, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/fdinfo/" + e.Name())
		if err != nil {
			continue // closed meanwhile
		}
		var flags string
		for line := range strings.Lines(string(info)) {
			if v, ok := strings.CutPrefix(line, "flags:"); ok {
				flags = strings.TrimSpace(v)
			}
		}
		if f, err := strconv.ParseUint(flags, 8, 64); err == nil && f&syscall.O_CLOEXEC != 0 {
			continue
		}
		n, _ := strconv.Atoi(e.Name())
		out[n], _ = os.Readlink(filepath.Join(dir, e.Name()))
	}
	return out
}

// reportLine returns the value of "key=" in a command's output.
func reportLine(out, key string) string {
	for line := range strings.Lines(out) {
		if v, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), key+"="); ok {
			return v
		}
	}
	return "<missing>"
}

// TestWarmLauncher: each command is run by a launcher that was already
// waiting (its PID is one of the idle supervisors' warm launchers), and a
// warm launcher carries nothing from the command before it: its own
// descriptors are /dev/null, its supervisor's stderr and its socket, and
// the next command sees only its own stdio, working directory and
// environment. The two commands alternate pipe and pty stdio on one
// reused supervisor.
func TestWarmLauncher(t *testing.T) {
	opts := Options{IdleSupervisors: 1}
	if SandboxStateOf(opts.Sandbox).Mode == SandboxUnavailable {
		opts.Sandbox.Off = true // the warm path is the same; the domain is tested elsewhere
	}
	// A descriptor the server inherited without close-on-exec (from
	// whatever started it) reaches its supervisors; it must go no further.
	inherited, err := os.Create(filepath.Join(t.TempDir(), "inherited-by-the-server"))
	if err != nil {
		t.Fatal(err)
	}
	defer inherited.Close()
	if _, err := unix.FcntlInt(inherited.Fd(), unix.F_SETFD, 0); err != nil {
		t.Fatal(err)
	}
	m := newTestManager(t, opts, false)
	// ls runs as a plain child, so that the shell holds only its stdio
	// meanwhile (a command substitution or a pipe would add its own), and
	// not as the last command, which bash would exec in its place.
	const report = `echo pid=$$; echo cwd=$PWD; echo x=$X; echo y=$Y; echo fds:; ls /proc/$$/fd; echo end`
	cmds := []struct {
		name  string
		tty   bool
		env   map[string]string
		wantX string
		wantY string
	}{
		{name: "pipe", env: map[string]string{"X": "first"}, wantX: "first"},
		{name: "pty", tty: true, env: map[string]string{"Y": "second"}, wantY: "second"},
		{name: "pipe again", env: map[string]string{"X": "third"}, wantX: "third"},
	}
	var prevDir string
	for i, c := range cmds {
		warm := warmLaunchers(t, m)
		for sup, l := range warm {
			// The warm launcher holds nothing of the previous command:
			// the only descriptors it would pass on are /dev/null, its
			// supervisor's stderr and its socket (close-on-exec itself
			// once it runs; the Go runtime's own files are too).
			fds := fdTable(t, l)
			delete(fds, 3)
			supFDs := fdTable(t, sup)
			want := map[int]string{0: os.DevNull, 1: os.DevNull, 2: supFDs[2]}
			if diff := cmp.Diff(want, fds); diff != "" {
				t.Errorf("%s: warm launcher %d descriptors (-want +got):\n%s", c.name, l, diff)
			}
			if cwd, _ := os.Readlink("/proc/" + strconv.Itoa(l) + "/cwd"); cwd != "/" {
				t.Errorf("%s: warm launcher's working directory is %q", c.name, cwd)
			}
			if i > 0 {
				env, _ := os.ReadFile("/proc/" + strconv.Itoa(l) + "/environ")
				if strings.Contains(string(env), "X=") || strings.Contains(string(env), prevDir) {
					t.Errorf("%s: the warm launcher carries the previous command's environment", c.name)
				}
			}
		}
		dir := t.TempDir()
		// Stdin stays an open pipe: a descriptor of this command that the
		// next one must not see.
		p, err := m.Start(context.Background(), "exec1", Spec{Shell: true, Command: report, Dir: dir, TTY: c.tty,
			Env: MergeEnv(BaseEnv(os.Environ()), c.env)})
		if err != nil {
			t.Fatalf("%s: Start: %v", c.name, err)
		}
		if st := waitExit(t, p, 20*time.Second); st.ExitCode == nil || *st.ExitCode != 0 {
			t.Fatalf("%s: %+v", c.name, st)
		}
		waitDone(t, p, 10*time.Second)
		out := string(p.Head(1 << 16))
		pid, _ := strconv.Atoi(reportLine(out, "pid"))
		var warmPIDs []int
		for _, l := range warm {
			warmPIDs = append(warmPIDs, l)
		}
		if !slices.Contains(warmPIDs, pid) {
			t.Errorf("%s: the command ran as PID %d, not in a warm launcher %v:\n%s", c.name, pid, warmPIDs, out)
		}
		_, fdList, _ := strings.Cut(out, "fds:")
		fdList, _, _ = strings.Cut(fdList, "end")
		got := []string{reportLine(out, "cwd"), reportLine(out, "x"), reportLine(out, "y"), strings.Join(strings.Fields(fdList), " ")}
		if diff := cmp.Diff([]string{dir, c.wantX, c.wantY, "0 1 2"}, got); diff != "" {
			t.Errorf("%s: cwd, X, Y, descriptors (-want +got):\n%s\n%s", c.name, diff, out)
		}
		_ = p.Remove()
		prevDir = dir
	}
}

// TestWarmLauncherDiesWithSupervisor: a supervisor killed while idle takes
// its warm launcher with it (parent-death signal), and a launcher whose
// parent is not the supervisor that started it refuses to wait at all.
func TestWarmLauncherDiesWithSupervisor(t *testing.T) {
	m := newTestManager(t, Options{IdleSupervisors: 1}, false)
	var sup, l int
	for s, pid := range warmLaunchers(t, m) {
		sup, l = s, pid
	}
	if err := syscall.Kill(sup, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		e, ok := readProcStat(l)
		if !ok || e.state == 'Z' || !isLauncher(l) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("warm launcher %d outlived its supervisor %d (parent now %d)", l, sup, e.ppid)
		}
		time.Sleep(5 * time.Millisecond)
	}

	// The parent check, on a launcher started by hand: told the wrong
	// parent it exits at once; told the right one it waits for its
	// command and exits when its socket closes.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		parent   int
		wantWait bool
		wantCode int
	}{{"wrong parent", os.Getpid() + 1, false, 1}, {"its parent", os.Getpid(), true, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			ours, theirs := os.NewFile(uintptr(fds[0]), "ours"), os.NewFile(uintptr(fds[1]), "theirs")
			defer ours.Close()
			cmd := exec.Command(exe, LauncherCommand)
			cmd.Env = []string{launcherParentEnv + "=" + strconv.Itoa(tc.parent), "GORACE=atexit_sleep_ms=0"}
			cmd.ExtraFiles = []*os.File{theirs}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			theirs.Close()
			exited := make(chan struct{})
			go func() { _ = cmd.Wait(); close(exited) }()
			select {
			case <-exited:
				if tc.wantWait {
					t.Fatalf("the launcher did not wait: %v", cmd.ProcessState)
				}
			case <-time.After(3 * time.Second):
				if !tc.wantWait {
					t.Fatal("the launcher waits for a command although its parent is not its supervisor")
				}
				ours.Close()
				<-exited
			}
			if code := cmd.ProcessState.ExitCode(); code != tc.wantCode {
				t.Errorf("exit code %d, want %d", code, tc.wantCode)
			}
		})
	}
}
