package mcpserver_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/apptest"
)

var execScopes = map[string]string{"DEVSPACE_OAUTH_SCOPES": "project:read project:write process:execute"}

func marker(t *testing.T) string {
	var b [6]byte
	rand.Read(b[:])
	return "devspace-test-" + hex.EncodeToString(b[:])
}

// alive reports whether any process carries the marker in its command line.
func alive(marker string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), marker) {
			return true
		}
	}
	return false
}

func waitGone(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for alive(marker) {
		if time.Now().After(deadline) {
			t.Fatalf("processes with %s survive", marker)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestExecCommandThroughMCP(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}, Env: execScopes})
	root := env.Roots["alpha"]
	os.Mkdir(filepath.Join(root, "sub"), 0o755)
	_, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read", "project:write", "process:execute"}})
	cs := connect(t, env, tok.AccessToken, "")
	me := session("x")
	callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, me)
	run := func(args map[string]any) map[string]any {
		t.Helper()
		sc, _ := callTool(t, cs, "exec_command", args, me)
		return sc
	}
	sc := run(map[string]any{"operationId": "e1", "program": "true"})
	if sc["status"] != "exited" || sc["exitCode"] != float64(0) {
		t.Fatalf("true: %v", sc)
	}
	sc = run(map[string]any{"operationId": "e2", "shell": true, "command": "pwd; echo err >&2; exit 3", "workingDirectory": "sub"})
	if sc["exitCode"] != float64(3) || !strings.Contains(sc["output"].(string), "/sub") || !strings.Contains(sc["output"].(string), "err") {
		t.Fatalf("shell: %v", sc)
	}
	for name, args := range map[string]map[string]any{
		"both modes":     {"operationId": "b1", "program": "true", "shell": true, "command": "true"},
		"no mode":        {"operationId": "b2"},
		"shell no cmd":   {"operationId": "b3", "shell": true},
		"github token":   {"operationId": "b4", "program": "echo", "args": []any{"ghp_" + strings.Repeat("a1B2c3D4e5", 4)[:36]}},
		"bearer header":  {"operationId": "b5", "shell": true, "command": "curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U' x"},
		"escape dir":     {"operationId": "b6", "program": "true", "workingDirectory": "../"},
		"bad env":        {"operationId": "b7", "program": "true", "environment": map[string]any{"1BAD": "x"}},
		"spawn failure":  {"operationId": "b8", "program": "/nonexistent/program"},
		"aws key in env": {"operationId": "b9", "program": "true", "environment": map[string]any{"KEY": "AKIAQX7MPLR2ZV9KWT4N"}},
	} {
		sc := run(args)
		want := map[string]string{"both modes": "command_mode_invalid", "no mode": "command_mode_invalid", "shell no cmd": "command_mode_invalid",
			"github token": "secret_persistence_blocked", "bearer header": "secret_persistence_blocked", "escape dir": "path_denied",
			"bad env": "invalid_tool_input", "spawn failure": "command_spawn_failed", "aws key in env": "secret_persistence_blocked"}[name]
		if errCode(sc) != want {
			t.Errorf("%s: got %v, want %s", name, sc["error"], want)
		}
		if e, _ := sc["error"].(map[string]any); (want == "command_spawn_failed" || want == "secret_persistence_blocked") &&
			(e["phase"] != "not_started" || e["operationId"] != args["operationId"]) {
			t.Errorf("%s: phase or operationId: %v", name, e)
		}
	}
	// Replay: concurrent identical requests run the command once.
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			callTool(t, cs, "exec_command", map[string]any{"operationId": "once", "shell": true, "command": "echo run >> once.txt"}, me)
		}()
	}
	wg.Wait()
	if b, _ := os.ReadFile(filepath.Join(root, "once.txt")); string(b) != "run\n" {
		t.Fatalf("command ran %q", b)
	}
	if sc := run(map[string]any{"operationId": "once", "shell": true, "command": "echo other >> once.txt"}); errCode(sc) != "operation_id_conflict" {
		t.Fatalf("conflicting replay: %v", sc)
	}
	// Large output: inline head+tail, full output paged with cursors.
	sc = run(map[string]any{"operationId": "big", "shell": true, "command": "seq 1 30000"})
	if sc["truncated"] != true || !strings.Contains(sc["output"].(string), "30000") || !strings.HasPrefix(sc["output"].(string), "1\n2\n") {
		t.Fatalf("big inline: truncated=%v", sc["truncated"])
	}
	outRef := sc["outputRef"].(string)
	var all strings.Builder
	cur := ""
	for i := 0; i < 20; i++ {
		args := map[string]any{"outputRef": outRef}
		if cur != "" {
			args["cursor"] = cur
		}
		page, _ := callTool(t, cs, "read_process_output", args, me)
		all.WriteString(page["output"].(string))
		cur, _ = page["nextCursor"].(string)
		if cur == "" {
			break
		}
	}
	if strings.Count(all.String(), "\n") != 30000 {
		t.Fatalf("paged output has %d lines", strings.Count(all.String(), "\n"))
	}
	hits, _ := callTool(t, cs, "read_process_output", map[string]any{"outputRef": outRef, "mode": "search", "query": "29999"}, me)
	if len(hits["hits"].([]any)) != 1 {
		t.Fatalf("search: %v", hits["hits"])
	}
	// Interactive: cat echoes what write_stdin sends, closeStdin ends it.
	sc = run(map[string]any{"operationId": "cat", "program": "cat"})
	ref := sc["processRef"].(string)
	if sc["status"] != "running" {
		t.Fatalf("cat: %v", sc)
	}
	if sc, _ := callTool(t, cs, "write_stdin", map[string]any{"operationId": "w1", "processRef": ref, "chars": "hello stdin\n"}, me); errCode(sc) != "" {
		t.Fatalf("write_stdin: %v", sc)
	}
	live, _ := callTool(t, cs, "read_process_output", map[string]any{"processRef": ref, "waitMs": 3000}, me)
	if !strings.Contains(live["output"].(string), "hello stdin") {
		t.Fatalf("live output: %v", live)
	}
	if sc, _ := callTool(t, cs, "write_stdin", map[string]any{"operationId": "w2", "processRef": ref, "chars": "\x03"}, me); errCode(sc) != "invalid_tool_input" {
		t.Fatalf("literal ctrl-c: %v", sc)
	}
	if sc, _ := callTool(t, cs, "write_stdin", map[string]any{"operationId": "w3", "processRef": ref, "chars": "x", "expectedRevision": 0}, me); errCode(sc) != "process_revision_conflict" {
		t.Fatalf("stale revision: %v", sc)
	}
	sc, _ = callTool(t, cs, "write_stdin", map[string]any{"operationId": "w4", "processRef": ref, "closeStdin": true}, me)
	if sc["status"] != "exited" {
		time.Sleep(500 * time.Millisecond)
	}
	// Another conversation cannot reach this process or its output.
	other := session("y")
	callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o2"}, other)
	if sc, _ := callTool(t, cs, "read_process_output", map[string]any{"outputRef": outRef}, other); errCode(sc) != "process_not_found" {
		t.Fatalf("foreign outputRef: %v", sc)
	}
	if sc, _ := callTool(t, cs, "write_stdin", map[string]any{"operationId": "w5", "processRef": ref, "closeStdin": true}, other); errCode(sc) != "process_not_found" {
		t.Fatalf("foreign processRef: %v", sc)
	}
	// Checkpoints carry the outcome, never the command or its output.
	th, _ := callTool(t, cs, "project_thread_control", map[string]any{"action": "list"}, me)
	js := ""
	for _, x := range th["threads"].([]any) {
		act, _ := callTool(t, cs, "project_thread_control", map[string]any{"action": "activity", "threadRef": x.(map[string]any)["threadRef"]}, me)
		js += mustJSON(act)
	}
	if !strings.Contains(js, "command_finished") || strings.Contains(js, "seq 1") || strings.Contains(js, "29999") || strings.Contains(js, "prc_") || strings.Contains(js, root) {
		t.Fatalf("checkpoints: %s", js)
	}
}

