package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"
)

// loadFiles is how many source files each load-test Project holds.
const loadFiles = 200

// populate writes a small source tree under root/src: loadFiles files of
// 40 lines, every tenth mentioning "needle".
func populate(t testing.TB, root string) {
	t.Helper()
	for i := range loadFiles {
		var b strings.Builder
		for l := range 40 {
			fmt.Fprintf(&b, "func f%d_%d(x int) int { return x * %d } // filler text for the load test\n", i, l, l)
			if i%10 == 0 && l == 20 {
				b.WriteString("// needle: the grep target\n")
			}
		}
		p := filepath.Join(root, "src", fmt.Sprintf("d%d", i%10), fmt.Sprintf("file%03d.go", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// worker is one simulated conversation doing mixed tool calls. Each
// worker patches only its own file, so a conflict means a bug.
type worker struct {
	s       *session
	name    string
	rng     *rand.Rand
	own     string
	line    int
	hash    string // current contentHash of own; "" before it exists
	ops     int
	execOps int
}

func newWorker(t testing.TB, srv *server, token, ref, name string, seed int) *worker {
	t.Helper()
	return &worker{s: openSession(t, srv, token, name, ref), name: name,
		rng: rand.New(rand.NewPCG(uint64(seed), 7)), own: "work/" + name + ".txt"}
}

// step makes one tool call chosen at random (read 35%, inspect 25%, exec
// 20%, patch 20%) and returns the tool, its error code ("" on success) and
// any transport error.
func (w *worker) step(ctx context.Context) (string, string, error) {
	w.ops++
	var tool string
	var args map[string]any
	switch p := w.rng.IntN(100); {
	case p < 35:
		tool = "read_files"
		// Any file of the tree: its directory is its index modulo 10.
		i := w.rng.IntN(loadFiles)
		args = map[string]any{"files": []any{map[string]any{"path": fmt.Sprintf("src/d%d/file%03d.go", i%10, i), "limit": 40}}}
	case p < 60:
		tool = "inspect"
		if w.rng.IntN(2) == 0 {
			args = map[string]any{"operations": []any{map[string]any{"op": "grep", "pattern": "needle", "path": "src"}}}
		} else {
			args = map[string]any{"operations": []any{map[string]any{"op": "glob", "pattern": "**/*.go", "path": fmt.Sprintf("src/d%d", w.rng.IntN(10))}}}
		}
	case p < 80:
		tool = "exec_command"
		w.execOps++
		if w.rng.IntN(4) == 0 {
			args = map[string]any{"operationId": fmt.Sprintf("%s-x%d", w.name, w.ops), "shell": true, "command": "echo load; ls src >/dev/null"}
		} else {
			args = map[string]any{"operationId": fmt.Sprintf("%s-x%d", w.name, w.ops), "program": "true"}
		}
	default:
		tool = "apply_patch"
		var text string
		var ifMatch any
		if w.hash == "" {
			text = fmt.Sprintf("*** Begin Patch\n*** Add File: %s\n+line %d\n*** End Patch\n", w.own, w.line)
			ifMatch = nil
		} else {
			text = fmt.Sprintf("*** Begin Patch\n*** Update File: %s\n@@\n-line %d\n+line %d\n*** End Patch\n", w.own, w.line, w.line+1)
			ifMatch = w.hash
		}
		args = map[string]any{"operationId": fmt.Sprintf("%s-p%d", w.name, w.ops), "patch": text, "ifMatch": map[string]any{w.own: ifMatch}}
	}
	r, err := w.s.call(ctx, tool, args)
	if err != nil {
		return tool, "", err
	}
	if r.IsError {
		code := r.Code()
		if code == "" {
			code = "unknown_error"
		}
		return tool, code, nil
	}
	switch tool {
	case "apply_patch":
		files, _ := r.SC["files"].([]any)
		if len(files) != 1 {
			return tool, "bad_result", nil
		}
		h, _ := files[0].(map[string]any)["contentHash"].(string)
		if w.hash != "" {
			w.line++
		}
		w.hash = h
	case "exec_command":
		if st := r.SC["status"]; st != "exited" && st != "running" {
			return tool, "bad_status_" + fmt.Sprint(st), nil
		}
	}
	return tool, "", nil
}

// expectedCodes are tool errors a correct server may give under this
// load: lock contention past the 8 s wait, and live-process limits.
var expectedCodes = map[string]bool{"project_busy": true, "process_limit": true, "process_slots_busy": true}

type loadReport struct {
	Started  time.Time `json:"started"`
	Duration string    `json:"duration"`
	Sessions int       `json:"sessions"`
	Grants   int       `json:"grants"`
	// The calls of every session (with -hostile: of the ordinary grants,
	// both phases).
	phaseReport
	Before snapshot `json:"before"`
	Peak   snapshot `json:"peak"`
	After  snapshot `json:"after"`
	// SessionsEnded is after every MCP session closed, before the Threads
	// (executions) are closed; SessionsEndedFDs names its descriptors.
	SessionsEnded    snapshot       `json:"sessionsEnded"`
	SessionsEndedFDs map[string]int `json:"sessionsEndedFds"`
	BeforeFDs        map[string]int `json:"beforeFds"`
	Settled          bool           `json:"settled"`
	SettleTime       string         `json:"settleTime"`
	// Hostile compares the ordinary grants' calls without and with the
	// hostile grant (-hostile); nil without it.
	Hostile *hostileReport `json:"hostile,omitempty"`
}

type toolStats struct {
	Calls int     `json:"calls"`
	P50   float64 `json:"p50ms"`
	P99   float64 `json:"p99ms"`
	Max   float64 `json:"maxms"`
}

// tally collects calls' latencies and error codes by tool. It is safe for
// concurrent use.
type tally struct {
	mu         sync.Mutex
	lat        map[string]durations
	errors     map[string]int
	unexpected int
}

func newTally() *tally { return &tally{lat: map[string]durations{}, errors: map[string]int{}} }

// record adds one call: its tool, its error code ("" on success) and how
// long it took. A code outside expectedCodes is unexpected.
func (t *tally) record(tool, code string, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lat[tool] = append(t.lat[tool], d)
	if code != "" {
		t.errors[tool+": "+code]++
		if !expectedCodes[code] {
			t.unexpected++
		}
	}
}

// tools returns each tool's call count and latency percentiles.
func (t *tally) tools() map[string]toolStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]toolStats{}
	for tool, d := range t.lat {
		out[tool] = toolStats{Calls: len(d), P50: round(ms(d.p50()), 2), P99: round(ms(d.p99()), 2), Max: round(ms(d.pct(1)), 2)}
	}
	return out
}

// phaseReport is the calls of a phase (with -hostile: the ordinary
// grants').
type phaseReport struct {
	Calls       int64                `json:"calls"`
	CallsPerSec float64              `json:"callsPerSecond"`
	Tools       map[string]toolStats `json:"tools"`
	Errors      map[string]int       `json:"errors"`
	Unexpected  int                  `json:"unexpectedErrors"`
	// ServerCPU is the CPU time the server process used in the phase (its
	// supervisors and commands not included); 0 when not measured.
	ServerCPU float64 `json:"serverCpuSeconds,omitempty"`
}

// phase reports the tally as a phase that took elapsed; calls 0 counts
// the calls recorded.
func (t *tally) phase(calls int64, elapsed time.Duration) phaseReport {
	tools := t.tools()
	if calls == 0 {
		for _, s := range tools {
			calls += int64(s.Calls)
		}
	}
	return phaseReport{Calls: calls, CallsPerSec: round(float64(calls)/elapsed.Seconds(), 1), Tools: tools,
		Errors: t.errors, Unexpected: t.unexpected}
}

// snapshot is the server's resource use read from /metrics and /proc.
type snapshot struct {
	Goroutines float64 `json:"goroutines"`
	OpenFDs    float64 `json:"openFds"`
	// DBFDs are the descriptors on the database file: SQLite's unix VFS
	// keeps a closed connection's descriptor for reuse while other
	// connections hold locks, so they follow the pool's peak size, not
	// the current load (issue 8 note, finding 4).
	DBFDs     int     `json:"dbFds"`
	RSSMiB    float64 `json:"rssMiB"`
	Processes float64 `json:"processesRunning"`
	Children  int     `json:"childProcesses"`
}

func takeSnapshot(t testing.TB, srv *server) snapshot {
	m, err := srv.Metrics()
	if err != nil {
		t.Fatalf("scrape /metrics: %v", err)
	}
	return snapshot{Goroutines: m["go_goroutines"], OpenFDs: m["devspace_process_open_fds"], DBFDs: fdKinds(srv.PID())["state/devspace.db"],
		RSSMiB: round(m["devspace_process_resident_memory_bytes"]/(1<<20), 1), Processes: m["devspace_processes_running"],
		Children: len(childrenOf(srv.PID()))}
}

// childrenOf lists the direct children of pid (the idle and busy
// supervisors).
func childrenOf(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := statFields(c); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, c)
		}
	}
	return out
}

