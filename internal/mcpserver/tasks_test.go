package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/testutil"
)

func TestSaveProgressBoundsAndRevisions(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	_, tok := env.Grant(apptest.Approval{})
	cs := connect(t, env, tok.AccessToken, "")
	open := func(sess, op string) {
		t.Helper()
		if sc, res := callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": op}, session(sess)); res.IsError {
			t.Fatalf("open: %v", sc)
		}
	}
	save := func(sess string, args map[string]any) map[string]any {
		t.Helper()
		sc, _ := callTool(t, cs, "save_progress", args, session(sess))
		return sc
	}
	open("bounds", "o-bounds")
	// The bounds must be checked inside a bound execution; run them there.
	for name, tc := range map[string]struct {
		title, progress, want string
	}{
		"title 258 bytes": {strings.Repeat("界", 86), "p", "task_context_too_large"},
		"progress 8193":   {"t", strings.Repeat("a", 8193), "task_context_too_large"},
		"json over 12000": {"t", strings.Repeat("\x01", 2500), "task_context_too_large"},
		"nul in title":    {"a\x00b", "p", "invalid_tool_input"},
	} {
		sc := save("bounds", map[string]any{"operationId": "b-" + name, "title": tc.title, "progress": tc.progress, "status": "resumable"})
		if errCode(sc) != tc.want {
			t.Errorf("%s: got %v, want %s", name, sc["error"], tc.want)
		}
	}
	sc, _ := callTool(t, cs, "list_projects", nil, nil)
	if n := sc["projects"].([]any)[0].(map[string]any)["resumableTaskCount"]; n != float64(0) {
		t.Fatalf("rejected saves stored something: %v", n)
	}
	// Revisions.
	if c := errCode(save("bounds", map[string]any{"operationId": "r1", "title": "t", "progress": "p", "status": "resumable", "ifMatch": 3})); c != "if_match_unexpected" {
		t.Fatalf("first save with ifMatch: %s", c)
	}
	first := save("bounds", map[string]any{"operationId": "r2", "title": "Refactor parser", "progress": "step 1 done", "status": "resumable"})
	if first["revision"] != float64(1) || first["taskRef"] == nil || strings.Contains(mustJSON(first), "step 1 done") {
		t.Fatalf("first save: %v", first)
	}
	if again := save("bounds", map[string]any{"operationId": "r2", "title": "Refactor parser", "progress": "step 1 done", "status": "resumable"}); again["replayed"] != true || again["revision"] != float64(1) {
		t.Fatalf("replay: %v", again)
	}
	sc = save("bounds", map[string]any{"operationId": "r3", "title": "t", "progress": "p2", "status": "resumable"})
	if errCode(sc) != "if_match_required" || sc["error"].(map[string]any)["details"].(map[string]any)["currentRevision"] != float64(1) {
		t.Fatalf("update without ifMatch: %v", sc)
	}
	if c := errCode(save("bounds", map[string]any{"operationId": "r4", "title": "t", "progress": "p2", "status": "resumable", "ifMatch": 7})); c != "project_task_revision_conflict" {
		t.Fatalf("stale: %s", c)
	}
	// Retry with the same operationId after re-reading works.
	if sc := save("bounds", map[string]any{"operationId": "r4", "title": "t", "progress": "p2", "status": "resumable", "ifMatch": 1}); sc["revision"] != float64(2) {
		t.Fatalf("retry after conflict: %v", sc)
	}
	if sc := save("bounds", map[string]any{"operationId": "r5", "title": "t", "progress": "done", "status": "completed", "ifMatch": 2}); sc["status"] != "completed" {
		t.Fatalf("complete: %v", sc)
	}
	if c := errCode(save("bounds", map[string]any{"operationId": "r6", "title": "t", "progress": "more", "status": "resumable", "ifMatch": 3})); c != "project_task_not_active" {
		t.Fatalf("save after completion: %s", c)
	}
	// Capacity: 20 resumable Tasks per Project.
	for i := range 21 {
		sess := "cap-" + string(rune('a'+i))
		open(sess, "o-"+sess)
		sc := save(sess, map[string]any{"operationId": "c", "title": "task", "progress": "p", "status": "resumable"})
		if i < 20 && sc["taskRef"] == nil {
			t.Fatalf("save %d: %v", i, sc)
		}
		if i == 20 && errCode(sc) != "project_task_capacity" {
			t.Fatalf("21st save: %v", sc)
		}
	}
}

