package mcpserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// TestUndoGuardComparesTypeAndMode: undo_patch restores only files still
// as the patch left them, in content, mode and type. A chmod 4755 since,
// a file replaced by a link to a file of the same content or by a
// directory, and a FIFO where the patch deleted a file are each
// undo_conflict naming the path, and the Project is left as it was.
func TestUndoGuardComparesTypeAndMode(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	root := env.Roots["alpha"]
	testutil.WriteFile(t, root, "gone.txt", "bye\n")
	testutil.WriteFile(t, root, "same.txt", "hello\n")
	_, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read", "project:write"}})
	cs := connect(t, env, tok.AccessToken, "")
	me := session("g")
	callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, me)
	add := func(p string) string { return "*** Begin Patch\n*** Add File: " + p + "\n+hello\n*** End Patch\n" }
	at := func(p string) string { return filepath.Join(root, p) }
	for _, tt := range []struct {
		name, path, patch string
		ifMatch           any
		change            func() error
	}{
		{"chmod 4755", "mode.txt", add("mode.txt"), nil, func() error { return os.Chmod(at("mode.txt"), 0o755|os.ModeSetuid) }},
		{"chmod 0600", "private.txt", add("private.txt"), nil, func() error { return os.Chmod(at("private.txt"), 0o600) }},
		{"a link to the same content", "link.txt", add("link.txt"), nil, func() error {
			if err := os.Remove(at("link.txt")); err != nil {
				return err
			}
			return os.Symlink("same.txt", at("link.txt"))
		}},
		{"a directory", "dir.txt", add("dir.txt"), nil, func() error {
			if err := os.Remove(at("dir.txt")); err != nil {
				return err
			}
			return os.Mkdir(at("dir.txt"), 0o755)
		}},
		{"a FIFO where a file was deleted", "gone.txt", "*** Begin Patch\n*** Delete File: gone.txt\n*** End Patch\n",
			contentHash([]byte("bye\n")), func() error { return syscall.Mkfifo(at("gone.txt"), 0o644) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			op := "p-" + tt.path
			if sc, res := callTool(t, cs, "apply_patch", map[string]any{"operationId": op, "patch": tt.patch,
				"ifMatch": map[string]any{tt.path: tt.ifMatch}}, me); res.IsError {
				t.Fatalf("apply: %v", sc)
			}
			if err := tt.change(); err != nil {
				t.Fatal(err)
			}
			before := testutil.Tree(t, root)
			sc, _ := callTool(t, cs, "undo_patch", map[string]any{"operationId": "u-" + tt.path, "patchOperationId": op}, me)
			if errCode(sc) != "undo_conflict" || !strings.Contains(mustJSON(sc["error"]), `"paths":["`+tt.path+`"]`) {
				t.Fatalf("undo: %v, want undo_conflict on %s", sc, tt.path)
			}
			if diff := cmp.Diff(before, testutil.Tree(t, root)); diff != "" {
				t.Errorf("a refused undo changed the Project (-before +after):\n%s", diff)
			}
		})
	}
}