// describeChildren names pid's children: each one's PID, state, command
// line and how many children it has itself.
func describeChildren(pid int) string {
	var out []string
	for _, c := range childrenOf(pid) {
		state := "?"
		if f := statFields(c); len(f) > 0 {
			state = f[0]
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c))
		out = append(out, fmt.Sprintf("%d %s %q (%d children)", c, state, strings.ReplaceAll(string(cmdline), "\x00", " "), len(childrenOf(c))))
	}
	return strings.Join(out, "; ")
}

// statFields returns the fields of /proc/<pid>/stat from the third
// (state) on: the second, the command name, may hold spaces and
// parentheses. Nil when pid is gone.
func statFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

// cpuSeconds is the CPU time pid has used, user and system (fields 14 and
// 15 of its stat file, in USER_HZ: 100 on Linux).
func cpuSeconds(pid int) float64 {
	f := statFields(pid)
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / 100
}

// TestLoad is `make load`: -sessions concurrent sessions over -grants
// grants doing mixed read/inspect/exec/patch for -duration against a real
// server, then a check that the server returns to its baseline. With
// -hostile, one of the grants is hostile (hostile_test.go) and the
// ordinary grants' load runs without and with it.
func TestLoad(t *testing.T) {
	if !*flagLoad {
		t.Skip("run with -load (make load)")
	}
	nOrdinary := *flagGrants
	opts := serverOptions{}
	if *flagHostile {
		nOrdinary-- // the last grant is the hostile one
		if nOrdinary < hostileProjects {
			t.Fatalf("-hostile needs at least %d grants: the hostile grant shares %d ordinary grants' Projects", hostileProjects+1, hostileProjects)
		}
		opts.Env = hostileEnv(t)
	}
	labels := make([]string, nOrdinary)
	for i := range labels {
		labels[i] = fmt.Sprintf("p%02d", i)
	}
	opts.Projects = labels
	srv := startServer(t, opts)
	for _, l := range labels {
		populate(t, srv.Roots[l])
	}
	l := &load{t: t, srv: srv, sessions: *flagSessions, grants: make([]loadGrant, nOrdinary)}
	for i, label := range labels {
		_, tok := grant(t, srv, []string{label}, allScopes)
		l.grants[i] = loadGrant{token: tok.AccessToken, ref: projectRefs(t, srv, tok.AccessToken)[label]}
	}
	var h *hostileGrant
	if *flagHostile {
		h = newHostileGrant(t, srv, labels[:hostileProjects])
	}
	// Warm up at full concurrency (supervisor pool, connection pools,
	// caches sized for the peak), close what it opened, and let the server
	// settle: that is the baseline.
	warm := min(10*time.Second, max(2*time.Second, *flagDuration/6))
	l.phase("w", warm, func(_ int, tool, code string, _ time.Duration) {
		if code != "" && !expectedCodes[code] {
			t.Errorf("warm-up: %s: %s", tool, code)
		}
	})
	l.closeThreads()
	transport.CloseIdleConnections()
	settle(t, srv, nil, 30*time.Second)
	time.Sleep(2 * time.Second)
	rep := &loadReport{Started: time.Now(), Duration: flagDuration.String(), Sessions: l.sessions, Grants: *flagGrants}
	rep.Before = takeSnapshot(t, srv)
	rep.BeforeFDs = fdKinds(srv.PID())
	t.Logf("baseline: %+v", rep.Before)

	// Peak resource use, sampled every 500 ms.
	var (
		peakMu sync.Mutex
		peak   snapshot
	)
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stopSampling:
				return
			case <-time.After(500 * time.Millisecond):
			}
			s := takeSnapshot(t, srv)
			peakMu.Lock()
			peak.Goroutines = max(peak.Goroutines, s.Goroutines)
			peak.OpenFDs = max(peak.OpenFDs, s.OpenFDs)
			peak.DBFDs = max(peak.DBFDs, s.DBFDs)
			peak.RSSMiB = max(peak.RSSMiB, s.RSSMiB)
			peak.Processes = max(peak.Processes, s.Processes)
			peak.Children = max(peak.Children, s.Children)
			peakMu.Unlock()
		}
	}()

	all := newTally()
	var calls int64
	var elapsed time.Duration
	cpu := cpuSeconds(srv.PID())
	if h != nil {
		rep.Hostile, calls, elapsed = l.compareHostile(h, all)
	} else {
		calls, elapsed = l.phase("s", *flagDuration, func(_ int, tool, code string, d time.Duration) { all.record(tool, code, d) })
	}
	close(stopSampling)
	<-sampled
	rep.Peak = peak
	rep.phaseReport = all.phase(calls, elapsed)
	rep.ServerCPU = round(cpuSeconds(srv.PID())-cpu, 1)

	// Every session is closed; drop idle connections. Commands have ended,
	// but each execution keeps its commands' retained output (spool files)
	// for read_process_output until the execution closes.
	transport.CloseIdleConnections()
	settle(t, srv, nil, 30*time.Second)
	rep.SessionsEnded = takeSnapshot(t, srv)
	rep.SessionsEndedFDs = fdKinds(srv.PID())
	// Close every Thread (the app's close action), which closes the
	// executions: now everything must be back to the baseline.
	l.closeThreads()
	if h != nil {
		closeThreads(t, srv, h.token)
	}
	transport.CloseIdleConnections()
	settleStart := time.Now()
	rep.Settled = settle(t, srv, &rep.Before, 60*time.Second)
	rep.SettleTime = time.Since(settleStart).Round(100 * time.Millisecond).String()
	rep.After = takeSnapshot(t, srv)

	printLoad(rep)
	p := saveJSON(t, "load", rep.Started, rep)
	t.Logf("results written to %s", p)
	if rep.Unexpected > 0 {
		t.Errorf("%d unexpected errors: %v", rep.Unexpected, rep.Errors)
	}
	if !rep.Settled {
		t.Errorf("the server did not return to its baseline: before %+v, after %+v", rep.Before, rep.After)
	}
	if rep.After.Processes != 0 {
		t.Errorf("%v processes still running", rep.After.Processes)
	}
	if rep.Hostile != nil {
		rep.Hostile.check(t)
	}
}

