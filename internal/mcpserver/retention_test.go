package mcpserver_test

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/apptest"
)

// spoolState returns the output files in the state directory and how many
// descriptors this process holds open on them.
func spoolState(t *testing.T, env *apptest.Env) (files []string, fds int) {
	t.Helper()
	dir := filepath.Join(env.StateDir, "output")
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		files = append(files, e.Name())
	}
	links, _ := os.ReadDir("/proc/self/fd")
	for _, l := range links {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", l.Name())); err == nil && strings.HasPrefix(target, dir+"/") {
			fds++
		}
	}
	return files, fds
}

// gauge reads the unlabelled gauge n (devspace_output_bytes_retained…)
// from the metrics handler.
func gauge(t *testing.T, env *apptest.Env, n string) int64 {
	t.Helper()
	rec := httptest.NewRecorder()
	env.App.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(n) + ` (\S+)$`).FindStringSubmatch(rec.Body.String())
	if m == nil {
		t.Fatal(n + " not exported")
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return int64(f)
}

// TestRetainedOutputSurvivesRestart: finished commands leave memory and
// hold no descriptor; their output (truncated ones' real tail included),
// state and cursors survive a restart; commands that were running are
// reported killed; other executions cannot read it; revoke retires it and
// 24 h after the command ended it expires.
func TestRetainedOutputSurvivesRestart(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}, Env: execScopes})
	scopes := []string{"project:read", "project:write", "process:execute"}
	client, tok := env.Grant(apptest.Approval{Scopes: scopes})
	cs := connect(t, env, tok.AccessToken, "")
	me := session("retain")
	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		sc, _ := callTool(t, cs, name, args, me)
		return sc
	}
	call("project_control", map[string]any{"action": "open", "operationId": "o"})
	seq := call("exec_command", map[string]any{"operationId": "seq", "program": "seq", "args": []any{"1", "100000"}})
	big := call("exec_command", map[string]any{"operationId": "big", "shell": true, "timeoutMs": 60000,
		"command": "yes abcdefghijklmnopqrstuvwxyz | head -c 70000000; echo; echo THE-END"})
	for big["status"] == "running" {
		big = call("read_process_output", map[string]any{"processRef": big["processRef"], "mode": "tail", "limit": 100})
	}
	mark := marker(t)
	sleeper := call("exec_command", map[string]any{"operationId": "sleep", "shell": true, "command": "exec -a " + mark + " sleep 1000"})
	if seq["status"] != "exited" || big["status"] != "exited" || sleeper["status"] != "running" {
		t.Fatalf("start: %v / %v / %v", seq["status"], big["status"], sleeper["status"])
	}
	if live := call("read_process_output", map[string]any{"processRef": sleeper["processRef"], "waitMs": 100}); live["status"] != "running" || live["nextCursor"] == nil {
		t.Fatalf("live poll of a silent command: %v", live)
	}
	page := call("read_process_output", map[string]any{"outputRef": seq["outputRef"], "limit": 1000})
	if !strings.HasPrefix(page["output"].(string), "1\n2\n3\n") || page["nextCursor"] == nil {
		t.Fatalf("first page: %v", page)
	}

	// Hand-over: the finished commands leave memory, and no descriptor
	// stays open on their files.
	deadline := time.Now().Add(10 * time.Second)
	for {
		files, fds := spoolState(t, env)
		if len(files) == 2 && fds == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("spool files %v, %d open descriptors on them", files, fds)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := gauge(t, env, "devspace_output_bytes_retained"); n < 64<<20 {
		t.Fatalf("output_bytes_retained = %d, want the 64 MiB spool and the seq output", n)
	}

	env.Restart()
	waitGone(t, mark)
	cs = connect(t, env, tok.AccessToken, "")

	next := call("read_process_output", map[string]any{"outputRef": seq["outputRef"], "cursor": page["nextCursor"], "limit": 1000})
	want := strings.Builder{}
	for i := 1; i <= 100000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	if next["output"] != want.String()[1000:2000] || next["status"] != "exited" || next["exitCode"] != float64(0) {
		t.Fatalf("page after restart: %v", next)
	}
	hits := call("read_process_output", map[string]any{"outputRef": seq["outputRef"], "mode": "search", "query": "99999"})
	if h, _ := hits["hits"].([]any); len(h) != 1 || h[0].(map[string]any)["text"] != "99999" {
		t.Fatalf("search after restart: %v", hits["hits"])
	}
	tail := call("read_process_output", map[string]any{"outputRef": big["outputRef"], "mode": "tail", "limit": 100})
	if !strings.HasSuffix(tail["output"].(string), "\nTHE-END\n") || tail["truncated"] != true {
		t.Fatalf("tail of truncated output after restart: %v", tail)
	}
	state := call("read_process_output", map[string]any{"processRef": sleeper["processRef"]})
	if state["status"] != "killed" {
		t.Fatalf("a command running at restart: %v", state)
	}
	ws := call("write_stdin", map[string]any{"operationId": "w", "processRef": sleeper["processRef"], "chars": "x"})
	if errCode(ws) != "process_not_running" {
		t.Fatalf("write_stdin to a retained command: %v", ws)
	}
	replay := call("exec_command", map[string]any{"operationId": "seq", "program": "seq", "args": []any{"1", "100000"}})
	if replay["replayed"] != true || replay["processRef"] != seq["processRef"] || !strings.HasPrefix(replay["output"].(string), "1\n2\n") {
		t.Fatalf("replay after restart: %v", replay)
	}

	// Another conversation (execution) under the same grant sees nothing.
	other := session("retain-other")
	callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o2"}, other)
	sc, _ := callTool(t, cs, "read_process_output", map[string]any{"outputRef": seq["outputRef"]}, other)
	if errCode(sc) != "process_not_found" {
		t.Fatalf("other execution read retained output: %v", sc)
	}

	// Revoking the grant retires its output.
	if code := env.Revoke(client, tok.RefreshToken); code != 200 {
		t.Fatalf("revoke: %d", code)
	}
	if files, _ := spoolState(t, env); len(files) != 0 {
		t.Fatalf("revoked grant's output kept: %v", files)
	}
	if n := gauge(t, env, "devspace_output_bytes_retained"); n != 0 {
		t.Fatalf("output_bytes_retained after revoke = %d", n)
	}

	// Expiry: 24 h after the command ended its output goes.
	_, tok2 := env.Grant(apptest.Approval{Scopes: scopes})
	cs = connect(t, env, tok2.AccessToken, "")
	me = session("retain-2")
	call("project_control", map[string]any{"action": "open", "operationId": "o"})
	if sc := call("exec_command", map[string]any{"operationId": "e", "program": "echo", "args": []any{"kept"}}); sc["output"] != "kept\n" {
		t.Fatalf("echo: %v", sc)
	}
	env.Clock.Advance(23 * time.Hour)
	env.Restart()
	if files, _ := spoolState(t, env); len(files) != 1 {
		t.Fatalf("output expired early: %v", files)
	}
	env.Clock.Advance(2 * time.Hour)
	env.Restart()
	if files, _ := spoolState(t, env); len(files) != 0 {
		t.Fatalf("output kept past 24 h: %v", files)
	}
}

