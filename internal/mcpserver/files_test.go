package mcpserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/apptest"
)

func TestReadFilesAndSkills(t *testing.T) {
	t.Parallel()
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

	read := func(args map[string]any) readFilesView { return mustCall[readFilesView](t, cs, "read_files", args, me) }
	one := func(path string) map[string]any { return map[string]any{"files": []any{map[string]any{"path": path}}} }
	rf := read(map[string]any{"files": []any{map[string]any{"path": "pkg/sub/a.go", "offset": 2, "limit": 1}}})
	if f := rf.Files[0]; f.Content != "func A() {}\n" || !strings.HasPrefix(f.Version.ContentHash, "sha256:") {
		t.Fatalf("item: %+v", f)
	}
	if d := rf.InstructionsDelta; len(d) != 1 || !strings.Contains(d[0].Content, "keep pkg pure") {
		t.Fatalf("instructionsDelta: %+v", d)
	}
	// Delivered once: a second read brings no delta.
	if d := read(one("pkg/sub/a.go")).InstructionsDelta; d != nil {
		t.Fatalf("delta repeated: %+v", d)
	}
	// Containment: every escape is path_denied, per item, with the same
	// message whether or not the target exists; nothing outside leaks.
	var msgs []string
	for _, p := range []string{"../outside-secret.txt", "/etc/passwd", "link-out", "dangling-out", "a\x00b", "../alpha_evil/x"} {
		sc, _ := callTool(t, cs, "read_files", one(p), me)
		rf, e := call[readFilesView](t, cs, "read_files", one(p), me)
		if e != nil || rf.Files[0].Error == nil || rf.Files[0].Error.Code != "path_denied" {
			t.Errorf("%q: %v", p, sc)
			continue
		}
		if strings.Contains(mustJSON(sc), "OUTSIDE-MARKER") || strings.Contains(mustJSON(sc), filepath.Dir(root)) {
			t.Errorf("%q leaks outside content or host paths: %v", p, sc)
		}
		if p == "link-out" || p == "dangling-out" {
			msgs = append(msgs, rf.Files[0].Error.Message)
		}
	}
	if len(msgs) == 2 && msgs[0] != msgs[1] {
		t.Errorf("existing and missing outside targets answer differently: %q vs %q", msgs[0], msgs[1])
	}
	if f := read(one(".env")).Files[0]; f.Error == nil || f.Error.Code != "sensitive_file" {
		t.Fatalf(".env without allowSensitive: %+v", f)
	}
	if f := read(map[string]any{"files": []any{map[string]any{"path": ".env"}}, "allowSensitive": true}).Files[0]; f.Content != "TOKEN=xyz\n" {
		t.Fatalf(".env with allowSensitive: %+v", f)
	}
	if _, e := call[readFilesView](t, cs, "read_files", map[string]any{"files": []any{}}, me); e == nil || e.Code != "invalid_tool_input" {
		t.Fatalf("zero files: %+v", e)
	}

	// Skills: search, support file refused before load, load, then readable.
	found := mustCall[skillsView](t, cs, "skills", map[string]any{"query": "release"}, me).Skills
	if len(found) != 1 || found[0].Trust != "repository_untrusted" {
		t.Fatalf("skills search: %+v", found)
	}
	uri := "skill://" + found[0].SkillID + "/checklist.md"
	if f := read(one(uri)).Files[0]; f.Error == nil || f.Error.Code != "skill_not_loaded" {
		t.Fatalf("support file before load: %+v", f)
	}
	if l := mustCall[skillsView](t, cs, "skills", map[string]any{"skillId": found[0].SkillID}, me).Loaded; l == nil || !strings.Contains(l.Body, "release checklist") {
		t.Fatalf("load: %+v", l)
	}
	items := read(map[string]any{"files": []any{map[string]any{"path": uri}, map[string]any{"path": "skill://" + found[0].SkillID + "/../../../outside-secret.txt"}}}).Files
	if items[0].Content != "1. tag\n2. push\n" || items[1].Error == nil || items[1].Error.Code != "path_denied" {
		t.Fatalf("support files: %+v", items)
	}
}
