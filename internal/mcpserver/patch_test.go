package mcpserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/apptest"
)

func readVersion(t *testing.T, cs any, sc map[string]any) string {
	t.Helper()
	return sc["files"].([]any)[0].(map[string]any)["version"].(map[string]any)["contentHash"].(string)
}

func TestApplyPatchThroughMCP(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	root := env.Roots["alpha"]
	os.WriteFile(filepath.Join(root, "main.go"), []byte("package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "lib"), 0o755)
	os.WriteFile(filepath.Join(root, "lib", "AGENTS.md"), []byte("lib: no globals\n"), 0o644)
	c := env.Register("patch", "http://127.0.0.1:9/cb", "client_secret_basic")
	rw := env.GrantFor(c, apptest.Approval{Scopes: []string{"project:read", "project:write"}})
	ro := env.GrantFor(c, apptest.Approval{Scopes: []string{"project:read"}})
	cs := connect(t, env, rw.AccessToken, "")
	me := session("p")
	callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, me)
	sc, _ := callTool(t, cs, "read_files", map[string]any{"files": []any{map[string]any{"path": "main.go"}}}, me)
	v1 := readVersion(t, cs, sc)
	p1 := "*** Begin Patch\n*** Update File: main.go\n@@ func main() {\n-\tprintln(\"hi\")\n+\tprintln(\"hello\")\n*** End Patch\n"
	args := map[string]any{"operationId": "p1", "patch": p1, "ifMatch": map[string]any{"main.go": v1}}
	sc, res := callTool(t, cs, "apply_patch", args, me)
	if res.IsError {
		t.Fatalf("apply: %v", sc)
	}
	v2 := sc["files"].([]any)[0].(map[string]any)["contentHash"].(string)
	got, _ := os.ReadFile(filepath.Join(root, "main.go"))
	if !strings.Contains(string(got), "hello") || v2 == v1 {
		t.Fatalf("file after patch: %s", got)
	}
	// Lost response: the same request replays, the file is patched once.
	sc, _ = callTool(t, cs, "apply_patch", args, me)
	if sc["replayed"] != true {
		t.Fatalf("replay: %v", sc)
	}
	if again, _ := os.ReadFile(filepath.Join(root, "main.go")); string(again) != string(got) {
		t.Fatal("replay changed the file again")
	}
	// Same operationId, different patch: conflict, nothing runs.
	sc, _ = callTool(t, cs, "apply_patch", map[string]any{"operationId": "p1", "patch": strings.Replace(p1, "hello", "other", 1), "ifMatch": v2}, me)
	if errCode(sc) != "operation_id_conflict" {
		t.Fatalf("conflict: %v", sc)
	}
	// Stale version: conflict with details, nothing written.
	sc, _ = callTool(t, cs, "apply_patch", map[string]any{"operationId": "p2", "patch": strings.Replace(p1, "hi", "hello", -1), "ifMatch": v1}, me)
	e := sc["error"].(map[string]any)
	if e["code"] != "file_version_conflict" || e["phase"] != "not_started" || e["details"].(map[string]any)["path"] != "main.go" {
		t.Fatalf("stale: %v", sc)
	}
	// Missing ifMatch, scalar on a multi-path patch, null on an existing file.
	two := "*** Begin Patch\n*** Add File: x.txt\n+x\n*** Add File: y.txt\n+y\n*** End Patch\n"
	for name, tc := range map[string]struct {
		ifMatch any
		want    string
	}{
		"missing":        {map[string]any{"x.txt": nil}, "if_match_required"},
		"scalar":         {nil, "if_match_ambiguous"},
		"null on exists": {map[string]any{"x.txt": nil, "y.txt": nil, "main.go": nil}, ""},
	} {
		a := map[string]any{"operationId": "m-" + name, "patch": two, "ifMatch": tc.ifMatch}
		if name == "null on exists" {
			a["patch"] = "*** Begin Patch\n*** Add File: main.go\n+x\n*** End Patch\n"
			a["ifMatch"] = nil
		}
		sc, _ := callTool(t, cs, "apply_patch", a, me)
		want := tc.want
		if want == "" {
			want = "file_version_conflict"
		}
		if errCode(sc) != want {
			t.Errorf("%s: %v", name, sc)
		}
	}
	// A nested AGENTS.md not yet delivered blocks the first patch under it.
	add := map[string]any{"operationId": "p3", "patch": "*** Begin Patch\n*** Add File: lib/util.go\n+package lib\n*** End Patch\n", "ifMatch": map[string]any{"lib/util.go": nil}}
	sc, _ = callTool(t, cs, "apply_patch", add, me)
	if errCode(sc) != "instructions_required" || !strings.Contains(mustJSON(sc), "no globals") {
		t.Fatalf("instructions gate: %v", sc)
	}
	if _, err := os.Stat(filepath.Join(root, "lib", "util.go")); err == nil {
		t.Fatal("file written despite the instructions gate")
	}
	if sc, res := callTool(t, cs, "apply_patch", add, me); res.IsError {
		t.Fatalf("after reading the instructions: %v", sc)
	}
	// Escapes are refused.
	for _, hdr := range []string{"../evil.txt", "/tmp/evil.txt"} {
		sc, _ := callTool(t, cs, "apply_patch", map[string]any{"operationId": "e" + hdr, "patch": "*** Begin Patch\n*** Add File: " + hdr + "\n+x\n*** End Patch\n", "ifMatch": nil}, me)
		if errCode(sc) != "path_denied" {
			t.Errorf("%s: %v", hdr, sc)
		}
	}
	// History shows this execution's patches only.
	sc, _ = callTool(t, cs, "show_changes", map[string]any{"source": "apply_patch_history"}, me)
	if len(sc["files"].([]any)) != 2 || !strings.Contains(sc["patch"].(string), "+\tprintln(\"hello\")") {
		t.Fatalf("history: %v", sc)
	}
	cs2 := connect(t, env, rw.AccessToken, "")
	callTool(t, cs2, "project_control", map[string]any{"action": "open", "operationId": "o2"}, session("other"))
	sc, _ = callTool(t, cs2, "show_changes", map[string]any{"source": "apply_patch_history"}, session("other"))
	if len(sc["files"].([]any)) != 0 {
		t.Fatalf("another execution sees the history: %v", sc)
	}
	// Checkpoints record files, never the patch text or operationId.
	sc, _ = callTool(t, cs, "project_thread_control", map[string]any{"action": "list"}, me)
	js := ""
	for _, th := range sc["threads"].([]any) {
		ref := th.(map[string]any)["threadRef"].(string)
		act, _ := callTool(t, cs, "project_thread_control", map[string]any{"action": "activity", "threadRef": ref}, me)
		js += mustJSON(act)
	}
	if !strings.Contains(js, "patch_applied") || strings.Contains(js, "println") || strings.Contains(js, `"p1"`) || strings.Contains(js, root) {
		t.Fatalf("checkpoint: %s", js)
	}
	// A read-only grant cannot see or call apply_patch.
	csRO := connect(t, env, ro.AccessToken, "")
	sc, _ = callTool(t, csRO, "apply_patch", args, session("ro"))
	if errCode(sc) != "insufficient_scope" {
		t.Fatalf("read-only grant: %v", sc)
	}
}

// TestApplyPatchHunkErrors checks that each way a hunk fails to place has
// its own code: a hunk that matches twice is patch_ambiguous (add context),
// not patch_context_not_found (re-read the file).
func TestApplyPatchHunkErrors(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	cs, me, version := openToPatch(t, env, "twice.txt", "x\ny\nx\n")
	for _, tc := range []struct {
		name, hunk string
		want       map[string]any
	}{
		{"ambiguous", "-x\n+z\n", map[string]any{"code": "patch_ambiguous", "category": "input", "retryable": false,
			"nextActions": []any{}, "phase": "not_started", "operationId": "ambiguous"}},
		{"not found", "-w\n+z\n", map[string]any{"code": "patch_context_not_found", "category": "input", "retryable": false,
			"nextActions": []any{"read_files"}, "phase": "not_started", "operationId": "not found"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{"operationId": tc.name, "ifMatch": version,
				"patch": "*** Begin Patch\n*** Update File: twice.txt\n@@\n" + tc.hunk + "*** End Patch\n"}
			sc, res := callTool(t, cs, "apply_patch", args, me)
			if !res.IsError {
				t.Fatalf("patch applied: %v", sc)
			}
			if diff := cmp.Diff(tc.want, sc["error"]); diff != "" {
				t.Errorf("error envelope (-want +got):\n%s", diff)
			}
			if got, _ := os.ReadFile(filepath.Join(env.Roots["alpha"], "twice.txt")); string(got) != "x\ny\nx\n" {
				t.Errorf("file changed: %q", got)
			}
		})
	}
}

// openToPatch writes path (with content) in the Project "alpha", opens it
// in a new conversation with a read-write grant, reads path and returns
// the session, its metadata and path's version for ifMatch.
func openToPatch(t *testing.T, env *apptest.Env, path, content string) (*mcp.ClientSession, map[string]any, string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(env.Roots["alpha"], path), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	c := env.Register("patcher", "http://127.0.0.1:9/cb", "client_secret_basic")
	tok := env.GrantFor(c, apptest.Approval{Scopes: []string{"project:read", "project:write"}})
	cs := connect(t, env, tok.AccessToken, "")
	me := session("patcher")
	callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "open"}, me)
	sc, _ := callTool(t, cs, "read_files", map[string]any{"files": []any{map[string]any{"path": path}}}, me)
	return cs, me, readVersion(t, cs, sc)
}