// TestProcessCleanupPaths: interrupt, timeout, Thread close refusal, grant
// revocation and server shutdown each leave no process of the command.
func TestProcessCleanupPaths(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}, Env: execScopes})
	_, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read", "project:write", "process:execute"}})
	cs := connect(t, env, tok.AccessToken, "")
	me := session("c")
	callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, me)
	daemon := func(m string) string {
		return "setsid sh -c 'exec -a " + m + " sleep 1000' & (exec -a " + m + " sleep 1000) & wait"
	}
	// Interrupt: the foreground tree ends (kill for setsid'd descendants
	// comes with close/revoke).
	m1 := marker(t)
	sc, _ := callTool(t, cs, "exec_command", map[string]any{"operationId": "i", "shell": true, "command": "exec -a " + m1 + " sleep 1000"}, me)
	if sc["status"] != "running" {
		t.Fatalf("sleep: %v", sc)
	}
	if r, _ := callTool(t, cs, "project_control", map[string]any{"action": "interrupt"}, me); r["interrupted"] != float64(1) {
		t.Fatalf("interrupt: %v", r)
	}
	waitGone(t, m1)
	// Timeout.
	m2 := marker(t)
	callTool(t, cs, "exec_command", map[string]any{"operationId": "t", "shell": true, "command": daemon(m2), "timeoutMs": 500}, me)
	waitGone(t, m2)
	// Thread close refuses while commands run.
	m3 := marker(t)
	callTool(t, cs, "exec_command", map[string]any{"operationId": "d", "shell": true, "command": daemon(m3)}, me)
	th, _ := callTool(t, cs, "project_thread_control", map[string]any{"action": "list"}, me)
	ref := th["threads"].([]any)[0].(map[string]any)["threadRef"].(string)
	if sc, _ := callTool(t, cs, "project_thread_control", map[string]any{"action": "close", "threadRef": ref, "ifMatch": 1}, me); errCode(sc) != "project_busy" {
		t.Fatalf("close with running commands: %v", sc)
	}
	// Grant revocation kills the daemonized tree.
	p, _ := env.App.OAuth().Verify(context.Background(), tok.AccessToken)
	if err := env.App.RevokeGrant(context.Background(), p.GrantID); err != nil {
		t.Fatal(err)
	}
	waitGone(t, m3)
	// Shutdown kills everything.
	_, tok2 := env.Grant(apptest.Approval{Scopes: []string{"project:read", "project:write", "process:execute"}})
	cs2 := connect(t, env, tok2.AccessToken, "")
	callTool(t, cs2, "project_control", map[string]any{"action": "open", "operationId": "o"}, me)
	m4 := marker(t)
	callTool(t, cs2, "exec_command", map[string]any{"operationId": "s", "shell": true, "command": daemon(m4)}, me)
	if !alive(m4) {
		t.Fatal("daemon did not start")
	}
	env.Stop()
	waitGone(t, m4)
}

