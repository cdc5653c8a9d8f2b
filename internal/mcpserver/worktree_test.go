package mcpserver_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/apptest"
)

func branches(t *testing.T, dir string) string {
	out, _ := exec.Command("git", "-C", dir, "branch", "--list", "devspace/*").CombinedOutput()
	return strings.TrimSpace(string(out))
}

func TestManagedWorktrees(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha", "beta"}, Env: execScopes})
	root := env.Roots["alpha"]
	git(t, root, "init", "-q")
	os.WriteFile(filepath.Join(root, "README.md"), []byte("source\n"), 0o644)
	git(t, root, "add", ".")
	git(t, root, "commit", "-qm", "init")
	c := env.Register("wt", "http://127.0.0.1:9/cb", "client_secret_basic")
	rw := env.GrantFor(c, apptest.Approval{Projects: []string{"alpha", "beta"}, Scopes: []string{"project:read", "project:write", "process:execute"}})
	ro := env.GrantFor(c, apptest.Approval{Projects: []string{"alpha"}, Scopes: []string{"project:read"}})
	cs := connect(t, env, rw.AccessToken, "")
	sc, _ := callTool(t, cs, "list_projects", nil, nil)
	refs := map[string]string{}
	for _, p := range sc["projects"].([]any) {
		refs[p.(map[string]any)["label"].(string)] = p.(map[string]any)["projectRef"].(string)
	}
	me := session("wt")
	open := func(csx *mcp.ClientSession, op, ref string, meta map[string]any) map[string]any {
		sc, _ := callTool(t, csx, "project_control", map[string]any{"action": "open", "operationId": op, "projectRef": ref, "checkoutKind": "worktree"}, meta)
		return sc
	}
	csRO := connect(t, env, ro.AccessToken, "")
	if sc := open(csRO, "r1", refs["alpha"], session("ro")); errCode(sc) != "project_write_scope_required" {
		t.Fatalf("read-only grant: %v", sc)
	}
	if sc := open(cs, "b1", refs["beta"], session("beta")); errCode(sc) != "project_worktree_unavailable" {
		t.Fatalf("non-repository root: %v", sc)
	}
	first := open(cs, "w1", refs["alpha"], me)
	again := open(cs, "w1", refs["alpha"], me)
	if errCode(first) != "" || again["replayed"] != true {
		t.Fatalf("open: %v / %v", first, again)
	}
	dirs, _ := filepath.Glob(filepath.Join(env.StateDir, "worktrees", "*", "*"))
	if len(dirs) != 1 || branches(t, root) == "" {
		t.Fatalf("worktrees %v, branches %q", dirs, branches(t, root))
	}
	// A command writes in the worktree; the source checkout is untouched.
	sc, _ = callTool(t, cs, "exec_command", map[string]any{"operationId": "e1", "shell": true, "command": "echo change > new.txt && pwd"}, me)
	if sc["exitCode"] != float64(0) || strings.HasPrefix(sc["output"].(string), root) {
		t.Fatalf("exec in worktree: %v", sc)
	}
	if _, err := os.Stat(filepath.Join(root, "new.txt")); !os.IsNotExist(err) {
		t.Fatal("the source checkout changed")
	}
	sc, _ = callTool(t, cs, "show_changes", map[string]any{"source": "repository"}, me)
	if !strings.Contains(mustJSON(sc["files"]), "new.txt") {
		t.Fatalf("review in worktree: %v", sc)
	}
	// Git works read-only in the worktree's commands: the source's metadata
	// is readable, never writable (a planted hook would run on the host).
	sc, _ = callTool(t, cs, "exec_command", map[string]any{"operationId": "g1", "shell": true,
		"command": "git status --porcelain && git log --oneline | wc -l"}, me)
	if sc["exitCode"] != float64(0) || !strings.Contains(sc["output"].(string), "?? new.txt") {
		t.Fatalf("git status in the worktree: %v", sc)
	}
	hook := filepath.Join(root, ".git", "hooks", "post-checkout")
	sc, _ = callTool(t, cs, "exec_command", map[string]any{"operationId": "g2", "shell": true,
		"command": "echo 'touch /tmp/pwned' > " + hook + "; chmod +x " + hook + "; test -e " + hook}, me)
	if sc["exitCode"] == float64(0) {
		t.Fatalf("a worktree command wrote into the source repository's .git: %v", sc)
	}
	if _, err := os.Stat(hook); !os.IsNotExist(err) {
		t.Fatal("the hook exists in the source repository")
	}
	// The worktree's own .git file is repository metadata too: no patch
	// may repoint it, whatever allowSensitive says.
	dotgit, err := os.ReadFile(filepath.Join(dirs[0], ".git"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(dotgit)
	repoint := "*** Begin Patch\n*** Update File: .git\n@@\n-" + strings.TrimSuffix(string(dotgit), "\n") + "\n+gitdir: /tmp/elsewhere\n*** End Patch\n"
	for i, allow := range []bool{false, true} {
		sc, _ := callTool(t, cs, "apply_patch", map[string]any{"operationId": fmt.Sprintf("p%d", i), "patch": repoint,
			"ifMatch": "sha256:" + hex.EncodeToString(sum[:]), "allowSensitive": allow}, me)
		e, _ := sc["error"].(map[string]any)
		d, _ := e["details"].(map[string]any)
		if errCode(sc) != "path_denied" || d["reason"] != "repository_metadata" {
			t.Fatalf("patching the worktree's .git (allowSensitive %v): %v", allow, sc)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(dirs[0], ".git")); string(after) != string(dotgit) {
		t.Fatal("the worktree's .git file changed")
	}
	// Close refuses a dirty worktree, then removes a clean one and its branch.
	th, _ := callTool(t, cs, "project_thread_control", map[string]any{"action": "list"}, me)
	var ref string
	var rev float64
	for _, x := range th["threads"].([]any) {
		ref, rev = x.(map[string]any)["threadRef"].(string), x.(map[string]any)["revision"].(float64)
	}
	if sc, _ := callTool(t, cs, "project_thread_control", map[string]any{"action": "close", "threadRef": ref, "ifMatch": rev}, me); errCode(sc) != "project_worktree_dirty" {
		t.Fatalf("close dirty: %v", sc)
	}
	callTool(t, cs, "exec_command", map[string]any{"operationId": "e2", "program": "rm", "args": []any{"new.txt"}}, me)
	// The rm's tree may still be draining for a moment: project_busy is
	// retryable.
	for i := 0; ; i++ {
		sc, res := callTool(t, cs, "project_thread_control", map[string]any{"action": "close", "threadRef": ref, "ifMatch": rev}, me)
		if !res.IsError {
			break
		}
		if errCode(sc) != "project_busy" || i == 50 {
			t.Fatalf("close clean: %v", sc)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if dirs, _ := filepath.Glob(filepath.Join(env.StateDir, "worktrees", "*", "*")); len(dirs) != 0 || branches(t, root) != "" {
		t.Fatalf("after close: worktrees %v, branches %q", dirs, branches(t, root))
	}
	// A revoked grant's worktree stays on disk.
	open(cs, "w2", refs["alpha"], session("keep"))
	callTool(t, cs, "exec_command", map[string]any{"operationId": "e3", "shell": true, "command": "echo keep > kept.txt"}, session("keep"))
	p, _ := env.App.OAuth().Verify(context.Background(), rw.AccessToken)
	env.App.RevokeGrant(context.Background(), p.GrantID)
	kept, _ := filepath.Glob(filepath.Join(env.StateDir, "worktrees", "*", "*", "kept.txt"))
	if len(kept) != 1 {
		t.Fatalf("revoked grant's worktree files: %v", kept)
	}
}
