package mcpserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/apptest"
)

func TestInspectThroughMCP(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	root := env.Roots["alpha"]
	os.MkdirAll(filepath.Join(root, "src", "deep"), 0o755)
	os.MkdirAll(filepath.Join(root, "build"), 0o755)
	os.WriteFile(filepath.Join(root, ".gitignore"), []byte("build/\n"), 0o644)
	os.WriteFile(filepath.Join(root, "src", "deep", "AGENTS.md"), []byte("deep rules\n"), 0o644)
	os.WriteFile(filepath.Join(root, "src", "deep", "x.go"), []byte("package deep\n// TODO: needle here\n"), 0o644)
	os.WriteFile(filepath.Join(root, "build", "out.go"), []byte("// needle in ignored build output\n"), 0o644)
	os.WriteFile(filepath.Join(root, ".env"), []byte("needle=secret\n"), 0o644)
	os.WriteFile(filepath.Join(filepath.Dir(root), "outside.go"), []byte("needle OUTSIDE\n"), 0o644)
	os.Symlink("..", filepath.Join(root, "up"))
	_, tok := env.Grant(apptest.Approval{})
	cs := connect(t, env, tok.AccessToken, "")
	me := session("i")
	callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, me)
	sc, res := callTool(t, cs, "inspect", map[string]any{"operations": []any{
		map[string]any{"op": "grep", "pattern": "needle"},
		map[string]any{"op": "glob", "pattern": "**/*.go"},
		map[string]any{"op": "ls", "path": "../"},
	}}, me)
	if res.IsError {
		t.Fatalf("inspect: %v", sc)
	}
	results := sc["results"].([]any)
	grep := mustJSON(results[0])
	if !strings.Contains(grep, "src/deep/x.go") || strings.Contains(grep, "build/out.go") || strings.Contains(grep, ".env") || strings.Contains(grep, "OUTSIDE") {
		t.Fatalf("grep: %s", grep)
	}
	if results[0].(map[string]any)["sensitiveHidden"] != float64(1) {
		t.Fatalf("sensitive count: %s", grep)
	}
	if glob := mustJSON(results[1]); !strings.Contains(glob, "src/deep/x.go") || strings.Contains(glob, "outside.go") {
		t.Fatalf("glob: %s", glob)
	}
	if results[2].(map[string]any)["error"].(map[string]any)["code"] != "path_denied" {
		t.Fatalf("ls ../: %v", results[2])
	}
	if !strings.Contains(mustJSON(sc["instructionsDelta"]), "deep rules") {
		t.Fatalf("delta: %v", sc["instructionsDelta"])
	}
	if sc, _ := callTool(t, cs, "inspect", map[string]any{"operations": []any{map[string]any{"op": "grep", "pattern": "(", "regex": true}}}, me); !strings.Contains(mustJSON(sc), "invalid_pattern") {
		t.Fatalf("bad regex: %v", sc)
	}
	if sc, _ := callTool(t, cs, "inspect", map[string]any{"operations": []any{map[string]any{"op": "rm"}}}, me); errCode(sc) != "invalid_tool_input" {
		t.Fatalf("bad op: %v", sc)
	}
}
