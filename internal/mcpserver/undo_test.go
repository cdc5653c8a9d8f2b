package mcpserver_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/apptest"
)

func TestUndoPatchThroughMCP(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	root := env.Roots["alpha"]
	crlf := []byte("one\r\ntwo\r\nthree\r\n")
	os.WriteFile(filepath.Join(root, "win.txt"), crlf, 0o755)
	os.WriteFile(filepath.Join(root, ".env"), []byte("SECRET=1\n"), 0o600)
	_, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read", "project:write"}})
	cs := connect(t, env, tok.AccessToken, "")
	me := session("u")
	callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, me)
	sc, _ := callTool(t, cs, "read_files", map[string]any{"files": []any{map[string]any{"path": "win.txt"}}}, me)
	v := readVersion(t, cs, sc)
	p := "*** Begin Patch\n*** Update File: win.txt\n@@\n one\n-two\n+TWO\n*** Add File: new/deep/a.txt\n+hello\n*** End Patch\n"
	sc, res := callTool(t, cs, "apply_patch", map[string]any{"operationId": "p1", "patch": p, "ifMatch": map[string]any{"win.txt": v, "new/deep/a.txt": nil}}, me)
	if res.IsError {
		t.Fatalf("apply: %v", sc)
	}
	patched, _ := os.ReadFile(filepath.Join(root, "win.txt"))
	// Undo restores byte-exact content, mode, and removes created dirs.
	sc, res = callTool(t, cs, "undo_patch", map[string]any{"operationId": "u1"}, me)
	if res.IsError || sc["patchOperationId"] != "p1" {
		t.Fatalf("undo: %v", sc)
	}
	got, _ := os.ReadFile(filepath.Join(root, "win.txt"))
	fi, _ := os.Stat(filepath.Join(root, "win.txt"))
	if !bytes.Equal(got, crlf) || fi.Mode().Perm() != 0o755 {
		t.Fatalf("after undo: %q %v", got, fi.Mode())
	}
	if _, err := os.Stat(filepath.Join(root, "new")); !os.IsNotExist(err) {
		t.Fatalf("created directories survive undo: %v", err)
	}
	// Redo brings the patch back exactly.
	if sc, res := callTool(t, cs, "undo_patch", map[string]any{"operationId": "r1", "redo": true}, me); res.IsError {
		t.Fatalf("redo: %v", sc)
	}
	got, _ = os.ReadFile(filepath.Join(root, "win.txt"))
	if !bytes.Equal(got, patched) {
		t.Fatalf("after redo: %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "new", "deep", "a.txt")); string(b) != "hello\n" {
		t.Fatalf("redo of added file: %q", b)
	}
	// An external edit makes undo refuse and change nothing.
	os.WriteFile(filepath.Join(root, "new", "deep", "a.txt"), []byte("edited by hand\n"), 0o644)
	sc, _ = callTool(t, cs, "undo_patch", map[string]any{"operationId": "u2"}, me)
	if errCode(sc) != "undo_conflict" || !strings.Contains(mustJSON(sc), "new/deep/a.txt") {
		t.Fatalf("undo after external edit: %v", sc)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "win.txt")); !bytes.Equal(got, patched) {
		t.Fatal("a refused undo changed a file")
	}
	// Another execution cannot undo this execution's patch.
	other := session("u-other")
	callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o2"}, other)
	if sc, _ := callTool(t, cs, "undo_patch", map[string]any{"operationId": "u3", "patchOperationId": "p1"}, other); errCode(sc) != "undo_not_found" {
		t.Fatalf("foreign undo: %v", sc)
	}
	// A patch of .env is applied (allowSensitive) but never snapshotted.
	sc, _ = callTool(t, cs, "read_files", map[string]any{"files": []any{map[string]any{"path": ".env"}}, "allowSensitive": true}, me)
	ev := readVersion(t, cs, sc)
	sc, res = callTool(t, cs, "apply_patch", map[string]any{"operationId": "p2", "allowSensitive": true,
		"patch": "*** Begin Patch\n*** Update File: .env\n-SECRET=1\n+SECRET=2\n*** End Patch\n", "ifMatch": ev}, me)
	if res.IsError {
		t.Fatalf("sensitive patch: %v", sc)
	}
	noSnapshotHolds(t, env, "SECRET=")
	if sc, _ := callTool(t, cs, "undo_patch", map[string]any{"operationId": "u4"}, me); errCode(sc) != "undo_unavailable" {
		t.Fatalf("undo of a sensitive patch: %v", sc)
	}
	// The history shows the undo and redo.
	sc, _ = callTool(t, cs, "show_changes", map[string]any{"source": "apply_patch_history"}, me)
	if n := len(sc["files"].([]any)); n < 5 {
		t.Fatalf("history entries: %d", n)
	}
}

// noSnapshotHolds fails t if any undo snapshot file holds text.
func noSnapshotHolds(t *testing.T, env *apptest.Env, text string) {
	t.Helper()
	filepath.WalkDir(filepath.Join(env.StateDir, "snapshots"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(text)) {
				t.Errorf("snapshot %s holds %q", p, text)
			}
		}
		return nil
	})
}
