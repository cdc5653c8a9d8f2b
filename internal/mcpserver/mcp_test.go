package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// connect opens a go-sdk client session. version "" lets the client pick
// (it tries the stateless 2026-07-28 revision first).
func connect(t *testing.T, env *apptest.Env, token, version string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "devspace-test", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: env.URL + "/mcp",
		HTTPClient: &http.Client{Transport: testutil.Bearer(token, http.DefaultTransport)}, DisableStandaloneSSE: true}
	cs, err := client.Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callTool calls a tool with host metadata and returns the decoded
// structured content and whether it is an error.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, meta map[string]any) (map[string]any, *mcp.CallToolResult) {
	t.Helper()
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	if meta != nil {
		params.Meta = meta
	}
	res, err := cs.CallTool(context.Background(), params)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	var sc map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &sc)
	return sc, res
}

func errCode(sc map[string]any) string {
	e, _ := sc["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func session(id string) map[string]any { return map[string]any{"openai/session": id} }

func actor(sessionID, subject string) map[string]any {
	return map[string]any{"openai/session": sessionID, "openai/subject": subject}
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func TestMCPEndToEnd(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Env: map[string]string{"DEVSPACE_OAUTH_SCOPES": "project:read project:write process:execute"}})
	os.WriteFile(filepath.Join(env.Roots["alpha"], "AGENTS.md"), []byte("# Alpha rules\nRun make test before you finish.\n"), 0o644)
	_, tok := env.Grant(apptest.Approval{Projects: []string{"alpha", "beta"}, Scopes: []string{"project:read", "project:write", "process:execute"}})

	for _, version := range []string{"2025-06-18", "2025-11-25", ""} {
		t.Run("protocol "+version, func(t *testing.T) {
			cs := connect(t, env, tok.AccessToken, version)
			names := toolNames(t, cs)
			if len(names) < 2 || !strings.Contains(strings.Join(names, ","), "list_projects") {
				t.Fatalf("tools = %v", names)
			}
			sc, res := callTool(t, cs, "list_projects", map[string]any{}, nil)
			if res.IsError || len(sc["projects"].([]any)) != 2 {
				t.Fatalf("list_projects = %v", sc)
			}
		})
	}

	cs := connect(t, env, tok.AccessToken, "")
	sc, _ := callTool(t, cs, "list_projects", map[string]any{}, nil)
	var alphaRef string
	for _, p := range sc["projects"].([]any) {
		if p.(map[string]any)["label"] == "alpha" {
			alphaRef = p.(map[string]any)["projectRef"].(string)
		}
	}
	// Stateless client without host session: no identity, fail closed.
	sc, res := callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "op-1", "projectRef": alphaRef}, nil)
	if !res.IsError || errCode(sc) != "session_identity_required" {
		t.Fatalf("open without session identity: %v", sc)
	}
	sc, res = callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "op-1", "projectRef": alphaRef}, session("conv-1"))
	if res.IsError || sc["label"] != "alpha" {
		t.Fatalf("open: %v", sc)
	}
	instr := sc["instructions"].(map[string]any)
	if !strings.Contains(instr["content"].(string), "Run make test") || instr["files"].([]any)[0].(map[string]any)["trust"] != "repository_untrusted" {
		t.Fatalf("instructions = %v", instr)
	}
	if strings.Contains(mustJSON(res), "exe_") || strings.Contains(mustJSON(res), env.Roots["alpha"]) {
		t.Fatal("open leaks an internal execution ID or a host path")
	}
	// Identical retry replays.
	sc2, _ := callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "op-1", "projectRef": alphaRef}, session("conv-1"))
	if sc2["replayed"] != true {
		t.Fatalf("retry not replayed: %v", sc2)
	}
	// Same operationId, different request: conflict.
	sc, _ = callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "op-1"}, session("conv-1"))
	if errCode(sc) != "project_ref_required" && errCode(sc) != "operation_id_conflict" {
		t.Fatalf("conflicting retry: %v", sc)
	}

	// Hydrate after a restart with the same host session.
	env.Restart()
	cs = connect(t, env, tok.AccessToken, "")
	sc, res = callTool(t, cs, "project_control", map[string]any{"action": "hydrate"}, session("conv-1"))
	if res.IsError || sc["label"] != "alpha" {
		t.Fatalf("hydrate after restart: %v", sc)
	}
	// Another conversation under the same grant has no binding.
	sc, _ = callTool(t, cs, "project_control", map[string]any{"action": "hydrate"}, session("conv-2"))
	if errCode(sc) != "project_execution_required" {
		t.Fatalf("second session: %v", sc)
	}
	// interrupt with process:execute.
	sc, res = callTool(t, cs, "project_control", map[string]any{"action": "interrupt"}, session("conv-1"))
	if res.IsError || sc["interrupted"] != float64(0) {
		t.Fatalf("interrupt: %v", sc)
	}
	// Another Actor on the same conversation cannot interrupt and cannot
	// reuse the open operationId.
	sc, _ = callTool(t, cs, "project_control", map[string]any{"action": "interrupt"}, actor("conv-1", "someone-else"))
	if errCode(sc) != "project_execution_required" {
		t.Fatalf("foreign actor interrupt: %v", sc)
	}
	sc, _ = callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "op-1", "projectRef": alphaRef}, actor("conv-1", "someone-else"))
	if errCode(sc) != "operation_id_conflict" {
		t.Fatalf("foreign actor reusing operationId: %v", sc)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestScopesAndIsolation(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Env: map[string]string{"DEVSPACE_OAUTH_SCOPES": "project:read project:write process:execute"}})
	c := env.Register("iso", "http://127.0.0.1:9/cb", "client_secret_basic")
	a := env.GrantFor(c, apptest.Approval{Projects: []string{"alpha"}, Scopes: []string{"project:read"}})
	b := env.GrantFor(c, apptest.Approval{Projects: []string{"beta"}, Scopes: []string{"project:read"}})
	csA := connect(t, env, a.AccessToken, "")
	csB := connect(t, env, b.AccessToken, "")
	scA, _ := callTool(t, csA, "list_projects", nil, nil)
	alphaRef := scA["projects"].([]any)[0].(map[string]any)["projectRef"].(string)

	// interrupt without process:execute: insufficient_scope with a challenge.
	callTool(t, csA, "project_control", map[string]any{"action": "open", "operationId": "a1"}, session("s"))
	sc, res := callTool(t, csA, "project_control", map[string]any{"action": "interrupt"}, session("s"))
	if errCode(sc) != "insufficient_scope" {
		t.Fatalf("interrupt without scope: %v", sc)
	}
	www, _ := res.Meta["mcp/www_authenticate"].([]any)
	if len(www) != 1 || !strings.Contains(www[0].(string), `error="insufficient_scope"`) {
		t.Fatalf("no www_authenticate in _meta: %v", res.Meta)
	}
	// Grant B cannot see or open A's Project; an unknown ref looks the same.
	sc, _ = callTool(t, csB, "project_control", map[string]any{"action": "open", "operationId": "b1", "projectRef": alphaRef}, session("s"))
	sc2, _ := callTool(t, csB, "project_control", map[string]any{"action": "open", "operationId": "b2", "projectRef": "prj_doesnotexist"}, session("s"))
	if errCode(sc) != "project_not_authorized" || mustJSON(sc["error"]) != strings.Replace(mustJSON(sc2["error"]), `"b2"`, `"b1"`, 1) {
		t.Fatalf("foreign vs unknown ref differ: %v / %v", sc, sc2)
	}
	sc, _ = callTool(t, csB, "list_projects", map[string]any{"projectRef": alphaRef}, nil)
	if errCode(sc) != "project_not_authorized" {
		t.Fatalf("B listing A's project: %v", sc)
	}
	// Same session id under grant B does not reach A's execution.
	sc, _ = callTool(t, csB, "project_control", map[string]any{"action": "hydrate"}, session("s"))
	if errCode(sc) != "project_execution_required" {
		t.Fatalf("B hydrating: %v", sc)
	}
	// Revoke A: its next call fails at the HTTP layer; B still works.
	pa, _ := env.App.OAuth().Verify(context.Background(), a.AccessToken)
	if err := env.App.RevokeGrant(context.Background(), pa.GrantID); err != nil {
		t.Fatal(err)
	}
	if _, err := csA.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_projects", Arguments: map[string]any{}}); err == nil {
		t.Fatal("revoked grant still calls tools")
	}
	if sc, res := callTool(t, csB, "list_projects", nil, nil); res.IsError {
		t.Fatalf("B after A's revoke: %v", sc)
	}
	// Tool metrics recorded with bounded labels.
	rec := httptest.NewRecorder()
	env.App.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{`devspace_tool_calls_total{outcome="ok",tool="list_projects"}`,
		`devspace_tool_calls_total{outcome="scope",tool="project_control"}`,
		`devspace_tool_call_duration_seconds_count{tool="list_projects"}`, "devspace_executions_active"} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestInstructionPagingAndCursors(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	big := strings.Repeat("Follow the house style in every file you touch.\n", 600) // ~29 KB: 3 pages
	os.WriteFile(filepath.Join(env.Roots["alpha"], "AGENTS.md"), []byte(big), 0o644)
	c := env.Register("pages", "http://127.0.0.1:9/cb", "client_secret_basic")
	a := env.GrantFor(c, apptest.Approval{Projects: []string{"alpha"}})
	b := env.GrantFor(c, apptest.Approval{Projects: []string{"alpha"}})
	cs := connect(t, env, a.AccessToken, "")
	sc, _ := callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o1"}, session("s1"))
	in := sc["instructions"].(map[string]any)
	if in["pageCount"].(float64) < 2 || in["nextCursor"] == nil {
		t.Fatalf("expected several pages: %v", in["pageCount"])
	}
	cur := in["nextCursor"].(string)
	// Replays of the cursor from elsewhere are refused.
	csB := connect(t, env, b.AccessToken, "")
	callTool(t, csB, "project_control", map[string]any{"action": "open", "operationId": "o1"}, session("s1"))
	for name, tc := range map[string]struct {
		cs   *mcp.ClientSession
		meta map[string]any
		cur  string
		want string
	}{
		"other grant":   {csB, session("s1"), cur, "cursor_foreign"},
		"tampered":      {cs, session("s1"), cur[:len(cur)-2] + "AA", "cursor_invalid"},
		"garbage":       {cs, session("s1"), "dc1.e30.AAAA", "cursor_invalid"},
		"other session": {cs, session("s2"), cur, "project_execution_required"},
	} {
		t.Run(name, func(t *testing.T) {
			sc, _ := callTool(t, tc.cs, "project_control", map[string]any{"action": "hydrate", "cursor": tc.cur}, tc.meta)
			if errCode(sc) != tc.want {
				t.Fatalf("got %v, want %s", sc["error"], tc.want)
			}
		})
	}
	// A second execution in the same session makes the old cursor foreign.
	pages := 1
	for cur != "" {
		sc, res := callTool(t, cs, "project_control", map[string]any{"action": "hydrate", "cursor": cur}, session("s1"))
		if res.IsError {
			t.Fatalf("hydrate page: %v", sc)
		}
		pages++
		in := sc["instructions"].(map[string]any)
		cur, _ = in["nextCursor"].(string)
	}
	if pages < 3 {
		t.Fatalf("delivered %d pages", pages)
	}
	sc, _ = callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o2"}, session("s1"))
	first := sc["instructions"].(map[string]any)["nextCursor"].(string)
	callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o3"}, session("s1"))
	sc, _ = callTool(t, cs, "project_control", map[string]any{"action": "hydrate", "cursor": first}, session("s1"))
	if errCode(sc) != "cursor_foreign" {
		t.Fatalf("cursor of a replaced execution: %v", sc)
	}
	// Expired cursor.
	sc, _ = callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o4"}, session("s1"))
	late := sc["instructions"].(map[string]any)["nextCursor"].(string)
	env.Clock.Advance(31 * 60e9)
	sc, _ = callTool(t, cs, "project_control", map[string]any{"action": "hydrate", "cursor": late}, session("s1"))
	if errCode(sc) != "cursor_expired" {
		t.Fatalf("expired cursor: %v", sc)
	}
}

