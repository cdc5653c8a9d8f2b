//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestComposeLimits: issue 31, item 6, in the container as compose.yaml
// runs it (pids_limit 1024, mem_limit here 2g, the cgroup filesystem
// read-only): one grant's command trying to have 3,000 processes is
// stopped (pids_limit) while another grant's command runs within a
// second, and the container keeps room for processes; its command
// allocating past its memory limit ends out_of_memory, and nothing else
// is killed: another grant's running command, the server, its
// supervisors; its command filling its scratch is stopped at the grant's
// scratch quota (issue 31, item 1) and the scratch emptied.
func TestComposeLimits(t *testing.T) {
	dirs := hostDirs(t, "alpha", "beta", "secrets")
	// The process package's attack scripts: a fork loop (children
	// "sleep 60") and a memory hog; both stop by themselves.
	for _, name := range []string{"forkbomb.py", "hog.py"} {
		b, err := os.ReadFile(filepath.Join(repoRoot, "internal", "process", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dirs["alpha"], name), string(b), 0o644)
	}
	writeFile(t, filepath.Join(dirs["beta"], "README.md"), "# beta\n", 0o644)
	pw := filepath.Join(dirs["secrets"], "owner")
	writeFile(t, pw, ownerPassword+"\n", 0o400)
	s := &stack{t: t, name: "devspace-e2e-" + strings.ToLower(randomString(6)),
		files: []string{"compose.yaml", "compose.quick-tunnel.yaml", "deploy/e2e/compose.e2e.yaml"},
		env: []string{"DEVSPACE_IMAGE=" + image, "DEVSPACE_PROJECT_DIR=" + dirs["alpha"], "DEVSPACE_PROJECT_LABEL=alpha",
			"E2E_BETA_DIR=" + dirs["beta"], "E2E_OWNER_PASSWORD_FILE=" + pw, "DEVSPACE_MEMORY_LIMIT=2g", "DEVSPACE_SCRATCH_MAX=64MiB"}}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := s.run("logs", "--no-color", "--tail", "60", "devspace")
			t.Logf("compose logs:\n%s", out)
		}
		if out, err := s.run("down", "--volumes", "--remove-orphans", "--timeout", "20"); err != nil {
			t.Logf("compose down: %v\n%s", err, out)
		}
	})
	s.must("run", "--rm", "-T", "devspace", "init")
	s.must("up", "--detach", "--wait", "--wait-timeout", "120")
	container := strings.TrimSpace(s.must("ps", "--quiet", "devspace"))
	started, err := exec.Command("docker", "inspect", "--format", "{{.State.StartedAt}}", container).Output()
	if err != nil {
		t.Fatal(err)
	}
	startedAt := strings.TrimSpace(string(started))

	// The appliance has no writable cgroup: each command's supervisor
	// bounds it, with RLIMIT_NPROC on all commands (the server is not
	// root). auto: 1024 tasks and 2 GiB less the reserve (256, 512 MiB),
	// half of that per grant.
	doctor := s.must("exec", "-T", "devspace", "devspace", "doctor")
	for _, want := range []string{"(mechanism=supervisor)", "rlimit_nproc=all_commands", "past 384 processes and threads", "768 MiB of memory"} {
		if !strings.Contains(doctor, want) {
			t.Errorf("doctor lacks %q:\n%s", want, doctor)
		}
	}
	if logs := s.must("logs", "--no-color", "devspace"); !strings.Contains(logs, `"msg":"command limits"`) || !strings.Contains(logs, `"mechanism":"supervisor"`) {
		t.Errorf("no startup log of the command limits:\n%s", tail(logs, 20))
	}

	port := strings.TrimSpace(s.must("port", "cloudflared", "8080"))
	e := newEndpoint("https://e2e-tunnel.trycloudflare.com", "http://"+port, "", "")
	c := e.register(t, "Limits")
	a := e.connect(t, e.grant(t, c, []string{"alpha"}, allScopes).AccessToken, "limits-a")
	b := e.connect(t, e.grant(t, c, []string{"beta"}, allScopes).AccessToken, "limits-b")
	a.open("a-open", "")
	b.open("b-open", "")
	long := b.shell("b-long", "sleep 300", nil)
	if long["status"] != "running" {
		t.Fatalf("B's long command: %v", long)
	}

	// The fork loop. The container's processes are counted meanwhile
	// (docker exec: a process of the container too).
	countProcs := func() (int, error) {
		out, err := s.run("exec", "-T", "devspace", "sh", "-c", "echo /proc/[0-9]*")
		if err != nil {
			return 0, fmt.Errorf("%v: %s", err, out)
		}
		return len(strings.Fields(out)), nil
	}
	before, err := countProcs()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var bomb map[string]any
	wg.Add(1)
	began := time.Now()
	go func() {
		defer wg.Done()
		bomb = a.shell("bomb", "exec python3 forkbomb.py 3000", nil)
	}()
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	other := b.shell("b-during-bomb", "echo ok", nil)
	if took := time.Since(start); other["output"] != "ok\n" || took > time.Second {
		t.Errorf("another grant's command during the fork loop took %s: %v", took, other)
	} else {
		t.Logf("another grant's command during the fork loop took %s", took.Round(time.Millisecond))
	}
	peak := 0
	for done := false; !done; {
		n, err := countProcs()
		if err != nil {
			t.Errorf("docker exec during the fork loop: %v", err)
		}
		peak = max(peak, n)
		ch := make(chan struct{})
		go func() { wg.Wait(); close(ch) }()
		select {
		case <-ch:
			done = true
		case <-time.After(50 * time.Millisecond):
		}
	}
	bomb = waitEnded(t, a, bomb)
	t.Logf("fork loop: %s after %s; processes in the container: %d before, at most %d seen meanwhile",
		bomb["killReason"], time.Since(began).Round(time.Millisecond), before, peak)
	if bomb["status"] != "killed" || bomb["killReason"] != "pids_limit" {
		t.Errorf("the fork loop ended %v, want killed (pids_limit)", bomb)
	}
	if strings.Contains(fmt.Sprint(bomb["output"]), "made") {
		t.Errorf("the fork loop made all it wanted: %v", bomb)
	}
	waitNoProcess(t, s, "sleep 60")

	// The memory hog (a sleeping sibling in the same command) beside B's
	// running command.
	hog := waitEnded(t, a, a.shell("hog", "sleep 62 & python3 hog.py 3221225472; wait", nil))
	if hog["status"] != "killed" || hog["killReason"] != "out_of_memory" || strings.Contains(fmt.Sprint(hog["output"]), "allocated") {
		t.Errorf("the hog ended %v, want killed (out_of_memory)", hog)
	}
	waitNoProcess(t, s, "sleep 62")

	// A's command filling its scratch (the /scratch volume) is stopped at
	// the grant's quota and the scratch emptied, while B works.
	fill := a.shell("fill", `head -c 1G /dev/zero > "$TMPDIR/fill"; echo survived`, nil)
	if r := b.shell("b-during-fill", "echo ok", nil); r["output"] != "ok\n" {
		t.Errorf("another grant's command during the scratch fill: %v", r)
	}
	fill = waitEnded(t, a, fill)
	if fill["status"] != "killed" || fill["killReason"] != "scratch_quota" || strings.Contains(fmt.Sprint(fill["output"]), "survived") {
		t.Errorf("the scratch fill ended %v, want killed (scratch_quota)", fill)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		out := s.must("exec", "-T", "devspace", "sh", "-c", "find /scratch -name fill | wc -l")
		if strings.TrimSpace(out) == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the filled scratch file survives the stop")
			break
		}
	}

	// Nothing else was killed: B's command runs on, the server (never
	// restarted) and its supervisors start commands of both grants.
	if r := b.must("read_process_output", map[string]any{"processRef": long["processRef"], "waitMs": 0}); r["status"] != "running" {
		t.Errorf("B's long command after the attacks: %v", r)
	}
	if out := s.must("exec", "-T", "devspace", "sh", "-c", "echo /proc/[0-9]*"); len(strings.Fields(out)) > before+4 {
		t.Errorf("processes left in the container: %d, %d before", len(strings.Fields(out)), before)
	}
	for _, cn := range []*conn{a, b} {
		if r := cn.shell("after-"+cn.session, "echo fine", nil); r["output"] != "fine\n" {
			t.Errorf("%s after the attacks: %v", cn.session, r)
		}
	}
	if out, err := exec.Command("docker", "inspect", "--format", "{{.RestartCount}} {{.State.StartedAt}}", container).CombinedOutput(); err != nil ||
		!strings.HasPrefix(string(out), "0 ") || !strings.Contains(string(out), startedAt) {
		t.Errorf("the container restarted: %s %v (started at %s)", out, err, startedAt)
	}
	metrics := s.must("exec", "-T", "devspace", "curl", "-sS", "-m", "5", "http://devspace-metrics:7678/metrics")
	for _, want := range []string{`devspace_process_kills_total{reason="pids_limit"} 1`, `devspace_process_kills_total{reason="out_of_memory"} 1`,
		`devspace_command_limits_info{budget="cgroup",mechanism="supervisor",nice="10",rlimit_nproc="all_commands"} 1`,
		`devspace_command_limit{resource="tasks",scope="command"} 384`, `devspace_process_kills_total{reason="scratch_quota"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// waitEnded returns the exec_command result r once its command has ended
// (read_process_output's live state when r was still running).
func waitEnded(t *testing.T, cn *conn, r map[string]any) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); r["status"] == "running"; {
		if time.Now().After(deadline) {
			t.Fatalf("still running after 60 s: %v", r)
		}
		r = cn.must("read_process_output", map[string]any{"processRef": r["processRef"], "waitMs": 2000})
	}
	return r
}

// waitNoProcess waits until no process of the container runs cmdline.
func waitNoProcess(t *testing.T, s *stack, cmdline string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		out, _ := s.run("exec", "-T", "devspace", "pgrep", "-c", "-x", "-f", cmdline)
		n, _ := strconv.Atoi(strings.TrimSpace(out))
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d processes %q left", n, cmdline)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
