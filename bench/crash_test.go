package bench

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/devspace-dev/devspace/internal/process"
	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/store"
)

var flagCrashAllow = flagStringList("crash-allow", "TestCrash: violation kinds reported but not failed (comma-separated), for known open findings")

// TestCrash is `make crash`: it SIGKILLs a real server at random points
// during apply_patch, exec_command, save_progress and token refresh
// (-crash kill points), restarts it on the same state, and checks after
// every kill that:
//
//   - the database passes PRAGMA integrity_check and the server becomes
//     ready again;
//   - every patched file is either fully old or fully new; after the
//     restart the whole patch is (the server finishes or undoes a patch
//     the kill interrupted), and no staging leftover
//     (.<name>.devspace-<hex>.tmp/.orig/.del) remains;
//   - no command ran twice (each writes one line to its marker file), and
//     no process of a command survives the restart (each command carries a
//     marker in its environment; /proc is scanned), nor an orphaned
//     supervisor;
//   - retrying the same operationId replays a committed result, reports
//     operation_outcome_unknown for one the kill left pending, and runs
//     afresh only when nothing had happened;
//   - a refresh token either rotated (the old one is then refused) or did
//     not (the old one still works), never both, never a server error.
func TestCrash(t *testing.T) {
	if *flagCrash <= 0 {
		t.Skip("run with -crash N (make crash)")
	}
	seed := *flagSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (rerun with -seed %d)", seed, seed)
	var id [4]byte
	_, _ = crand.Read(id[:])
	c := &crashRun{t: t, rng: mrand(seed), runID: "devspace-crash-" + hex.EncodeToString(id[:]),
		outcomes: map[string]int{}, violations: map[string][]string{}}
	c.srv = startServer(t, serverOptions{Projects: []string{"crash"}})
	c.dir = c.srv.Roots["crash"]
	c.oauth = c.srv.OAuth(t)
	c.client, c.tok = grant(t, c.srv, []string{"crash"}, allScopes)
	c.setupFiles()
	c.connect(true)

	// Calibrate: how long each action takes without a kill.
	actions := []string{"apply_patch", "exec_command", "save_progress", "token_refresh"}
	calib := map[string]time.Duration{}
	for _, a := range actions {
		var d durations
		for range 3 {
			op := c.prepare(a, -1)
			start := time.Now()
			res := op.do()
			d = append(d, time.Since(start))
			if res.err != nil || res.code != "" {
				t.Fatalf("calibration %s: %v %s %v", a, res.err, res.code, res.sc)
			}
			c.settle(op, res)
		}
		calib[a] = d.p50()
	}
	t.Logf("calibrated: %v", calib)

	start := time.Now()
	for i := range *flagCrash {
		a := actions[i%len(actions)]
		// Half the kills land early (where reservation, staging and spawn
		// happen), half anywhere in the call.
		window := calib[a]*3/2 + time.Millisecond
		if c.rng.IntN(2) == 0 {
			window = min(window, 8*time.Millisecond)
		}
		c.iteration(i, a, time.Duration(c.rng.Int64N(int64(window))))
	}
	c.srv.Kill()
	c.checkDB("final")
	c.checkOrphans("final")

	// Report.
	w := os.Stdout
	fmt.Fprintf(w, "\nDevSpace crash consistency: %d kill points in %s (seed %d)\n\n", *flagCrash, time.Since(start).Round(time.Second), seed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "action / state after the kill / outcome of the retry\tcount\t")
	var keys []string
	for k := range c.outcomes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%d\t\n", k, c.outcomes[k])
	}
	tw.Flush()
	kinds := make([]string, 0, len(c.violations))
	for k := range c.violations {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	if len(kinds) == 0 {
		fmt.Fprintf(w, "\nno violations\n\n")
	}
	for _, k := range kinds {
		v := c.violations[k]
		allowed := slices.Contains(*flagCrashAllow, k)
		fmt.Fprintf(w, "\nviolation %s: %d kill points%s, e.g.:\n", k, len(v), map[bool]string{true: " (allowed by -crash-allow: known open finding)"}[allowed])
		for _, s := range v[:min(5, len(v))] {
			fmt.Fprintf(w, "  %s\n", s)
		}
		if !allowed {
			t.Errorf("violation %s at %d kill points", k, len(v))
		}
	}
	fmt.Fprintln(w)
	saveJSON(t, "crash", start, map[string]any{"killPoints": *flagCrash, "seed": seed, "outcomes": c.outcomes,
		"violations": c.violations, "log": c.log, "allowed": *flagCrashAllow, "calibration": fmt.Sprint(calib)})
}

