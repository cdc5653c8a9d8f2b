package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/apptest"
)

func TestSaveProgressBoundsAndRevisions(t *testing.T) {
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

// TestSaveProgressRefusesSecrets: save_progress runs the same secret
// detection as exec_command (docs/errors.md: secret_persistence_blocked),
// in the title and in the progress, and stores nothing then. The service
// was built without a detector, so credentials were saved as is.
func TestSaveProgressRefusesSecrets(t *testing.T) {
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	_, tok := env.Grant(apptest.Approval{})
	cs := connect(t, env, tok.AccessToken, "")
	if sc, res := callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, session("s")); res.IsError {
		t.Fatalf("open: %v", sc)
	}
	token := "ghp_" + strings.Repeat("a1B2", 9)
	for i, args := range []map[string]any{
		{"title": "t", "progress": "deploy with " + token},
		{"title": "key AKIAABCDEFGHIJKLMNOP", "progress": "p"},
	} {
		args["operationId"], args["status"] = "s"+string(rune('0'+i)), "resumable"
		sc, _ := callTool(t, cs, "save_progress", args, session("s"))
		if errCode(sc) != "secret_persistence_blocked" || strings.Contains(mustJSON(sc), token) {
			t.Errorf("save %d: %v", i, sc)
		}
	}
	sc, _ := callTool(t, cs, "list_projects", nil, nil)
	if n := sc["projects"].([]any)[0].(map[string]any)["resumableTaskCount"]; n != float64(0) {
		t.Fatalf("a refused save stored something: %v", n)
	}
	if sc, _ := callTool(t, cs, "save_progress", map[string]any{"operationId": "ok", "title": "t", "progress": "no credential here", "status": "resumable"}, session("s")); sc["revision"] != float64(1) {
		t.Fatalf("an ordinary save: %v", sc)
	}
}