// TestProcessLimitPerProject: a Project runs at most 8 commands, and one
// grant at most 4 of them (issue 31): a grant past its share gets
// process_limit (its own commands to end), a third grant on a Project
// full of two grants' commands gets process_slots_busy, retryable.
func TestProcessLimitPerProject(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}, Env: execScopes})
	m := marker(t)
	type grant struct {
		cs   *mcp.ClientSession
		name string
	}
	newGrant := func(name string) grant {
		_, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read", "project:write", "process:execute"}})
		g := grant{cs: connect(t, env, tok.AccessToken, ""), name: name}
		for i := range 2 {
			callTool(t, g.cs, "project_control", map[string]any{"action": "open", "operationId": fmt.Sprint("o", i)}, session(fmt.Sprintf("%s-%d", name, i)))
		}
		return g
	}
	execute := func(g grant, i int) map[string]any {
		args := map[string]any{"operationId": fmt.Sprint("l", i), "shell": true, "command": "exec -a " + m + " sleep 1000"}
		// Two executions of the grant on one Project.
		res, err := g.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "exec_command", Arguments: args, Meta: session(fmt.Sprintf("%s-%d", g.name, i%2))})
		if err != nil {
			return map[string]any{"callError": err.Error()}
		}
		var sc map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &sc)
		return sc
	}
	a, b, c := newGrant("a"), newGrant("b"), newGrant("c")
	// Four of each of A and B at once (each waits ~2 s server-side while
	// its command runs).
	results := make([]map[string]any, 8)
	var wg sync.WaitGroup
	for i := range 8 {
		g := a
		if i >= 4 {
			g = b
		}
		wg.Go(func() { results[i] = execute(g, i) })
	}
	wg.Wait()
	for i, sc := range results {
		if sc["status"] != "running" {
			t.Fatalf("command %d: %v", i, sc)
		}
	}
	if sc := execute(a, 8); errCode(sc) != "process_limit" || sc["error"].(map[string]any)["retryable"] != false {
		t.Fatalf("grant A's fifth command: %v", sc)
	}
	if sc := execute(c, 9); errCode(sc) != "process_slots_busy" || sc["error"].(map[string]any)["retryable"] != true {
		t.Fatalf("grant C on a Project full of A's and B's commands: %v", sc)
	}
	env.Stop()
	waitGone(t, m)
}