func mrand(seed int64) *rand.Rand { return rand.New(rand.NewPCG(uint64(seed), 99)) }

type crashRun struct {
	t      *testing.T
	srv    *server
	rng    *rand.Rand
	runID  string
	dir    string
	oauth  *apptest.Env
	client apptest.Client
	tok    apptest.TokenResponse
	sess   *session
	conv   int   // conversation counter (host session identity)
	pver   int   // version of the patched files
	taskRv int64 // revision of the conversation's Task; 0 before the first save

	outcomes   map[string]int
	violations map[string][]string
	log        []string // one line per kill point
}

func (c *crashRun) violate(kind, format string, args ...any) {
	c.violations[kind] = append(c.violations[kind], fmt.Sprintf(format, args...))
}

// Files patched at every apply_patch kill point: enough that the kill
// often lands between two renames.
const crashFiles = 40

func crashFile(i int) string { return fmt.Sprintf("src/f%02d.txt", i) }

// crashContent is file i at version v: 300 lines, the version on the
// first and the middle line.
func crashContent(i, v int) string {
	var b strings.Builder
	for l := range 300 {
		if l == 0 || l == 150 {
			fmt.Fprintf(&b, "version %d of file %d\n", v, i)
			continue
		}
		fmt.Fprintf(&b, "line %03d of file %02d: some steady text that no patch changes\n", l, i)
	}
	return b.String()
}

