package process

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestSupervisorReuse runs commands back to back on one pooled supervisor
// while the previous command's handle is still being interrupted and
// killed: those late requests must never reach the next command.
func TestSupervisorReuse(t *testing.T) {
	// Room for two idle supervisors: a refill that races the returning
	// one (on a loaded machine) does not push it out of the pool.
	m := newTestManager(t, Options{IdleSupervisors: 2}, false)
	reused := 0
	for i := 0; i < 20; i++ {
		first := startT(t, m, Spec{Program: "true", Dir: "/"})
		var wg sync.WaitGroup
		stop := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = first.Interrupt()
				first.requestKill("close")
			}
		}()
		waitDone(t, first, 5*time.Second)
		// Let the supervisor come back to the pool and put it first in
		// line, so that the next command takes it (on a loaded machine a
		// refill may take its place; that round then proves less).
		for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			m.mu.Lock()
			i := slices.Index(m.idle, first.sup)
			if i > 0 {
				m.idle[0], m.idle[i] = m.idle[i], m.idle[0]
			}
			m.mu.Unlock()
			if i >= 0 {
				break
			}
		}
		marker := newMarker()
		second := startT(t, m, Spec{Program: "sleep", Args: []string{"1000"}, Dir: "/", Env: markerEnv(marker)})
		time.Sleep(20 * time.Millisecond)
		close(stop)
		wg.Wait()
		if st := second.State(); st.Status != StatusRunning {
			t.Fatalf("iteration %d: a request for the previous command reached this one: %+v", i, st)
		}
		if second.sup == first.sup {
			reused++
		}
		if err := second.Kill("close"); err != nil {
			t.Fatal(err)
		}
		assertGone(t, marker)
	}
	if reused < 5 {
		t.Errorf("the same supervisor served both commands in only %d of 20 rounds", reused)
	}
}

// waitPool waits until m's pool holds n idle supervisors.
func waitPool(t *testing.T, m *Manager, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m.mu.Lock()
		idle := len(m.idle)
		m.mu.Unlock()
		if idle == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pool holds %d idle supervisors, want %d", idle, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestIdleSupervisorDied(t *testing.T) {
	m := newTestManager(t, Options{IdleSupervisors: 1}, false)
	waitPool(t, m, 1)
	m.mu.Lock()
	idle := m.idle[0]
	m.mu.Unlock()
	if err := idle.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	p := startT(t, m, Spec{Program: "true", Dir: "/"})
	if st := waitExit(t, p, 10*time.Second); *st.ExitCode != 0 {
		t.Errorf("state %+v", st)
	}
	waitDone(t, p, 5*time.Second)
	assertNoZombies(t)
}

func TestNoPool(t *testing.T) {
	m := newTestManager(t, Options{IdleSupervisors: -1}, false)
	for i := 0; i < 3; i++ {
		p := startT(t, m, Spec{Program: "true", Dir: "/"})
		waitDone(t, p, 10*time.Second)
	}
	m.mu.Lock()
	n := len(m.idle)
	m.mu.Unlock()
	if n != 0 {
		t.Errorf("%d idle supervisors with the pool off", n)
	}
	assertNoZombies(t)
}

// TestSupervisorKilledByCommand: with the sandbox off, a command that
// SIGKILLs its own supervisor loses its main process (Pdeathsig) and its
// process group (the server's fallback); the state says so. (Confined, it
// cannot signal its supervisor at all: TestSandboxEscapes.)
func TestSupervisorKilledByCommand(t *testing.T) {
	m := newTestManager(t, Options{Sandbox: SandboxOptions{Off: true}}, false)
	marker := newMarker()
	p := startT(t, m, Spec{Shell: true, Command: "sleep 1000 & sleep 1000 & sleep 0.2; kill -9 $PPID; wait", Env: markerEnv(marker)})
	waitDone(t, p, 10*time.Second)
	assertGone(t, marker)
	st := p.State()
	if st.Status != StatusKilled || st.KillReason != ReasonSupervisorLost {
		t.Errorf("state %+v", st)
	}
	// The Manager stays usable.
	q := startT(t, m, Spec{Program: "true", Dir: "/"})
	waitDone(t, q, 10*time.Second)
}

func TestStartContextCanceled(t *testing.T) {
	m := newTestManager(t, Options{}, false)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p, err := m.Start(ctx, "g", Spec{Program: "sleep", Args: []string{"1000"}, Dir: "/"})
	if err == nil {
		// The handshake may have completed before the deadline applied.
		_ = p.Kill("close")
		return
	}
	if m.Running() != 0 {
		t.Errorf("Running = %d after a failed start", m.Running())
	}
}

