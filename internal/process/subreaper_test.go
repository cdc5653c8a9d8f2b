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
// tree with setsid daemons, prints "ready <supervisor pid>", and once the
// tree is gone prints "done <status> <kill reason>".
func testSubreaperMain(args []string) int {
	dir, marker := args[0], strings.ToLower(args[1]) // upper-cased by the test: not a marker itself
	exe, _ := os.Executable()
	m, err := New(Options{SupervisorPath: exe, SupervisorEnv: []string{"GORACE=atexit_sleep_ms=0"},
		SpoolDir: dir + "/spool", Sandbox: SandboxOptions{ScratchDir: dir + "/scratch"},
		Grace: 200 * time.Millisecond, DisableCgroup: true, Subreaper: true})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	p, err := m.Start(context.Background(), "g", Spec{Shell: true, Dir: dir,
		Command: `setsid sleep 1000 & setsid sh -c 'sleep 1000 & wait' & (setsid sleep 1000 &); wait`, Env: markerEnv(marker)})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("ready", p.sup.cmd.Process.Pid)
	<-p.Done()
	st := p.State()
	fmt.Println("done", st.Status, st.KillReason)
	select {}
}

// TestSupervisorLostOrphansKilled: a supervisor lost to an outside SIGKILL
// (its command cannot kill it) leaves setsid daemons; they re-parent to
// the subreaper server, not PID 1, and the server kills them.
func TestSupervisorLostOrphansKilled(t *testing.T) {
	marker := newMarker()
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "__testsubreaper", t.TempDir(), strings.ToUpper(marker))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := scanLines(bufio.NewReader(out))
	var sup int
	select {
	case l := <-lines:
		f := strings.Fields(l)
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
		if l != "done killed supervisor_lost\n" {
			t.Errorf("helper said %q", l)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the tree never ended")
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(markerProcs(marker)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("orphans of the lost supervisor survive: %v", describe(markerProcs(marker)))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