// TestRetainedOutputRetiredDuringRead: the retention may retire output
// (expiry, its execution closed elsewhere, the spool cap) between a read's
// lookup and the read of its file. The file being gone then means the
// output no longer exists — process_not_found — not a server fault.
func TestRetainedOutputRetiredDuringRead(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}, Env: execScopes})
	_, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read", "project:write", "process:execute"}})
	cs := connect(t, env, tok.AccessToken, "")
	me := session("retired")
	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		sc, _ := callTool(t, cs, name, args, me)
		return sc
	}
	call("project_control", map[string]any{"action": "open", "operationId": "o"})
	seq := call("exec_command", map[string]any{"operationId": "seq", "program": "seq", "args": []any{"1", "100000"}})
	deadline := time.Now().Add(10 * time.Second)
	var files []string
	for {
		var fds int
		if files, fds = spoolState(t, env); len(files) == 1 && fds == 0 {
			break // handed over: read from its file from now on
		}
		if time.Now().After(deadline) {
			t.Fatalf("spool files %v, %d open descriptors on them", files, fds)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if page := call("read_process_output", map[string]any{"outputRef": seq["outputRef"], "limit": 10}); page["output"] != "1\n2\n3\n4\n5\n" {
		t.Fatalf("page before: %v", page)
	}
	// What the sweep does to the file, without (yet) its record.
	if err := os.Remove(filepath.Join(env.StateDir, "output", files[0])); err != nil {
		t.Fatal(err)
	}
	for _, args := range []map[string]any{
		{"outputRef": seq["outputRef"], "limit": 10},
		{"outputRef": seq["outputRef"], "mode": "search", "query": "99999"},
		{"outputRef": seq["outputRef"], "mode": "tail", "limit": 10},
	} {
		if got := call("read_process_output", args); errCode(got) != "process_not_found" {
			t.Errorf("%v after the file was retired: %v", args["mode"], got)
		}
	}
}
