package mcpserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/apptest"
)

// TestSensitiveNamesFoldAsFilesystemsDo: on a case-insensitive mount each
// of these names is a sensitive file (.ssh/config, kubeconfig, .env,
// id_rsa…), so read_files refuses it without allowSensitive and inspect's
// grep does not search it, whatever the filesystem under the test.
func TestSensitiveNamesFoldAsFilesystemsDo(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	root := env.Roots["alpha"]
	names := []string{
		".\u017fsh/config",  // long s (Linux casefold, APFS)
		".\u00dfh/config",   // sharp s, full folding
		"\u212aubeconfig",   // Kelvin sign
		".s\u200dsh/config", // zero-width joiner (HFS+, Linux casefold)
		".e\u00adnv",        // soft hyphen (Linux casefold)
		"id_rs\u00e0",       // id_rsa + combining grave once decomposed (APFS, Linux casefold)
	}
	for _, n := range names {
		p := filepath.Join(root, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("needle=secret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, tok := env.Grant(apptest.Approval{})
	cs := connect(t, env, tok.AccessToken, "")
	me := session("f")
	callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, me)
	for _, n := range names {
		sc, _ := callTool(t, cs, "read_files", map[string]any{"files": []any{map[string]any{"path": n}}}, me)
		if got := mustJSON(sc); strings.Contains(got, "needle") || !strings.Contains(got, `"sensitive_file"`) {
			t.Errorf("read_files %q without allowSensitive: %s", n, got)
		}
		sc, _ = callTool(t, cs, "read_files", map[string]any{"files": []any{map[string]any{"path": n}}, "allowSensitive": true}, me)
		if got := mustJSON(sc); !strings.Contains(got, "needle") {
			t.Errorf("read_files %q with allowSensitive (control): %s", n, got)
		}
	}
	sc, res := callTool(t, cs, "inspect", map[string]any{"operations": []any{map[string]any{"op": "grep", "pattern": "needle"}}}, me)
	if res.IsError {
		t.Fatalf("inspect: %v", sc)
	}
	grep := sc["results"].([]any)[0].(map[string]any)
	if got := mustJSON(grep); strings.Contains(got, "secret") || grep["sensitiveHidden"] != float64(len(names)) {
		t.Errorf("grep: %s, want %d sensitive files hidden and none searched", got, len(names))
	}
}
