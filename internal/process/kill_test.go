package process

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// treeShape is a command whose process tree the tests must remove
// entirely. ready is how many marked processes exist once it is set up.
type treeShape struct {
	name  string
	spec  Spec
	ready int
	// mainExits: the main process ends at once, leaving descendants.
	mainExits bool
}

func sh(cmd string) Spec { return Spec{Shell: true, Command: cmd} }

// killShapes are the shapes of docs/design.md §7 "Process cleanup". The
// environment-clearing descendant is found by its command line (exec -a
// puts the marker in argv[0]); every other process carries DSMARK.
var killShapes = []treeShape{
	{name: "plain_sleep", spec: Spec{Program: "sleep", Args: []string{"1000"}}, ready: 1},
	{name: "sh_background_wait", spec: Spec{Program: "sh", Args: []string{"-c", "sleep 1000 & wait"}}, ready: 2},
	{name: "setsid_daemon_then_exit", spec: sh("setsid sleep 1000 & exit 0"), ready: 1, mainExits: true},
	{name: "double_fork_holding_stdout", spec: sh("(sleep 1000 &); echo forked"), ready: 1, mainExits: true},
	{name: "wrapper_exits_leaving_descendant", spec: sh("sleep 1000 >/dev/null 2>&1 </dev/null & exit 0"), ready: 1, mainExits: true},
	{name: "descendant_clears_environment", spec: sh(`env -i /bin/bash -c 'exec -a "$0" sleep 1000' "$DSMARK" & wait`), ready: 2},
	{name: "fork_loop", spec: sh("for i in $(seq 50); do sleep 1000 & done; wait"), ready: 51},
	// Issue 16's shapes: a tree that ignores SIGTERM and SIGINT, the setsid
	// loop that kept the Project lease, and a command that tries to kill
	// its supervisor first (Landlock's signal scoping refuses it).
	{name: "sigterm_ignoring_tree", spec: sh("trap '' TERM INT; sleep 1000 & sleep 1000 & wait"), ready: 3},
	{name: "setsid_loop_background", spec: sh("setsid sh -c 'while :; do sleep 1; done' & sleep 1000"), ready: 3},
	{name: "kill_supervisor_then_daemon", spec: sh("setsid bash -c 'exec sleep 1000' & sleep 0.3; kill -9 $PPID; wait"), ready: 2},
}

