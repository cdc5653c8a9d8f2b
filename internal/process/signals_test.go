package process

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestIdleSupervisorTerminated: a SIGTERM ends an idle supervisor as its
// default disposition did, but in order: its warm launcher is killed and
// reaped and the launcher's cgroup removed before it exits (signals are
// routed to the supervisor for its whole life, not only during commands).
// The pool then serves the next command with a fresh supervisor.
func TestIdleSupervisorTerminated(t *testing.T) {
	m := newTestManager(t, Options{IdleSupervisors: 1}, true)
	var s *supervisorProc
	var launcher int
	for sup, l := range warmLaunchers(t, m) {
		m.mu.Lock()
		s = m.idle[0]
		m.mu.Unlock()
		if s.cmd.Process.Pid != sup {
			t.Fatalf("idle supervisor %d, warm launcher's parent %d", s.cmd.Process.Pid, sup)
		}
		launcher = l
	}
	cg := s.nextCgroup
	waitInCgroup(t, launcher, cg)
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitHangup(t, s.conn)
	if e, ok := readProcStat(launcher); ok {
		t.Errorf("the warm launcher outlived its supervisor: %+v", e)
	}
	if _, err := os.Stat(cg); !os.IsNotExist(err) {
		t.Errorf("the warm launcher's cgroup outlived its supervisor: %v", err)
	}
	p := startT(t, m, Spec{Program: "true", Env: BaseEnv(nil), CloseStdin: true})
	if st := waitExit(t, p, 10*time.Second); st.ExitCode == nil || *st.ExitCode != 0 {
		t.Errorf("state %+v", st)
	}
	<-p.Done()
}

// TestSupervisorRefusalRetried: a supervisor that refuses a command
// before anything ran (spawn_error with Retry: a signal ended it as the
// command arrived) costs the command nothing: the Manager runs it on
// another supervisor. The first supervisor started here refuses
// (testRefuseMain); the ones after it are real.
func TestSupervisorRefusalRetried(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "refused")
	m := newTestManager(t, Options{IdleSupervisors: -1, SupervisorArgs: []string{"__testrefuse"},
		SupervisorEnv: []string{testRefuseEnv + "=" + marker}}, false)
	p := startT(t, m, Spec{Program: "true", Env: BaseEnv(nil), CloseStdin: true})
	if st := waitExit(t, p, 10*time.Second); st.Status != StatusExited || st.ExitCode == nil || *st.ExitCode != 0 {
		t.Fatalf("state %+v", st)
	}
	<-p.Done()
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("no supervisor refused the command: %v", err)
	}
}

// testRefuseEnv names the marker file of testRefuseMain.
const testRefuseEnv = "DEVSPACE_TEST_REFUSE_MARKER"

// testRefuseMain is a supervisor that refuses its first command as one
// ended by a signal does, once per marker file; later it is a real
// supervisor.
func testRefuseMain() int {
	marker := os.Getenv(testRefuseEnv)
	f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return SupervisorMain(nil)
	}
	f.Close()
	ctl := os.NewFile(ctlFD, "control")
	rc, err := ctl.SyscallConn()
	if err != nil {
		return 1
	}
	if _, _, err := recvStdio(rc); err != nil {
		return 1
	}
	_, _ = ctl.Write([]byte(`{"event":"spawn_error","error":"the supervisor is shutting down","retry":true}` + "\n"))
	return 0
}

// TestSupervisorTerminatedDuringKill: a SIGTERM that reaches a supervisor
// while it waits out a kill's grace is not lost: the tree is killed as
// asked, and the supervisor exits after it instead of going back to the
// pool.
func TestSupervisorTerminatedDuringKill(t *testing.T) {
	// Two idle supervisors: taking one leaves the other, so the pool is
	// not refilled and has room for the one taken when it comes back.
	m := newTestManager(t, Options{IdleSupervisors: 2, Grace: time.Second}, false)
	waitPool(t, m, 2)
	marker := newMarker()
	p := startT(t, m, Spec{Shell: true, Command: `trap "" TERM; sleep 30; true`, Env: markerEnv(marker)})
	waitMarkers(t, marker, 2)
	sup := p.sup.cmd.Process.Pid
	killed := make(chan error, 1)
	go func() { killed <- p.Kill(ReasonTimeout) }()
	time.Sleep(300 * time.Millisecond) // inside the grace: the shell ignores SIGTERM
	if err := syscall.Kill(sup, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-killed; err != nil {
		t.Fatalf("Kill: %v", err)
	}
	waitDone(t, p, 10*time.Second)
	assertGone(t, marker)
	// Done comes after the supervisor was returned to the pool or, not
	// reusable, reaped.
	if p.sup.cmd.ProcessState == nil {
		t.Fatal("the signalled supervisor went back to the pool")
	}
}
