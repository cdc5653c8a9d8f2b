package mcpserver_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/devspace-dev/devspace/internal/apptest"
)

// TestApplyPatchSensitiveBehindSymlink: keys is a symlink to .ssh, so a
// patch to keys/config changes .ssh/config and needs allowSensitive, as
// read_files does.
func TestApplyPatchSensitiveBehindSymlink(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	root := env.Roots["alpha"]
	if err := os.MkdirAll(filepath.Join(root, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".ssh", "config"), []byte("Host x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".ssh", filepath.Join(root, "keys")); err != nil {
		t.Fatal(err)
	}
	_, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read", "project:write"}})
	cs := connect(t, env, tok.AccessToken, "")
	me := session("s")
	callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, me)
	sc, _ := callTool(t, cs, "read_files", map[string]any{"files": []any{map[string]any{"path": "keys/config"}}, "allowSensitive": true}, me)
	v := readVersion(t, cs, sc)
	p := "*** Begin Patch\n*** Update File: keys/config\n@@\n-Host x\n+Host evil\n*** End Patch\n"

	sc, _ = callTool(t, cs, "apply_patch", map[string]any{"operationId": "p1", "patch": p, "ifMatch": v}, me)
	if errCode(sc) != "path_denied" || sc["error"].(map[string]any)["details"].(map[string]any)["reason"] != "sensitive" {
		t.Fatalf("patch through the symlink without allowSensitive: %v", sc)
	}
	if b, _ := os.ReadFile(filepath.Join(root, ".ssh", "config")); string(b) != "Host x\n" {
		t.Fatalf(".ssh/config changed: %q", b)
	}
	sc, res := callTool(t, cs, "apply_patch", map[string]any{"operationId": "p2", "patch": p, "ifMatch": v, "allowSensitive": true}, me)
	if res.IsError {
		t.Fatalf("patch with allowSensitive: %v", sc)
	}
	if b, _ := os.ReadFile(filepath.Join(root, ".ssh", "config")); string(b) != "Host evil\n" {
		t.Fatalf(".ssh/config = %q", b)
	}
	// Sensitive by its real path, so never snapshotted: no undo, and no
	// snapshot holds either version.
	if sc, _ := callTool(t, cs, "undo_patch", map[string]any{"operationId": "u1"}, me); errCode(sc) != "undo_unavailable" {
		t.Fatalf("undo of a patch to .ssh/config through keys/: %v", sc)
	}
	noSnapshotHolds(t, env, "Host ")
}