func startShape(t *testing.T, m *Manager, group string, s treeShape, marker string, timeout time.Duration) *Process {
	t.Helper()
	spec := s.spec
	spec.Args = append([]string(nil), spec.Args...)
	spec.Dir = t.TempDir()
	spec.Env = markerEnv(marker)
	spec.Timeout = timeout
	p, err := m.Start(context.Background(), group, spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	waitMarkers(t, marker, s.ready)
	if s.mainExits {
		st, err := p.Wait(context.Background(), 10*time.Second)
		if err != nil || st.Status != StatusExited || !st.TreeAlive {
			t.Fatalf("main process should have exited leaving its tree: %+v, %v", st, err)
		}
		waitExeced(t, marker, spec.Command)
	}
	return p
}

// waitExeced polls until no marked process still shows script in its
// command line. Once the shell that ran script has exited, such a process
// is one of its forks that has not exec'd yet (waitMarkers recognizes that
// state only while the parent lives): a background job ignores SIGINT only
// from there on, so an interrupt sent earlier would kill it and test
// nothing (seen once in a loaded CI-like run).
func waitExeced(t testing.TB, marker, script string) {
	t.Helper()
	if script == "" {
		return
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		inFlight := false
		for _, pid := range markerProcs(marker) {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
			if strings.Contains(string(b), script) {
				inFlight = true
			}
		}
		if !inFlight {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a fork of the exited shell never exec'd")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestKillTree(t *testing.T) {
	for _, s := range killShapes {
		t.Run(s.name, func(t *testing.T) {
			met := &testMetrics{}
			m := newTestManager(t, Options{Metrics: met}, false)
			marker := newMarker()
			p := startShape(t, m, "exec1", s, marker, 0)
			if err := p.Kill("close"); err != nil {
				t.Fatalf("Kill: %v", err)
			}
			assertGone(t, marker)
			st := p.State()
			if st.TreeAlive || st.KillReason != "close" {
				t.Errorf("state after Kill: %+v", st)
			}
			if !s.mainExits && st.Status != StatusKilled {
				t.Errorf("Status = %q, want killed", st.Status)
			}
			if s.mainExits && st.Status != StatusExited {
				t.Errorf("Status = %q, want exited (the main process ended on its own)", st.Status)
			}
			met.mu.Lock()
			defer met.mu.Unlock()
			if met.kills["close"] != 1 || met.running != 0 {
				t.Errorf("metrics: kills %v running %d", met.kills, met.running)
			}
			if s.mainExits && met.orphans == 0 {
				t.Errorf("no orphan kill counted for %s", s.name)
			}
		})
	}
}

func TestKillTreeCgroup(t *testing.T) {
	for _, s := range killShapes {
		t.Run(s.name, func(t *testing.T) {
			m := newTestManager(t, Options{}, true)
			marker := newMarker()
			p := startShape(t, m, "exec1", s, marker, 0)
			if !p.Cgroup() {
				t.Fatal("the command did not get a cgroup")
			}
			if err := p.Kill("close"); err != nil {
				t.Fatalf("Kill: %v", err)
			}
			assertGone(t, marker)
			if _, err := os.Stat(p.cgroupDir); !os.IsNotExist(err) {
				t.Errorf("cgroup not removed: %v", err)
			}
		})
	}
}

// cgroupModes runs f without and with a per-command cgroup (the latter is
// skipped where no delegated cgroup v2 is writable).
func cgroupModes(t *testing.T, f func(t *testing.T, useCgroup bool)) {
	for _, mode := range []struct {
		name string
		on   bool
	}{{"nocgroup", false}, {"cgroup", true}} {
		t.Run(mode.name, func(t *testing.T) { f(t, mode.on) })
	}
}

// assertCgroupGone checks that a command given a cgroup no longer has it.
func assertCgroupGone(t *testing.T, p *Process, useCgroup bool) {
	t.Helper()
	if !useCgroup {
		return
	}
	if !p.Cgroup() {
		t.Error("the command did not get a cgroup")
		return
	}
	if _, err := os.Stat(p.cgroupDir); !os.IsNotExist(err) {
		t.Errorf("cgroup not removed: %v", err)
	}
}

// TestKillGroup (revoke): every shape is gone when KillGroup returns,
// another group's command is untouched. The shapes run concurrently.
func TestKillGroup(t *testing.T) {
	cgroupModes(t, func(t *testing.T, useCgroup bool) {
		for _, s := range killShapes {
			t.Run(s.name, func(t *testing.T) {
				t.Parallel()
				m := newTestManager(t, Options{}, useCgroup)
				marker, other := newMarker(), newMarker()
				p := startShape(t, m, "revoked", s, marker, 0)
				keep := startShape(t, m, "kept", killShapes[0], other, 0)
				if n := m.KillGroup("revoked", "revoke"); n != 1 {
					t.Errorf("KillGroup = %d, want 1", n)
				}
				waitDone(t, p, 0)
				assertGone(t, marker)
				assertCgroupGone(t, p, useCgroup)
				if st := keep.State(); st.Status != StatusRunning {
					t.Errorf("another group's process was touched: %+v", st)
				}
				if err := keep.Kill("close"); err != nil {
					t.Fatal(err)
				}
				assertGone(t, other)
			})
		}
	})
}

// TestShutdown: every shape is gone when Shutdown returns. The shapes run
// concurrently, each under its own Manager.
func TestShutdown(t *testing.T) {
	cgroupModes(t, func(t *testing.T, useCgroup bool) {
		for _, s := range killShapes {
			t.Run(s.name, func(t *testing.T) {
				t.Parallel()
				m := newTestManager(t, Options{}, useCgroup)
				marker := newMarker()
				p := startShape(t, m, "exec1", s, marker, 0)
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				defer cancel()
				if err := m.Shutdown(ctx); err != nil {
					t.Fatal(err)
				}
				waitDone(t, p, 0)
				assertGone(t, marker)
				assertCgroupGone(t, p, useCgroup)
				if err := m.Shutdown(ctx); err != nil {
					t.Errorf("second Shutdown: %v", err)
				}
				if _, err := m.Start(ctx, "exec1", Spec{Program: "true", Dir: "/"}); err != ErrClosed {
					t.Errorf("Start after Shutdown = %v, want ErrClosed", err)
				}
			})
		}
	})
}

// TestTimeout: every shape is gone when its timeout fired and Done
// reported it. All shapes of a mode run at once under one Manager (each
// in its own group), so the run costs one timeout, not one per shape.
func TestTimeout(t *testing.T) {
	cgroupModes(t, func(t *testing.T, useCgroup bool) {
		m := newTestManager(t, Options{}, useCgroup)
		type started struct {
			shape  treeShape
			p      *Process
			marker string
		}
		var all []started
		for i, s := range killShapes {
			marker := newMarker()
			// The timeout must outlast setting the shape up on a loaded
			// machine (fork_loop spawns 51 processes).
			p := startShape(t, m, "exec"+strconv.Itoa(i), s, marker, 4*time.Second)
			all = append(all, started{s, p, marker})
		}
		for _, x := range all {
			t.Run(x.shape.name, func(t *testing.T) {
				waitDone(t, x.p, 15*time.Second)
				assertGone(t, x.marker)
				assertCgroupGone(t, x.p, useCgroup)
				st := x.p.State()
				want := StatusTimedOut
				if x.shape.mainExits {
					want = StatusExited
				}
				if st.Status != want || st.KillReason != ReasonTimeout {
					t.Errorf("state = %+v, want status %s, reason timeout", st, want)
				}
			})
		}
	})
}

// interruptShapes terminate on SIGINT. (Background jobs of a
// non-interactive shell ignore SIGINT by POSIX rule, so the `&` shapes
// above cannot be interrupted; Kill ends them.)
var interruptShapes = []treeShape{
	{name: "plain_sleep", spec: Spec{Program: "sleep", Args: []string{"1000"}}, ready: 1},
	{name: "sh_foreground", spec: Spec{Program: "sh", Args: []string{"-c", "sleep 1000; echo after"}}, ready: 2},
	{name: "setsid_daemon", spec: sh("setsid -f sleep 1000 >/dev/null 2>&1 </dev/null; sleep 1000"), ready: 2},
	{name: "double_fork", spec: sh(`sh -c 'setsid -f sleep 1000'; sleep 1000`), ready: 2},
	{name: "descendant_clears_environment", spec: sh(`env -i /bin/bash -c 'exec -a "$0" sleep 1000' "$DSMARK"; echo`), ready: 2},
	{name: "fan_out", spec: sh("seq 20 | xargs -P 20 -I{} sleep 1000"), ready: 22},
}

func TestInterrupt(t *testing.T) {
	for _, s := range interruptShapes {
		t.Run(s.name, func(t *testing.T) {
			m := newTestManager(t, Options{}, false)
			marker := newMarker()
			p := startShape(t, m, "exec1", s, marker, 0)
			if err := p.Interrupt(); err != nil {
				t.Fatal(err)
			}
			waitDone(t, p, 10*time.Second)
			assertGone(t, marker)
			st := p.State()
			if st.Status != StatusExited || !st.Interrupted || st.KillReason != "" {
				t.Errorf("state = %+v", st)
			}
			if err := p.Interrupt(); err != ErrNotRunning {
				t.Errorf("second Interrupt = %v, want ErrNotRunning", err)
			}
		})
	}
}

// TestInterruptEscalates: an interrupt leaves nothing behind. Whatever
// SIGINT does not end (background jobs, setsid daemons, trees that ignore
// SIGINT and SIGTERM) is killed after InterruptGrace, and the state says
// how many processes that took.
func TestInterruptEscalates(t *testing.T) {
	for _, cg := range []bool{false, true} {
		name := "signals"
		if cg {
			name = "cgroup"
		}
		t.Run(name, func(t *testing.T) { testInterruptEscalates(t, cg) })
	}
}

func testInterruptEscalates(t *testing.T, useCgroup bool) {
	for _, s := range killShapes {
		t.Run(s.name, func(t *testing.T) {
			m := newTestManager(t, Options{InterruptGrace: 200 * time.Millisecond}, useCgroup)
			marker := newMarker()
			p := startShape(t, m, "exec1", s, marker, 0)
			if err := p.Interrupt(); err != nil {
				t.Fatal(err)
			}
			waitDone(t, p, 10*time.Second)
			assertGone(t, marker)
			st := p.State()
			endsOnSIGINT := s.name == "plain_sleep"
			if !st.Interrupted || (!endsOnSIGINT && (st.InterruptKilled == 0 || st.KillReason != ReasonInterrupt)) {
				t.Errorf("state = %+v, want an escalated interrupt", st)
			}
			if err := p.Interrupt(); err != ErrNotRunning {
				t.Errorf("second Interrupt = %v, want ErrNotRunning", err)
			}
		})
	}
}

// TestSetsidDaemonLoop kills the daemon shape 200 times, a few at a time,
// half of them racing the wrapper's own exit.
func TestSetsidDaemonLoop(t *testing.T) {
	m := newTestManager(t, Options{}, false)
	const total, workers = 200, 4
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				marker := newMarker()
				p, err := m.Start(context.Background(), "loop"+itoaTest(i%workers), Spec{
					Shell: true, Command: "setsid sleep 1000 & exit 0", Dir: "/", Env: markerEnv(marker),
				})
				if err != nil {
					mu.Lock()
					failures = append(failures, "start: "+err.Error())
					mu.Unlock()
					continue
				}
				if i%2 == 0 {
					_, _ = p.Wait(context.Background(), 5*time.Second)
				}
				if err := p.Kill("close"); err != nil {
					mu.Lock()
					failures = append(failures, "kill: "+err.Error())
					mu.Unlock()
				}
				if ps := markerProcs(marker); len(ps) > 0 {
					mu.Lock()
					failures = append(failures, "survivors: "+describe(ps)[0])
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < total; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d failures, first: %s", len(failures), failures[0])
	}
	assertNoZombies(t)
}

func itoaTest(i int) string { return string(rune('a' + i)) }

// TestServerDeath SIGKILLs a server with a live tree: the supervisor sees
// its control socket close and kills the tree.
func TestServerDeath(t *testing.T) {
	for _, mode := range []string{"signals", "cgroup"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "cgroup" {
				if ok, reason := CgroupAvailable(); !ok {
					t.Skip(reason)
				}
			}
			marker := newMarker()
			exe, _ := os.Executable()
			cmd := exec.Command(exe, "__testserver", t.TempDir(), marker, mode)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := scanLines(bufio.NewReader(out))
			select {
			case l := <-lines:
				if l != "ready\n" {
					t.Fatalf("helper said %q", l)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("helper never became ready")
			}
			waitMarkers(t, marker, 6) // bash, setsid daemon, double-forked sleep, 3 sleeps
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			deadline := time.Now().Add(10 * time.Second)
			for len(markerProcs(marker)) > 0 {
				if time.Now().After(deadline) {
					t.Fatalf("tree survived the server: %v", describe(markerProcs(marker)))
				}
				time.Sleep(20 * time.Millisecond)
			}
			assertGone(t, marker)
		})
	}
}

// TestSignalTreeOnce: every process of a tree gets a signal exactly once —
// the command's group through the group signal, a setsid'd descendant on
// its own. (A second SIGINT is a second Ctrl-C to programs that count
// them.) The tree is real; the calls are recorded and SIGCONT is harmless.
func TestSignalTreeOnce(t *testing.T) {
	marker := newMarker()
	cmd := exec.Command("sh", "-c", "sleep 1000 & sleep 1000 & setsid sleep 1000 & wait")
	cmd.Env = markerEnv(marker)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, pid := range markerProcs(marker) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		cmd.Wait()
	})
	waitMarkers(t, marker, 4)
	// The shell's fourth child counts as a marker from its fork, while it
	// is still in the group; wait until setsid has moved it out, or the
	// walk below rightly sees it as a group member.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		out := 0
		for _, pid := range markerProcs(marker) {
			if g, err := syscall.Getpgid(pid); err == nil && g != cmd.Process.Pid {
				out++
			}
		}
		if out == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the setsid'd sleep never left the group")
		}
	}
	var mu sync.Mutex
	got := map[int]int{}
	sendSignal = func(pid int, sig syscall.Signal) error {
		mu.Lock()
		got[pid]++
		mu.Unlock()
		return syscall.Kill(pid, sig)
	}
	t.Cleanup(func() { sendSignal = syscall.Kill })

	s := &supervisor{self: os.Getpid(), mainPID: cmd.Process.Pid}
	s.signalTree(syscall.SIGCONT)
	main := cmd.Process.Pid
	if got[-main] != 1 {
		t.Errorf("group signals: %d, want 1", got[-main])
	}
	setsid := 0
	for _, pid := range markerProcs(marker) {
		g, err := syscall.Getpgid(pid)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case g == main && got[pid] != 0:
			t.Errorf("group member %d signalled again on its own (%d times)", pid, got[pid])
		case g != main:
			setsid++
			if got[pid] != 1 {
				t.Errorf("setsid'd descendant %d signalled %d times, want 1", pid, got[pid])
			}
		}
	}
	if setsid != 1 {
		t.Fatalf("%d processes outside the group, want the setsid'd sleep", setsid)
	}
}