func TestOperationIDs(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	_, tok := env.Grant(apptest.Approval{Projects: []string{"alpha"}})
	cs := connect(t, env, tok.AccessToken, "")
	for name, tc := range map[string]struct {
		id string
		ok bool
	}{
		"128 ascii":     {strings.Repeat("a", 128), true},
		"multibyte 128": {strings.Repeat("😀", 32), true},
		"129 bytes":     {strings.Repeat("a", 129), false},
		"empty":         {"", false},
		"nul":           {"a\x00b", false},
	} {
		t.Run(name, func(t *testing.T) {
			sc, res := callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": tc.id}, session("ops-"+name))
			if tc.ok == res.IsError {
				t.Fatalf("ok=%v got %v", tc.ok, sc)
			}
			if !tc.ok && errCode(sc) != "invalid_tool_input" {
				t.Fatalf("code %v", sc)
			}
		})
	}
	// Raw JSON that Go's encoder cannot produce: invalid UTF-8 and a lone
	// surrogate escape.
	for name, raw := range map[string]string{
		"invalid utf-8":   "\"op\xff\"",
		"lone surrogate":  `"op\ud800"`,
		"duplicate key":   `"x", "operationId": "y"`,
		"case variant":    `"x", "OperationId": "y"`,
		"hyphenated name": `"x", "operation-Id": "y"`,
	} {
		t.Run(name, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"project_control","_meta":{"openai/session":"raw","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}},"arguments":{"action":"open","operationId":` + raw + `}}}`
			resp := rawMCP(t, env, tok.AccessToken, body)
			if !strings.Contains(resp, "invalid_tool_input") {
				t.Fatalf("response: %s", resp)
			}
		})
	}
	// Concurrent identical opens create one execution.
	before, _ := env.App.OpenExecutions(context.Background())
	var wg sync.WaitGroup
	results := make([]string, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc, _ := callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "same"}, session("race"))
			results[i] = mustJSON(sc["instructions"]) + mustJSON(sc["label"])
		}()
	}
	wg.Wait()
	n, _ := env.App.OpenExecutions(context.Background())
	if n-before != 1 {
		t.Fatalf("%d executions for one operationId", n-before)
	}
}

// rawMCP posts a JSON-RPC body over the stateless revision and returns the
// response body.
func rawMCP(t *testing.T, env *apptest.Env, token, body string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, env.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "project_control")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Status + " " + string(b)
}
