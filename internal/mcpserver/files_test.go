package mcpserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/apptest"
)

func TestReadFilesAndSkills(t *testing.T) {
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	root := env.Roots["alpha"]
	outside := filepath.Join(filepath.Dir(root), "outside-secret.txt")
	os.WriteFile(outside, []byte("OUTSIDE-MARKER\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "pkg", "sub"), 0o755)
	os.WriteFile(filepath.Join(root, "pkg", "AGENTS.md"), []byte("Nested rule: keep pkg pure.\n"), 0o644)
	os.WriteFile(filepath.Join(root, "pkg", "sub", "a.go"), []byte("package sub\n\nfunc A() {}\n"), 0o644)
	os.WriteFile(filepath.Join(root, ".env"), []byte("TOKEN=xyz\n"), 0o644)
	os.Symlink("../outside-secret.txt", filepath.Join(root, "link-out"))
	os.Symlink("../missing.txt", filepath.Join(root, "dangling-out"))
	os.MkdirAll(filepath.Join(root, ".agents", "skills", "release"), 0o755)
	os.WriteFile(filepath.Join(root, ".agents", "skills", "release", "SKILL.md"), []byte("---\nname: release\ndescription: Cut a release of the project\n---\nRun the release checklist.\n"), 0o644)
	os.WriteFile(filepath.Join(root, ".agents", "skills", "release", "checklist.md"), []byte("1. tag\n2. push\n"), 0o644)
	_, tok := env.Grant(apptest.Approval{})
	cs := connect(t, env, tok.AccessToken, "")
	me := session("files")
	if sc, res := callTool(t, cs, "read_files", map[string]any{"files": []any{map[string]any{"path": "pkg/sub/a.go"}}}, me); !res.IsError || errCode(sc) != "project_execution_required" {
		t.Fatalf("read before open: %v", sc)
	}
	callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, me)

	sc, res := callTool(t, cs, "read_files", map[string]any{"files": []any{map[string]any{"path": "pkg/sub/a.go", "offset": 2, "limit": 1}}}, me)
	if res.IsError {
		t.Fatalf("read: %v", sc)
	}
	f := sc["files"].([]any)[0].(map[string]any)
	if f["content"] != "func A() {}\n" || !strings.HasPrefix(f["version"].(map[string]any)["contentHash"].(string), "sha256:") {
		t.Fatalf("item: %v", f)
	}
	delta := sc["instructionsDelta"].([]any)
	if len(delta) != 1 || !strings.Contains(delta[0].(map[string]any)["content"].(string), "keep pkg pure") {
		t.Fatalf("instructionsDelta: %v", sc["instructionsDelta"])
	}
	// Delivered once: a second read brings no delta.
	sc, _ = callTool(t, cs, "read_files", map[string]any{"files": []any{map[string]any{"path": "pkg/sub/a.go"}}}, me)
	if sc["instructionsDelta"] != nil {
		t.Fatalf("delta repeated: %v", sc["instructionsDelta"])
	}
	// Containment: every escape is path_denied, per item, with the same
	// message whether or not the target exists; nothing outside leaks.
	var msgs []string
	for _, p := range []string{"../outside-secret.txt", "/etc/passwd", "link-out", "dangling-out", "a\x00b", "../alpha_evil/x"} {
		sc, res := callTool(t, cs, "read_files", map[string]any{"files": []any{map[string]any{"path": p}}}, me)
		item := sc["files"].([]any)[0].(map[string]any)
		e, _ := item["error"].(map[string]any)
		if res.IsError || e == nil || e["code"] != "path_denied" {
			t.Errorf("%q: %v", p, sc)
			continue
		}
		if strings.Contains(mustJSON(sc), "OUTSIDE-MARKER") || strings.Contains(mustJSON(sc), filepath.Dir(root)) {
			t.Errorf("%q leaks outside content or host paths: %v", p, sc)
		}
		if p == "link-out" || p == "dangling-out" {
			msgs = append(msgs, e["message"].(string))
		}
	}
	if len(msgs) == 2 && msgs[0] != msgs[1] {
		t.Errorf("existing and missing outside targets answer differently: %q vs %q", msgs[0], msgs[1])
	}
	sc, _ = callTool(t, cs, "read_files", map[string]any{"files": []any{map[string]any{"path": ".env"}}}, me)
	if sc["files"].([]any)[0].(map[string]any)["error"].(map[string]any)["code"] != "sensitive_file" {
		t.Fatalf(".env without allowSensitive: %v", sc)
	}
	sc, _ = callTool(t, cs, "read_files", map[string]any{"files": []any{map[string]any{"path": ".env"}}, "allowSensitive": true}, me)
	if sc["files"].([]any)[0].(map[string]any)["content"] != "TOKEN=xyz\n" {
		t.Fatalf(".env with allowSensitive: %v", sc)
	}
	if sc, _ := callTool(t, cs, "read_files", map[string]any{"files": []any{}}, me); errCode(sc) != "invalid_tool_input" {
		t.Fatalf("zero files: %v", sc)
	}

	// Skills: search, support file refused before load, load, then readable.
	sc, _ = callTool(t, cs, "skills", map[string]any{"query": "release"}, me)
	found := sc["skills"].([]any)
	if len(found) != 1 || found[0].(map[string]any)["trust"] != "repository_untrusted" {
		t.Fatalf("skills search: %v", sc)
	}
	id := found[0].(map[string]any)["skillId"].(string)
	uri := "skill://" + id + "/checklist.md"
	sc, _ = callTool(t, cs, "read_files", map[string]any{"files": []any{map[string]any{"path": uri}}}, me)
	if sc["files"].([]any)[0].(map[string]any)["error"].(map[string]any)["code"] != "skill_not_loaded" {
		t.Fatalf("support file before load: %v", sc)
	}
	sc, _ = callTool(t, cs, "skills", map[string]any{"skillId": id}, me)
	if !strings.Contains(sc["loaded"].(map[string]any)["body"].(string), "release checklist") {
		t.Fatalf("load: %v", sc)
	}
	sc, _ = callTool(t, cs, "read_files", map[string]any{"files": []any{map[string]any{"path": uri}, map[string]any{"path": "skill://" + id + "/../../../outside-secret.txt"}}}, me)
	items := sc["files"].([]any)
	if items[0].(map[string]any)["content"] != "1. tag\n2. push\n" || items[1].(map[string]any)["error"].(map[string]any)["code"] != "path_denied" {
		t.Fatalf("support files: %v", sc)
	}
}