func TestResumeAcrossGrants(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	c := env.Register("resume", "http://127.0.0.1:9/cb", "client_secret_basic")
	a := env.GrantFor(c, apptest.Approval{Projects: []string{"alpha"}, Scopes: []string{"project:read", "project:write"}})
	b := env.GrantFor(c, apptest.Approval{Projects: []string{"alpha"}})
	other := env.GrantFor(c, apptest.Approval{Projects: []string{"beta"}})
	csA, csB, csO := connect(t, env, a.AccessToken, ""), connect(t, env, b.AccessToken, ""), connect(t, env, other.AccessToken, "")
	callTool(t, csA, "project_control", map[string]any{"action": "open", "operationId": "oa"}, session("a1"))
	if sc, res := callTool(t, csA, "apply_patch", map[string]any{"operationId": "pa", "patch": "*** Begin Patch\n*** Add File: a-notes.txt\n+from A\n*** End Patch\n", "ifMatch": nil}, session("a1")); res.IsError {
		t.Fatalf("A's patch: %v", sc)
	}
	saved, _ := callTool(t, csA, "save_progress", map[string]any{"operationId": "s", "title": "Port the CLI", "progress": "flags done; next: help text", "status": "resumable"}, session("a1"))
	ref := saved["taskRef"].(string)

	sc, _ := callTool(t, csB, "list_projects", nil, nil)
	projects := sc["projects"].([]any)
	if projects[0].(map[string]any)["resumableTaskCount"] != float64(1) {
		t.Fatalf("B does not see A's Task: %v", sc)
	}
	alphaRef := projects[0].(map[string]any)["projectRef"].(string)
	sc, _ = callTool(t, csB, "list_projects", map[string]any{"projectRef": alphaRef}, nil)
	if tasks := sc["resumableTasks"].([]any); len(tasks) != 1 || strings.Contains(mustJSON(sc), "help text") {
		t.Fatalf("listing: %v", sc)
	}
	sc, res := callTool(t, csB, "project_control", map[string]any{"action": "resume", "taskRef": ref, "operationId": "rb"}, session("b1"))
	if res.IsError {
		t.Fatalf("B resume: %v", sc)
	}
	if hist, _ := callTool(t, csB, "show_changes", map[string]any{"source": "apply_patch_history"}, session("b1")); len(hist["files"].([]any)) != 0 {
		t.Fatalf("B sees A's patch history: %v", hist)
	}
	cp := sc["checkpoint"].(map[string]any)
	if cp["untrustedSummary"].(map[string]any)["progress"] != "flags done; next: help text" || cp["serverObserved"] == nil {
		t.Fatalf("checkpoint: %v", cp)
	}
	// Only the Task's active execution (now B's) may complete it.
	sc, _ = callTool(t, csA, "save_progress", map[string]any{"operationId": "s2", "title": "x", "progress": "y", "status": "completed", "ifMatch": 1}, session("a1"))
	if errCode(sc) != "project_task_not_active" {
		t.Fatalf("A completing B's active Task: %v", sc)
	}
	// A grant without the Project cannot resume by taskRef alone.
	sc, _ = callTool(t, csO, "project_control", map[string]any{"action": "resume", "taskRef": ref, "operationId": "ro"}, session("o1"))
	if errCode(sc) != "project_not_authorized" {
		t.Fatalf("resume without the Project: %v", sc)
	}
	sc, _ = callTool(t, csO, "project_control", map[string]any{"action": "resume", "taskRef": "tsk_nope", "operationId": "rn"}, session("o1"))
	if errCode(sc) != "project_task_not_found" {
		t.Fatalf("unknown task: %v", sc)
	}
}

// TestSaveProgressRefusesSecrets: save_progress runs the secret detection
// exec_command runs (docs/errors.md: secret_persistence_blocked), on the
// title and on the progress, for each family the command check covers (a
// private-key block, an AWS access key, a GitHub token, a JWT). A refused
// save answers phase not_started, echoes nothing, and stores nothing: no
// Task, no operation record (the same operationId then saves clean text),
// and no byte of the credential in any table, any file of the state
// directory or the log. The Tasks service was once built without a
// detector (tasks.New(st, ops, nil)) and saved credentials as is.
func TestSaveProgressRefusesSecrets(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	_, tok := env.Grant(apptest.Approval{})
	cs := connect(t, env, tok.AccessToken, "")
	me := session("s")
	if sc, res := callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, me); res.IsError {
		t.Fatalf("open: %v", sc)
	}
	// marker is what the stored records must not hold: a part of each
	// credential at least 9 bytes long that no other text here has.
	for _, tc := range []struct {
		name, field, text, kind, marker string
	}{
		{"private key", "progress", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----",
			"private_key", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAE"},
		{"aws access key", "title", "key AKIAQX7MPLR2ZV9KWT4N", "aws_access_key_id", "AKIAQX7MPLR2ZV9KWT4N"},
		{"github token", "progress", "deploy with ghp_" + strings.Repeat("a1B2", 9), "github_token", strings.Repeat("a1B2", 9)},
		{"jwt", "title", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI5ODc2NTQzMjEwIn0.Qm9ndXNTaWduYXR1cmVGb3JUZXN0aW5n", "jwt", "Qm9ndXNTaWduYXR1cmVGb3JUZXN0aW5n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{"operationId": "save-" + tc.kind, "title": "t", "progress": "p", "status": "resumable"}
			args[tc.field] = tc.text
			sc, res := callTool(t, cs, "save_progress", args, me)
			e, _ := sc["error"].(map[string]any)
			if errCode(sc) != "secret_persistence_blocked" || e["phase"] != "not_started" {
				t.Fatalf("save_progress with the %s in its %s: %v", tc.name, tc.field, sc)
			}
			if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, tc.kind+" in "+tc.field) {
				t.Errorf("the answer does not say what was found where (%s in %s): %s", tc.kind, tc.field, text)
			}
			if answer := mustJSON(res); strings.Contains(answer, tc.marker) {
				t.Errorf("the answer echoes the credential: %s", answer)
			}
			noTableHolds(t, env.StateDir, tc.marker)
			noFileHolds(t, env.StateDir, tc.marker)
			if testutil.HoldsSecret([]byte(env.Logs.String()), tc.marker) {
				t.Error("the log holds the credential")
			}
		})
	}
	sc, _ := callTool(t, cs, "list_projects", nil, nil)
	if n := sc["projects"].([]any)[0].(map[string]any)["resumableTaskCount"]; n != float64(0) {
		t.Fatalf("a refused save stored a Task: %v", n)
	}
	// No operation record was kept: the refused call's operationId saves
	// the text without the credential.
	if sc, _ := callTool(t, cs, "save_progress", map[string]any{"operationId": "save-github_token", "title": "t",
		"progress": "deploy with the token from the vault", "status": "resumable"}, me); sc["revision"] != float64(1) || sc["replayed"] == true {
		t.Fatalf("a clean save under a refused operationId: %v", sc)
	}
}