// load is TestLoad's server and its ordinary grants.
type load struct {
	t        *testing.T
	srv      *server
	sessions int
	grants   []loadGrant
}

// loadGrant is an ordinary grant: its token and its one Project.
type loadGrant struct{ token, ref string }

// phase runs every session for d, each calling record after each call
// with the index of its grant in l.grants, and returns the calls made and
// how long the phase took.
func (l *load) phase(prefix string, d time.Duration, record func(grant int, tool, code string, d time.Duration)) (int64, time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d+2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var calls, transportErrs atomic.Int64
	start := time.Now()
	deadline := start.Add(d)
	for i := range l.sessions {
		gi := i % len(l.grants)
		g := l.grants[gi]
		wg.Go(func() {
			w := newWorker(l.t, l.srv, g.token, g.ref, fmt.Sprintf("%s%03d", prefix, i), i)
			defer w.s.Close()
			for time.Now().Before(deadline) {
				t0 := time.Now()
				tool, code, err := w.step(ctx)
				if err != nil {
					if transportErrs.Add(1) <= 5 {
						l.t.Errorf("session %d: %v", i, err)
					}
					record(gi, tool, "transport_error", time.Since(t0))
					return
				}
				record(gi, tool, code, time.Since(t0))
				calls.Add(1)
			}
		})
	}
	wg.Wait()
	return calls.Load(), time.Since(start)
}