// TestWarmLater: with WarmLater the pool stays empty (no supervisor is
// started behind a starting server's back) until Warm fills it.
func TestWarmLater(t *testing.T) {
	m := newTestManager(t, Options{IdleSupervisors: 2, WarmLater: true}, false)
	idle := func() int {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.idle) + m.refilling
	}
	time.Sleep(100 * time.Millisecond)
	if n := idle(); n != 0 {
		t.Fatalf("%d supervisors started before Warm", n)
	}
	m.Warm()
	m.Warm() // a second call adds nothing
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		m.mu.Lock()
		n, r := len(m.idle), m.refilling
		m.mu.Unlock()
		if n+r > 2 {
			t.Fatalf("%d idle and %d starting supervisors for a pool of 2", n, r)
		}
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pool never filled: %d idle", n)
		}
	}
	p := startT(t, m, Spec{Program: "true", Dir: "/"})
	waitDone(t, p, 10*time.Second)
	assertNoZombies(t)
}

// TestShutdownWaitsForEverySupervisor: when Shutdown returns, no
// supervisor is left, also when two calls overlap (the server's shutdown
// and its Close both call it) and the other one is still stopping the
// idle supervisors. A supervisor that outlived the server kept its
// executable busy (an upgrade in place failed with ETXTBSY).
func TestShutdownWaitsForEverySupervisor(t *testing.T) {
	for round := range 5 {
		m := newTestManager(t, Options{IdleSupervisors: 2}, false)
		waitPool(t, m, 2)
		m.mu.Lock()
		var pids []int
		for _, s := range m.idle {
			pids = append(pids, s.cmd.Process.Pid)
		}
		m.mu.Unlock()
		// Both calls must return, and soon: each waits for the last reap.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		returned := make(chan error, 2)
		for range 2 {
			go func() { returned <- m.Shutdown(ctx) }()
		}
		for i := range 2 {
			if err := <-returned; err != nil {
				t.Fatalf("round %d: Shutdown call %d: %v", round, i, err)
			}
			for _, pid := range pids {
				if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
					t.Fatalf("round %d: Shutdown returned while supervisor %d remains", round, pid)
				}
			}
		}
		cancel()
	}
}

// TestShutdownWaitersAllWake: every Shutdown waiting for the last
// supervisor to be reaped returns when it is, not only the first (a
// supervisor reaped in the background, as after a failed start, is waited
// for by each call).
func TestShutdownWaitersAllWake(t *testing.T) {
	m := newTestManager(t, Options{IdleSupervisors: -1}, false)
	m.mu.Lock()
	m.supervisors++ // one on its way out, reaped below
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	returned := make(chan error, 3)
	for range 3 {
		go func() { returned <- m.Shutdown(ctx) }()
	}
	time.Sleep(100 * time.Millisecond) // all three wait
	select {
	case err := <-returned:
		t.Fatalf("Shutdown returned before the supervisor was reaped: %v", err)
	default:
	}
	m.supervisorGone()
	for i := range 3 {
		if err := <-returned; err != nil {
			t.Fatalf("Shutdown call %d: %v", i, err)
		}
	}
}

// TestPoolNeverOverfills: a supervisor coming back from its command
// while the refill is starting one left three idle supervisors in a pool
// of two (found by make load's hostile mode, whose leak check counts the
// server's children). Commands ending as others start, many times over;
// the pool is sampled throughout.
func TestPoolNeverOverfills(t *testing.T) {
	m := newTestManager(t, Options{IdleSupervisors: 2}, false)
	stop := make(chan struct{})
	most := make(chan int, 1)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				most <- n
				return
			default:
			}
			m.mu.Lock()
			n = max(n, len(m.idle))
			m.mu.Unlock()
			time.Sleep(200 * time.Microsecond)
		}
	}()
	for range 40 {
		var ps []*Process
		for range 3 {
			ps = append(ps, startT(t, m, Spec{Program: "true", Dir: "/"}))
		}
		for _, p := range ps {
			waitDone(t, p, 10*time.Second)
		}
	}
	time.Sleep(200 * time.Millisecond) // the last refills land
	close(stop)
	if n := <-most; n > 2 {
		t.Fatalf("%d idle supervisors in a pool of 2", n)
	}
}