func (c *crashRun) setupFiles() {
	for i := range crashFiles {
		p := filepath.Join(c.dir, crashFile(i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			c.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(crashContent(i, c.pver)), 0o644); err != nil {
			c.t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(c.dir, ".crash"), 0o755); err != nil {
		c.t.Fatal(err)
	}
}

// connect opens an MCP session with the current access token; fresh
// starts a new conversation (a new execution), otherwise the conversation
// is hydrated after a restart.
func (c *crashRun) connect(fresh bool) {
	if c.sess != nil {
		c.sess.Close()
	}
	if fresh {
		c.conv++
		c.taskRv = 0
	}
	host := fmt.Sprintf("%s-conv-%d", c.runID, c.conv)
	s, err := newSession(context.Background(), c.srv.URL+"/mcp", c.tok.AccessToken, host)
	if err != nil {
		c.t.Fatalf("connect: %v", err)
	}
	c.sess = s
	if fresh {
		s.must(c.t, "project_control", map[string]any{"action": "open", "operationId": "open-" + host})
		return
	}
	r, err := s.call(context.Background(), "project_control", map[string]any{"action": "hydrate"})
	if err != nil || r.IsError {
		c.t.Fatalf("hydrate after restart: %v %v", err, r.SC)
	}
}

// callResult is what the client saw of one call.
type callResult struct {
	err  error // transport failure (the server died)
	code string
	sc   map[string]any
	// For token refresh.
	status int
	tok    apptest.TokenResponse
}

func (r callResult) class() string {
	switch {
	case r.err != nil:
		return "lost"
	case r.code == "operation_outcome_unknown":
		return "unknown"
	case r.code != "":
		return "error:" + r.code
	case r.sc["replayed"] == true:
		return "replayed"
	}
	return "fresh"
}

// crashOp is one prepared request: do sends it (again, for a retry).
type crashOp struct {
	action string
	id     string
	do     func() callResult
	marker string // exec: the marker file
	long   bool   // exec: a long-running tree with a daemonized child
	oldRT  string // token_refresh: the refresh token sent
}

func (c *crashRun) mcpCall(tool string, args map[string]any) callResult {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := c.sess.call(ctx, tool, args)
	if err != nil {
		return callResult{err: err}
	}
	res := callResult{sc: r.SC}
	if r.IsError {
		res.code = r.Code()
		if res.code == "" {
			res.code = "unknown_error"
		}
	}
	return res
}

func (c *crashRun) prepare(action string, i int) *crashOp {
	op := &crashOp{action: action, id: fmt.Sprintf("%s-%s-%d", c.runID, action, i)}
	if i < 0 {
		op.id = fmt.Sprintf("%s-calib-%d", op.id, c.rng.Uint64())
	}
	switch action {
	case "apply_patch":
		var b strings.Builder
		ifMatch := map[string]any{}
		b.WriteString("*** Begin Patch\n")
		for f := range crashFiles {
			name := crashFile(f)
			fmt.Fprintf(&b, "*** Update File: %s\n@@\n-version %d of file %d\n+version %d of file %d\n line 001 of file %02d: some steady text that no patch changes\n", name, c.pver, f, c.pver+1, f, f)
			fmt.Fprintf(&b, "@@\n line 149 of file %02d: some steady text that no patch changes\n-version %d of file %d\n+version %d of file %d\n", f, c.pver, f, c.pver+1, f)
			ifMatch[name] = "sha256:" + hex.EncodeToString(sha256sum(crashContent(f, c.pver)))
		}
		b.WriteString("*** End Patch\n")
		args := map[string]any{"operationId": op.id, "patch": b.String(), "ifMatch": ifMatch}
		op.do = func() callResult { return c.mcpCall("apply_patch", args) }
	case "exec_command":
		op.marker = fmt.Sprintf(".crash/m-%s-%d", action, i)
		if i < 0 {
			op.marker += fmt.Sprintf("-%d", c.rng.Uint64())
		}
		cmd := "echo run >> " + op.marker + "; sleep 0.0" + strconv.Itoa(c.rng.IntN(9)+1)
		op.long = i >= 0 && c.rng.IntN(3) == 0
		if op.long {
			cmd = "echo run >> " + op.marker + "; (setsid sleep 60 &); sleep 60"
		}
		args := map[string]any{"operationId": op.id, "shell": true, "command": cmd,
			"environment": map[string]any{"DEVSPACE_CRASH_MARKER": c.runID}}
		op.do = func() callResult { return c.mcpCall("exec_command", args) }
	case "save_progress":
		args := map[string]any{"operationId": op.id, "title": "crash " + strconv.Itoa(i), "progress": "progress note " + strconv.Itoa(i), "status": "resumable"}
		if c.taskRv > 0 {
			args["ifMatch"] = c.taskRv
		}
		op.do = func() callResult { return c.mcpCall("save_progress", args) }
	case "token_refresh":
		op.oldRT = c.tok.RefreshToken
		op.do = func() callResult { return c.refresh(op.oldRT) }
	}
	return op
}

// refresh posts a refresh_token grant over a fresh connection.
func (c *crashRun) refresh(rt string) callResult {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}
	req, _ := http.NewRequest(http.MethodPost, c.srv.URL+"/oauth/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(c.client.ID), url.QueryEscape(c.client.Secret))
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return callResult{err: err}
	}
	defer resp.Body.Close()
	var tr apptest.TokenResponse
	if err := jsonDecode(resp.Body, &tr); err != nil {
		return callResult{err: err}
	}
	tr.Status = resp.StatusCode
	res := callResult{status: resp.StatusCode, tok: tr}
	if resp.StatusCode != http.StatusOK {
		res.code = tr.Error
	}
	return res
}

// settle records a successful uncrashed call's effect.
func (c *crashRun) settle(op *crashOp, res callResult) {
	switch op.action {
	case "apply_patch":
		c.pver++
	case "save_progress":
		c.taskRv = int64(res.sc["revision"].(float64))
	case "token_refresh":
		c.tok = res.tok
		c.connect(false)
	case "exec_command":
		c.waitMarker(op, 1)
	}
}

func (c *crashRun) iteration(i int, action string, delay time.Duration) {
	op := c.prepare(action, i)
	done := make(chan callResult, 1)
	go func() { done <- op.do() }()
	time.Sleep(delay)
	if op.long {
		// Proof that the orphan scan sees commands: count this run's live
		// command processes just before the kill.
		if n := len(c.markedProcesses()); n > 0 {
			c.outcomes["exec_command / live command processes seen before a kill"]++
		}
	}
	c.srv.Kill()
	var first callResult
	select {
	case first = <-done:
	case <-time.After(60 * time.Second):
		c.t.Fatalf("kill point %d: the call did not return after the kill", i)
	}
	where := fmt.Sprintf("kill point %d (%s, %v after the request, first call %s)", i, action, delay.Round(time.Microsecond), first.class())

	// Offline checks: the database and the Project files as the kill left them.
	c.checkDB(where)
	state := ""
	switch action {
	case "apply_patch":
		state = c.patchState(where)
	case "exec_command":
		if n := c.markerLines(op); n > 1 {
			c.violate("command_ran_twice", "%s: marker has %d lines before the retry", where, n)
		}
	}

	c.srv.Start()
	c.checkOrphans(where)
	if action == "apply_patch" {
		// The restart recovers an interrupted patch before serving: a
		// patch killed after its commit point is finished, one killed
		// before it undone, so no patch stays mixed.
		after := c.patchState(where + " after the restart")
		c.outcomes[fmt.Sprintf("apply_patch / files %s at the kill, %s after the restart", state, after)]++
		if after == "mixed" {
			c.violate("patch_mixed_after_restart", "%s: files mixed at the kill stayed mixed after the restart", where)
		}
	}
	c.waitBackground(where)
	c.checkLeftovers(where)
	if action == "token_refresh" {
		c.retryRefresh(op, first, where)
		return
	}
	c.connect(false)
	retry := op.do()
	if retry.err != nil {
		c.t.Fatalf("%s: retry failed: %v", where, retry.err)
	}
	outcome := retry.class()
	c.outcomes[fmt.Sprintf("%s / %s / %s", action, orDash(state), outcome)]++
	c.log = append(c.log, fmt.Sprintf("%s: state %s, retry %s (conversation %d)", where, orDash(state), outcome, c.conv))
	if first.err == nil && first.class() == "fresh" && outcome != "replayed" {
		c.violate("answered_but_not_replayed", "%s: the first call answered, the retry got %s", where, outcome)
	}
	// Same request once more: never a second effect.
	again := op.do()
	switch {
	case again.err != nil:
		c.t.Fatalf("%s: second retry failed: %v", where, again.err)
	case (outcome == "fresh" || outcome == "replayed") && again.class() != "replayed",
		outcome == "unknown" && again.class() != "unknown":
		c.violate("not_idempotent", "%s: a second retry got %s after %s", where, again.class(), outcome)
	}
	switch action {
	case "apply_patch":
		c.checkPatchRetry(where, state, outcome)
	case "exec_command":
		c.checkExecRetry(op, where, outcome)
	case "save_progress":
		switch outcome {
		case "fresh", "replayed":
			c.taskRv = int64(retry.sc["revision"].(float64))
		case "unknown":
			c.recoverTaskRevision(where)
		default:
			c.violate("unexpected_retry_outcome", "%s: save_progress retry got %s %v", where, outcome, retry.sc)
			c.recoverTaskRevision(where)
		}
	}
	if action == "exec_command" {
		if n := c.markerLines(op); n > 1 {
			c.violate("command_ran_twice", "%s: marker has %d lines after two retries", where, n)
		}
	}
}

// recoverTaskRevision learns the conversation's Task revision after an
// unknown outcome, as a client would: a save without ifMatch is refused
// with the current revision (or, if the Task does not exist, creates it).
func (c *crashRun) recoverTaskRevision(where string) {
	r := c.mcpCall("save_progress", map[string]any{"operationId": fmt.Sprintf("probe-%d", c.rng.Uint64()), "title": "probe",
		"progress": "probe", "status": "resumable"})
	switch {
	case r.err != nil:
		c.t.Fatalf("%s: revision probe: %v", where, r.err)
	case r.code == "if_match_required":
		c.taskRv = int64(r.sc["error"].(map[string]any)["details"].(map[string]any)["currentRevision"].(float64))
	case r.code == "":
		c.taskRv = int64(r.sc["revision"].(float64))
	default:
		c.t.Fatalf("%s: revision probe: %s %v", where, r.code, r.sc)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// patchState classifies the patched files: all old, all new, or mixed
// (the kill fell between two renames); a file that is neither version is
// a violation.
func (c *crashRun) patchState(where string) string {
	old, new := 0, 0
	for f := range crashFiles {
		b, err := os.ReadFile(filepath.Join(c.dir, crashFile(f)))
		switch {
		case err != nil:
			c.violate("file_missing", "%s: %s: %v", where, crashFile(f), err)
		case string(b) == crashContent(f, c.pver):
			old++
		case string(b) == crashContent(f, c.pver+1):
			new++
		default:
			c.violate("half_written_file", "%s: %s is neither the old nor the new version (%d bytes)", where, crashFile(f), len(b))
		}
	}
	switch {
	case new == 0:
		return "all old"
	case old == 0:
		return "all new"
	}
	return "mixed"
}

// checkPatchRetry: a retry may run afresh only if nothing was written,
// replay only if everything was, and must report an unknown outcome
// otherwise. Then the files are brought to the new version for the next
// kill point (as a user would after an unknown outcome).
func (c *crashRun) checkPatchRetry(where, state, outcome string) {
	ok := map[string][]string{
		"all old": {"fresh", "unknown"},
		"all new": {"replayed", "unknown"},
		"mixed":   {"unknown"},
	}[state]
	if !slices.Contains(ok, outcome) {
		c.violate("wrong_retry_outcome", "%s: files %s, retry %s", where, state, outcome)
	}
	c.pver++
	for f := range crashFiles {
		if err := os.WriteFile(filepath.Join(c.dir, crashFile(f)), []byte(crashContent(f, c.pver)), 0o644); err != nil {
			c.t.Fatal(err)
		}
	}
}

func (c *crashRun) markerLines(op *crashOp) int {
	b, err := os.ReadFile(filepath.Join(c.dir, op.marker))
	if errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	if err != nil {
		c.t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func (c *crashRun) waitMarker(op *crashOp, want int) bool {
	return waitFor(context.Background(), 10*time.Second, func() bool { return c.markerLines(op) >= want })
}

func (c *crashRun) checkExecRetry(op *crashOp, where, outcome string) {
	switch outcome {
	case "fresh":
		// Nothing had started: the retry runs the command, once.
		if !c.waitMarker(op, 1) {
			c.violate("fresh_run_did_not_run", "%s: the retry ran afresh but the marker never appeared", where)
		}
	case "replayed", "unknown":
		// The command may have started (at most once) before the kill; it
		// must not start again. Give a wrongly restarted command time to
		// write.
		time.Sleep(100 * time.Millisecond)
	default:
		c.violate("unexpected_retry_outcome", "%s: exec_command retry got %s", where, outcome)
	}
	if n := c.markerLines(op); n > 1 {
		c.violate("command_ran_twice", "%s: marker has %d lines after the retry (%s)", where, n, outcome)
	}
}

// retryRefresh: if the client got the new pair, the old refresh token
// must now fail; if it did not, the old token either still works (the
// rotation never committed) or fails because it did (the consumed token's
// replay then revokes the grant, by design: the harness makes a new one).
func (c *crashRun) retryRefresh(op *crashOp, first callResult, where string) {
	if first.err == nil && first.status == http.StatusOK {
		c.tok = first.tok
		c.outcomes["token_refresh / answered / new pair kept"]++
		c.connect(false)
		// The new pair must work after the restart.
		r := c.refresh(c.tok.RefreshToken)
		if r.err != nil || r.status != http.StatusOK {
			c.violate("refresh_lost", "%s: the answered refresh token no longer works: %v %d %s", where, r.err, r.status, r.code)
			c.regrant()
			return
		}
		c.tok = r.tok
		c.connect(false)
		return
	}
	r := c.refresh(op.oldRT)
	switch {
	case r.err != nil:
		c.t.Fatalf("%s: refresh after restart: %v", where, r.err)
	case r.status == http.StatusOK:
		c.outcomes["token_refresh / lost / old token still valid (not rotated)"]++
		c.tok = r.tok
		c.connect(false)
	case r.status == http.StatusBadRequest && r.code == "invalid_grant":
		// Rotated before the crash: the old pair is spent (its access token
		// was revoked by the rotation) and presenting the old refresh token
		// again is refused — a retry within oauth.RefreshRetryWindow keeps
		// the grant, a replay after it ends it; either way the old access
		// token must not work.
		c.outcomes["token_refresh / lost / rotated (the old token refused)"]++
		if s, err := newSession(context.Background(), c.srv.URL+"/mcp", c.tok.AccessToken, "probe"); err == nil {
			s.Close()
			c.violate("spent_token_works", "%s: the access token of a rotated pair still works", where)
		}
		c.regrant()
	default:
		c.violate("refresh_server_error", "%s: refresh after restart answered %d %s", where, r.status, r.code)
		c.regrant()
	}
}

func (c *crashRun) regrant() {
	c.tok = c.oauth.GrantFor(c.client, apptest.Approval{Projects: []string{"crash"}, Scopes: allScopes})
	c.connect(true)
}

// checkDB opens the stopped server's database and runs integrity_check.
func (c *crashRun) checkDB(where string) {
	dsn := "file:" + filepath.Join(c.srv.StateDir, store.FileName) + "?_pragma=busy_timeout(5000)"
	db, err := gorm.Open(sqlite.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		c.violate("database_unopenable", "%s: %v", where, err)
		return
	}
	sqlDB, _ := db.DB()
	defer sqlDB.Close()
	var res []string
	if err := db.Raw("PRAGMA integrity_check").Scan(&res).Error; err != nil || len(res) != 1 || res[0] != "ok" {
		c.violate("database_corrupt", "%s: integrity_check %v %v", where, res, err)
	}
}

// waitBackground waits until /readyz reports the work a start does after
// it listens as done: the worktree prune and the undo index, which sweeps
// the snapshots' temp files (checkLeftovers).
func (c *crashRun) waitBackground(where string) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var body struct {
			Checks map[string]bool `json:"checks"`
		}
		resp, err := http.Get(c.srv.URL + "/readyz")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
		}
		if err == nil && body.Checks["worktree_prune"] && body.Checks["undo_index"] {
			return
		}
		if time.Now().After(deadline) {
			c.violate("background_work_not_done", "%s: /readyz checks %v (%v) 10 s after the restart", where, body.Checks, err)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkLeftovers looks for patch staging files in the Project and temp
// files in the undo snapshots (which the server sweeps at startup: the
// patch staging before it listens, the snapshots a moment after).
func (c *crashRun) checkLeftovers(where string) {
	var found []string
	_ = filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".devspace-") {
			rel, _ := filepath.Rel(c.dir, p)
			found = append(found, rel)
			_ = os.Remove(p) // count each leftover once
		}
		return nil
	})
	if len(found) > 0 {
		c.violate("leftover_patch_temp_files", "%s: %v", where, found)
	}
	var snaps []string
	_ = filepath.WalkDir(filepath.Join(c.srv.StateDir, "snapshots"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp-") {
			snaps = append(snaps, d.Name())
		}
		return nil
	})
	if len(snaps) > 0 {
		c.violate("leftover_snapshot_temp_files", "%s: %v", where, snaps)
	}
}

// checkOrphans waits (up to the kill grace and a margin) until no process
// carries this run's marker and no supervisor of our binary has lost its
// server.
func (c *crashRun) checkOrphans(where string) {
	var left []string
	ok := waitFor(context.Background(), 10*time.Second, func() bool {
		left = c.orphans()
		return len(left) == 0
	})
	if !ok {
		c.violate("orphan_processes", "%s: %v", where, left)
		for _, p := range left {
			if pid, err := strconv.Atoi(strings.Fields(p)[0]); err == nil {
				_ = syscallKill(pid)
			}
		}
	}
}

// markedProcesses lists the live processes carrying this run's marker.
func (c *crashRun) markedProcesses() []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if strings.Contains(string(env), "DEVSPACE_CRASH_MARKER="+c.runID) {
			out = append(out, pid)
		}
	}
	return out
}