// closeThreads closes every Thread of the ordinary grants.
func (l *load) closeThreads() {
	for _, g := range l.grants {
		closeThreads(l.t, l.srv, g.token)
	}
}

// closeThreads closes every Thread of the token's grant (and so their
// executions, their processes and retained output).
func closeThreads(t testing.TB, srv *server, token string) {
	s, err := newSession(context.Background(), srv.URL+"/mcp", token, "closer")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sc := s.must(t, "project_thread_control", map[string]any{"action": "list"})
	threads, _ := sc["threads"].([]any)
	for _, th := range threads {
		m := th.(map[string]any)
		if m["status"] == "closed" {
			continue
		}
		r, err := s.call(context.Background(), "project_thread_control", map[string]any{"action": "close", "threadRef": m["threadRef"], "ifMatch": m["revision"]})
		if err != nil || r.IsError {
			t.Errorf("close thread: %v %v", err, r.SC)
		}
	}
}

// rssSlackMiB is how far above its baseline the server's RSS may stay
// once the load is over.
const rssSlackMiB = 48

// settle waits until the server is idle: no command running and, with a
// baseline, goroutines, descriptors, supervisors and RSS back to it (a
// small slack for the supervisor pool refilling, the metrics scrape
// itself and the heap the runtime keeps).
func settle(t testing.TB, srv *server, base *snapshot, timeout time.Duration) bool {
	var last snapshot
	ok := waitFor(context.Background(), timeout, func() bool {
		last = takeSnapshot(t, srv)
		if last.Processes != 0 {
			return false
		}
		if base == nil {
			return true
		}
		// The Go runtime keeps freed heap for reuse and returns it to the
		// system gradually: RSS gets a slack, descriptors and goroutines
		// almost none.
		otherFDs := func(s *snapshot) float64 { return s.OpenFDs - float64(s.DBFDs) }
		return last.Goroutines <= base.Goroutines+5 && otherFDs(&last) <= otherFDs(base)+3 &&
			last.DBFDs <= *flagSessions+32 && last.Children <= base.Children &&
			last.RSSMiB <= base.RSSMiB+rssSlackMiB
	})
	if !ok {
		t.Logf("not settled: %+v (baseline %+v); open descriptors by kind: %v; child processes: %s", last, base, fdKinds(srv.PID()), describeChildren(srv.PID()))
	}
	return ok
}

