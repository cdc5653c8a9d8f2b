package process

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/devspace-dev/devspace/internal/sandbox"
)

// testMoveLauncherEnv makes this test binary, as a supervisor, start its
// launchers outside their cgroup and move them in (the fallback where
// clone3 is refused).
const testMoveLauncherEnv = "DEVSPACE_TEST_MOVE_LAUNCHER"

// cgroupOf returns the cgroup v2 directory pid is in.
func cgroupOf(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		t.Fatalf("cgroup of %d: %v", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rel, ok := strings.CutPrefix(line, "0::"); ok {
			return filepath.Join(cgroup2Mount(), rel)
		}
	}
	t.Fatalf("no cgroup v2 entry for %d: %q", pid, b)
	return ""
}

// waitInCgroup waits until pid is in dir (a moved launcher gets there a
// moment after it starts).
func waitInCgroup(t *testing.T, pid int, dir string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for cgroupOf(t, pid) != dir {
		if time.Now().After(deadline) {
			t.Fatalf("process %d is in %s, want %s", pid, cgroupOf(t, pid), dir)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitHangup waits until the peer of conn has closed its end.
func waitHangup(t *testing.T, conn syscall.Conn) {
	t.Helper()
	rc, err := conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var hup bool
		_ = rc.Control(func(fd uintptr) {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
			n, _ := unix.Poll(fds, 0)
			hup = n > 0 && fds[0].Revents&(unix.POLLHUP|unix.POLLRDHUP) != 0
		})
		if hup {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the peer never closed its end")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestLauncherWaitsInItsCommandsCgroup: a command's cgroup exists before
// the command does. Each warm launcher is started in the cgroup of the
// command it will become (clone3 into it, or, where clone3 is refused,
// moved in right after its start): moving a process into a cgroup waits
// for an RCU grace period (~10 ms on an idle machine), which a command
// would otherwise wait for. The command runs in that cgroup and it is
// removed with the command's tree; the cgroup of the next warm launcher
// is removed with its supervisor, also when the supervisor was killed.
func TestLauncherWaitsInItsCommandsCgroup(t *testing.T) {
	for _, mode := range []struct {
		name string
		env  []string
	}{{"clone_into_cgroup", nil}, {"move", []string{testMoveLauncherEnv + "=1"}}} {
		t.Run(mode.name, func(t *testing.T) {
			m := newTestManager(t, Options{IdleSupervisors: 1, SupervisorEnv: mode.env}, true)
			warm := func() (*supervisorProc, int) {
				t.Helper()
				for sup, launcher := range warmLaunchers(t, m) {
					m.mu.Lock()
					defer m.mu.Unlock()
					for _, s := range m.idle {
						if s.cmd.Process.Pid == sup {
							return s, launcher
						}
					}
				}
				t.Fatal("no idle supervisor")
				return nil, 0
			}
			s, launcher := warm()
			want := s.nextCgroup
			if want == "" || filepath.Dir(want) != m.cgroup() {
				t.Fatalf("the idle supervisor's next cgroup is %q (parent %q)", want, m.cgroup())
			}
			waitInCgroup(t, launcher, want)

			p := startT(t, m, Spec{Program: "cat", Args: []string{"/proc/self/cgroup"}, Env: BaseEnv(nil), CloseStdin: true})
			if st := waitExit(t, p, 10*time.Second); st.ExitCode == nil || *st.ExitCode != 0 {
				t.Fatalf("cat /proc/self/cgroup: %+v %s", st, p.Tail(4096))
			}
			<-p.Done()
			if p.pid != launcher || p.cgroupDir != want {
				t.Fatalf("the command ran as %d in %q; the warm launcher was %d in %q", p.pid, p.cgroupDir, launcher, want)
			}
			rel := "0::/" + strings.TrimPrefix(strings.TrimPrefix(want, cgroup2Mount()), "/")
			if out := p.Tail(4096); !bytes.Contains(out, []byte(rel+"\n")) {
				t.Fatalf("the command saw its cgroup as %q, want %q", out, rel)
			}
			if _, err := os.Stat(want); !os.IsNotExist(err) {
				t.Errorf("the command's cgroup outlived its tree: %v", err)
			}

			// The same supervisor's next launcher waits in the next
			// command's cgroup; killing the supervisor leaves that cgroup
			// for the Manager to remove.
			s, launcher = warm()
			next := s.nextCgroup
			if next == want || next == "" {
				t.Fatalf("next cgroup %q after %q", next, want)
			}
			waitInCgroup(t, launcher, next)
			if err := syscall.Kill(s.cmd.Process.Pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			// Gone, its socket closed (a Go process's descriptors close
			// when its last thread has exited, after its leader shows
			// as a zombie), so that the next Start finds it gone rather
			// than dying under it.
			waitHangup(t, s.conn)
			p = startT(t, m, Spec{Program: "true", Env: BaseEnv(nil), CloseStdin: true})
			waitExit(t, p, 10*time.Second)
			<-p.Done()
			deadline := time.Now().Add(10 * time.Second)
			for {
				if _, err := os.Stat(next); os.IsNotExist(err) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the killed supervisor's next cgroup is still there")
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestEmptyCommandCgroupsRemoved: a Manager removes the empty command
// cgroups an earlier run left (a server killed with its supervisors leaves
// its warm launchers' cgroups), and leaves alone one that holds a process
// (another server's command) and anything not named like its own.
func TestEmptyCommandCgroupsRemoved(t *testing.T) {
	parent, _, err := cgroupParent()
	if err != nil {
		t.Skip("no delegated cgroup v2 here")
	}
	empty, busy := newCgroupDir(parent), newCgroupDir(parent)
	other := filepath.Join(parent, "devspace-other-"+randomToken(4))
	for _, dir := range []string{empty, busy, other} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cgroupRemove(dir, time.Second) })
	}
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	if err := cgroupMove(busy, sleeper.Process.Pid); err != nil {
		t.Fatal(err)
	}
	newTestManager(t, Options{IdleSupervisors: -1}, true) // waits for its cgroup probe
	if _, err := os.Stat(empty); !os.IsNotExist(err) {
		t.Errorf("the empty command cgroup was left: %v", err)
	}
	for _, dir := range []string{busy, other} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(dir), err)
		}
	}
	if cgroupOf(t, sleeper.Process.Pid) != busy {
		t.Error("the other command left its cgroup")
	}
}

// TestConfinedCommandStaysInItsCgroup replays an escape from a command's
// cgroup: the command opens the parent cgroup with O_PATH (Landlock does
// not cover O_PATH) and starts a child there with clone3 and
// CLONE_INTO_CGROUP (whose permission check is not a file open either).
// Confined, clone3 fails with ENOSYS (the sandbox's seccomp filter) and
// forking still works; with the sandbox off, the same program does move a
// child out, which shows the attack is real and detected.
func TestConfinedCommandStaysInItsCgroup(t *testing.T) {
	if !sandbox.Probe().Available() {
		t.Skip("no Landlock on this kernel")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []bool{false, true} {
		m := newTestManager(t, Options{Sandbox: SandboxOptions{Off: off}}, true)
		root := t.TempDir()
		attack := filepath.Join(root, "attack")
		if err := os.WriteFile(attack, bin, 0o755); err != nil {
			t.Fatal(err)
		}
		p := startT(t, m, Spec{Program: attack, Args: []string{"__testclone3", m.cgroup()}, Dir: root, Root: root,
			Env: BaseEnv(nil), CloseStdin: true})
		waitExit(t, p, 10*time.Second)
		out := strings.TrimSpace(string(p.Tail(4096)))
		if !off {
			if out != "clone3: function not implemented" {
				t.Errorf("confined: %q, want clone3 refused with ENOSYS", out)
			}
			q := startT(t, m, Spec{Shell: true, Command: "sleep 0 & wait && echo forked", Dir: root, Root: root, Env: BaseEnv(nil), CloseStdin: true})
			waitExit(t, q, 10*time.Second)
			if got := strings.TrimSpace(string(q.Tail(4096))); got != "forked" {
				t.Errorf("confined, a plain fork: %q", got)
			}
			_ = p.Kill("test") // a child that did escape would keep the tree alive
			<-p.Done()
			continue
		}
		pid, ok := strings.CutPrefix(out, "child ")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil {
			t.Fatalf("sandbox off: %q, want the escaped child's PID", out)
		}
		if got := cgroupOf(t, n); got != m.cgroup() {
			t.Errorf("sandbox off: the child is in %s, want the parent cgroup %s", got, m.cgroup())
		}
		_ = syscall.Kill(n, syscall.SIGKILL)
		<-p.Done()
	}
}

// testClone3Main is the attack of TestConfinedCommandStaysInItsCgroup: it
// starts a child in the cgroup directory args[0] with clone3 and prints
// the child's PID (the child waits to be killed), or clone3's error.
func testClone3Main(args []string) int {
	fd, err := unix.Open(args[0], unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		fmt.Println("open:", err)
		return 1
	}
	// struct clone_args: flags, pidfd, child_tid, parent_tid, exit_signal,
	// stack, stack_size, tls, set_tid, set_tid_size, cgroup.
	var ca [11]uint64
	ca[0], ca[4], ca[10] = unix.CLONE_INTO_CGROUP, uint64(unix.SIGCHLD), uint64(fd)
	pid, _, errno := unix.RawSyscall(435, uintptr(unsafe.Pointer(&ca)), unsafe.Sizeof(ca), 0)
	if errno != 0 {
		fmt.Println("clone3:", errno)
		return 0
	}
	if pid == 0 {
		for { // the child: no runtime here, only system calls
			unix.RawSyscall(unix.SYS_PPOLL, 0, 0, 0)
		}
	}
	fmt.Println("child", pid)
	return 0
}
