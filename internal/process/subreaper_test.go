package process

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testSubreaperMain is a miniature server that is a child subreaper (the
// attribute is process-wide, so it runs in its own process): it starts a
// tree with setsid daemons, with or without a cgroup (mode "cgroup" or
// "nocgroup"), and prints "ready <supervisor pid>" (or "skip <reason>"
// when no delegated cgroup is writable). Once Done fires it counts the
// marked processes still alive at that moment and prints "done <status>
// <kill reason> <survivors>".
func testSubreaperMain(args []string) int {
	dir, marker, mode := args[0], strings.ToLower(args[1]), args[2] // upper-cased by the test: not a marker itself
	exe, _ := os.Executable()
	m, err := New(Options{SupervisorPath: exe, SupervisorEnv: []string{"GORACE=atexit_sleep_ms=0"},
		SpoolDir: dir + "/spool", Sandbox: SandboxOptions{ScratchDir: dir + "/scratch"},
		Grace: 200 * time.Millisecond, DisableCgroup: mode != "cgroup", Subreaper: true})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	if mode == "cgroup" && !m.CgroupEnabled() {
		_, reason := CgroupAvailable()
		fmt.Println("skip", reason)
		return 0
	}
	p, err := m.Start(context.Background(), "g", Spec{Shell: true, Dir: dir,
		// The daemons let go of the output pipe: its EOF says nothing
		// about them.
		Command: `q='>/dev/null 2>&1 </dev/null'; eval "setsid sleep 1000 $q & setsid sh -c 'sleep 1000 & wait' $q & (setsid sleep 1000 $q &)"; wait`,
		Env:     markerEnv(marker)})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("ready", p.sup.cmd.Process.Pid)
	<-p.Done()
	survivors := markerProcs(marker)
	st := p.State()
	fmt.Println("done", st.Status, st.KillReason, len(survivors))
	if len(survivors) > 0 {
		fmt.Fprintln(os.Stderr, "alive when Done fired:", describe(survivors))
	}
	select {}
}

// TestSupervisorLostOrphansKilled: a supervisor lost to an outside SIGKILL
// (its command cannot kill it) leaves setsid daemons; they re-parent to
// the subreaper server, not PID 1, and the server kills them before Done
// fires (the Project lease is released only then): no marked process is
// alive at that moment. With a delegated cgroup and without one.
func TestSupervisorLostOrphansKilled(t *testing.T) {
	for _, mode := range []string{"nocgroup", "cgroup"} {
		t.Run(mode, func(t *testing.T) { testSupervisorLost(t, mode) })
	}
}

func testSupervisorLost(t *testing.T, mode string) {
	marker := newMarker()
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "__testsubreaper", t.TempDir(), strings.ToUpper(marker), mode)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		for _, pid := range markerProcs(marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	lines := scanLines(bufio.NewReader(out))
	var sup int
	select {
	case l := <-lines:
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == "skip" {
			t.Skip(strings.TrimSpace(strings.TrimPrefix(l, "skip")))
		}
		if len(f) != 2 || f[0] != "ready" {
			t.Fatalf("helper said %q", l)
		}
		sup, _ = strconv.Atoi(f[1])
	case <-time.After(15 * time.Second):
		t.Fatal("helper never became ready")
	}
	waitMarkers(t, marker, 5) // bash, 2 setsid sleeps, the setsid sh and its sleep
	if err := syscall.Kill(sup, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-lines:
		if l != "done killed supervisor_lost 0\n" {
			t.Errorf("helper said %q, want no survivor when Done fired", l)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the tree never ended")
	}
	if ps := markerProcs(marker); len(ps) > 0 {
		t.Errorf("orphans of the lost supervisor survive: %v", describe(ps))
	}
}