// fdKinds counts a process's open descriptors by what they point at
// (socket, pipe, anon_inode, or a file's kind, see foldNames), to name a
// leak.
func fdKinds(pid int) map[string]int {
	out := map[string]int{}
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if i := strings.IndexByte(target, ':'); i > 0 && !strings.HasPrefix(target, "/") {
			target = target[:i]
		} else {
			target = foldNames(target)
		}
		out[target]++
	}
	return out
}

// foldNames keeps a path's last two elements with hex and digit runs
// folded to "#": one key per kind of file.
func foldNames(p string) string {
	return idRuns.ReplaceAllString(filepath.Join(filepath.Base(filepath.Dir(p)), filepath.Base(p)), "#")
}

var idRuns = regexp.MustCompile(`[0-9a-f]{6,}|[0-9]+`)

func saveJSON(t testing.TB, name string, started time.Time, v any) string {
	if err := os.MkdirAll(*flagResults, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(*flagResults, name+"-"+started.Format("20060102-150405")+".json")
	b, _ := json.MarshalIndent(v, "", "  ")
	if err := os.WriteFile(p, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func printLoad(r *loadReport) {
	w := os.Stdout
	fmt.Fprintf(w, "\nDevSpace load: %d sessions over %d grants, %s, %d calls (%.1f/s)\n\n", r.Sessions, r.Grants, r.Duration, r.Calls, r.CallsPerSec)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight|tabwriter.Debug)
	fmt.Fprintln(tw, "tool\tcalls\tp50 ms\tp99 ms\tmax ms\t")
	var tools []string
	for k := range r.Tools {
		tools = append(tools, k)
	}
	sort.Strings(tools)
	for _, k := range tools {
		s := r.Tools[k]
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t\n", k, s.Calls, s.P50, s.P99, s.Max)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nerrors: %d unexpected; by tool and code: %v\n", r.Unexpected, r.Errors)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight|tabwriter.Debug)
	fmt.Fprintln(tw, "\tgoroutines\topen fds\t(on the DB file)\tRSS MiB\tprocesses running\tchild processes\t")
	for _, s := range []struct {
		n string
		v snapshot
	}{{"before", r.Before}, {"peak", r.Peak}, {"sessions ended", r.SessionsEnded}, {"threads closed", r.After}} {
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%d\t%.1f\t%.0f\t%d\t\n", s.n, s.v.Goroutines, s.v.OpenFDs, s.v.DBFDs, s.v.RSSMiB, s.v.Processes, s.v.Children)
	}
	tw.Flush()
	fmt.Fprintf(w, "settled back to baseline: %v (after %s)\n\n", r.Settled, r.SettleTime)
	if r.Hostile != nil {
		printHostile(r.Hostile)
	}
}