func (c *crashRun) orphans() []string {
	var out []string
	server := c.srv.PID()
	// Supervisors and launchers run the command helper beside the binary
	// (or the binary itself when there is none).
	ours := func(exe string) bool {
		return exe == c.srv.bin || exe == filepath.Join(filepath.Dir(c.srv.bin), process.HelperName)
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[0] == "Z" {
			continue // gone (a zombie waits for its reaper)
		}
		ppid, _ := strconv.Atoi(f[1])
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		cmd := strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")
		exe, _ := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		switch {
		case strings.Contains(string(env), "DEVSPACE_CRASH_MARKER="+c.runID):
			// A command of a server that is gone. Commands of the running
			// server (a retry's) are its business.
			if !descends(pid, server) {
				out = append(out, fmt.Sprintf("%d %s", pid, cmd))
			}
		case ours(exe) && strings.Contains(cmd, "__supervise") && ppid != server:
			out = append(out, fmt.Sprintf("%d supervisor (parent %d)", pid, ppid))
		case ours(exe) && strings.Contains(cmd, "__launch") && !descends(pid, server):
			// A pre-started launcher must die with its supervisor.
			out = append(out, fmt.Sprintf("%d launcher (parent %d)", pid, ppid))
		}
	}
	return out
}

// descends reports whether pid is anc or one of its descendants.
func descends(pid, anc int) bool {
	for range 64 {
		if pid == anc {
			return true
		}
		if pid <= 1 {
			return false
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 2 {
			return false
		}
		pid, _ = strconv.Atoi(f[1])
	}
	return false
}

func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

func jsonDecode(r io.Reader, v any) error { return json.NewDecoder(io.LimitReader(r, 1<<20)).Decode(v) }

// stringList is a comma-separated list flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(s string) error {
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			*l = append(*l, f)
		}
	}
	return nil
}

func flagStringList(name, usage string) *stringList {
	l := &stringList{}
	flag.Var(l, name, usage)
	return l
}
