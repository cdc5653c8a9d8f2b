package process

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// zombieLeaderC is the attack: a process that leaves its process group
// (setsid), starts a thread, then ends only its main thread with a raw
// exit. Its thread-group leader then shows state 'Z' in /proc while the
// other thread runs on, and wait4 cannot reap it until that thread ends.
// Without an argument it forks first and the parent returns, so that the
// survivor is an orphan of the command's tree; with one ("direct") it does
// the rest itself.
const zombieLeaderC = `
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/syscall.h>
static void *spin(void *a) { for (;;) pause(); return 0; }
int main(int argc, char **argv) {
	if (argc < 2 && fork() > 0) return 0;
	setsid();
	pthread_t t;
	pthread_create(&t, 0, spin, 0);
	printf("survivor %d\n", getpid());
	fflush(stdout);
	syscall(SYS_exit, 0);
	return 0;
}
`

// buildZombieLeader compiles zombieLeaderC into dir and returns the
// binary's path. A missing gcc fails the test: CI installs it (.ci/run).
func buildZombieLeader(t *testing.T, dir string) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "zombie.c")
	if err := os.WriteFile(src, []byte(zombieLeaderC), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "zombie-leader")
	if out, err := exec.Command("gcc", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return bin
}

// killLeftover SIGKILLs pid when the test ends, so that a failing run does
// not leak the survivor. A survivor that was reaped long ago may have had
// its PID reused, so only one still in the attack's state is killed.
func killLeftover(t *testing.T, pid int) {
	t.Cleanup(func() {
		if e, ok := readProcStat(pid); ok && e.state == 'Z' && e.threads > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// survivorPID returns the PID printed by the attack.
func survivorPID(t *testing.T, out []byte) int {
	t.Helper()
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "survivor" {
			pid, err := strconv.Atoi(f[1])
			if err == nil {
				return pid
			}
		}
	}
	t.Fatalf("no survivor PID in %q", out)
	return 0
}

// waitZombieLeader waits until pid is a thread-group leader in state 'Z'
// with a live thread: the attack has done its raw exit.
func waitZombieLeader(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if e, ok := readProcStat(pid); ok && e.state == 'Z' && e.threads > 1 {
			return
		}
		if time.Now().After(deadline) {
			e, _ := readProcStat(pid)
			t.Fatalf("%d never became a zombie leader with a live thread: %+v", pid, e)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// assertTasksGone checks that no thread of pid remains.
func assertTasksGone(t *testing.T, pid int) {
	t.Helper()
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/task"); !os.IsNotExist(err) {
		e, _ := readProcStat(pid)
		t.Errorf("the zombie leader %d survives (%+v): %v", pid, e, err)
	}
}

// TestKillZombieLeader: a confined command whose setsid'd descendant ends
// its main thread alone (a zombie leader with a live thread) is killed by
// Kill and by Shutdown, with and without a cgroup.
func TestKillZombieLeader(t *testing.T) {
	for _, useCgroup := range []bool{false, true} {
		for _, stop := range []string{"kill", "shutdown"} {
			name := fmt.Sprintf("cgroup=%v/%s", useCgroup, stop)
			t.Run(name, func(t *testing.T) { testKillZombieLeader(t, useCgroup, stop) })
		}
	}
}

func testKillZombieLeader(t *testing.T, useCgroup bool, stop string) {
	var m *Manager
	if useCgroup {
		m = newTestManager(t, Options{}, true)
	} else {
		m = newAppliance(t, Options{}).m
	}
	if m.Sandbox().Mode != SandboxLandlock {
		t.Fatalf("sandbox mode %q", m.Sandbox().Mode)
	}
	project := t.TempDir()
	bin := buildZombieLeader(t, project)
	p, err := m.Start(context.Background(), "exec1", Spec{Program: bin, Dir: project, Root: project,
		Env: BaseEnv(os.Environ())})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if p.Sandbox() == "" {
		t.Fatal("the command is not confined")
	}
	if useCgroup && !p.Cgroup() {
		t.Fatal("the command did not get a cgroup")
	}
	waitOutput(t, p, "survivor ", 10*time.Second)
	pid := survivorPID(t, p.Head(1<<20))
	killLeftover(t, pid)
	waitZombieLeader(t, pid)

	start := time.Now()
	switch stop {
	case "kill":
		if err := p.Kill("close"); err != nil {
			t.Fatalf("Kill: %v after %s", err, time.Since(start))
		}
	case "shutdown":
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := m.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("%s took %s", stop, d)
	}
	assertTasksGone(t, pid)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// TestSweepZombieLeader: an orphan of a lost supervisor that is a zombie
// leader with a live thread is no exited process to reap: the subreaper's
// sweep takes it as a candidate, then kills and reaps it.
func TestSweepZombieLeader(t *testing.T) {
	bin := buildZombieLeader(t, t.TempDir())
	// Run directly by this process (its own child, as an orphan is the
	// subreaper's), in a session of its own.
	cmd := exec.Command(bin, "direct")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait() // the sweep may have reaped it: an error then
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if got := survivorPID(t, []byte(line)); got != pid {
		t.Fatalf("survivor %d, started %d", got, pid)
	}
	waitZombieLeader(t, pid)

	own, err := unix.Getsid(0)
	if err != nil {
		t.Fatal(err)
	}
	met := &testMetrics{}
	m := &Manager{ownSID: own, metrics: met, log: slog.New(slog.DiscardHandler)}
	seen, clean := m.sweepOrphans(map[int]bool{})
	if clean || !seen[pid] {
		t.Fatalf("first sweep: clean %v, candidates %v; want %d a candidate", clean, seen, pid)
	}
	if _, clean = m.sweepOrphans(seen); clean {
		t.Error("second sweep was clean, want the zombie leader killed")
	}
	assertTasksGone(t, pid)
	met.mu.Lock()
	defer met.mu.Unlock()
	if met.orphans != 1 {
		t.Errorf("orphans killed = %d, want 1", met.orphans)
	}
}
