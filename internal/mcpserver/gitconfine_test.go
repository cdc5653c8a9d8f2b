package mcpserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/apptest"
)

// TestReviewRaceCannotEscapeSandbox: a command that may write the
// repository flips .git/config between a clean one and one with a filter
// that copies auth.json, while show_changes runs. The review's check can
// pass on the clean configuration and Git then read the other one: the
// filter runs, but in DevSpace's confined Git, which can no more read the
// state directory than the command can (found by an attacker review: the
// unconfined Git leaked auth.json after two reviews).
func TestReviewRaceCannotEscapeSandbox(t *testing.T) {
	t.Parallel()
	env, root := execRepo(t, map[string]string{"a.txt": "one\n", ".gitattributes": "a.txt filter=x\n"})
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("two\n"), 0o644)

	_, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read", "project:write", "process:execute"}})
	cs := connect(t, env, tok.AccessToken, "")
	me := session("attacker")
	if sc, _ := callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, me); errCode(sc) != "" {
		t.Fatalf("open: %v", sc)
	}
	auth := filepath.Join(env.StateDir, "auth.json")
	if sc, _ := callTool(t, cs, "exec_command", map[string]any{"operationId": "e0", "shell": true, "command": "cat " + auth}, me); !refused(sc) {
		t.Fatalf("control: the command read auth.json: %v", sc)
	}
	leak := filepath.Join(root, "leaked.json")
	script := `cp .git/config .git/good && cp .git/config .git/bad && ` +
		`printf '[filter "x"]\n\tclean = cp ` + auth + ` ` + leak + `; cat\n' >> .git/bad && ` +
		`end=$((SECONDS+8)); while [ $SECONDS -lt $end ]; do cp .git/good .git/c.tmp; mv .git/c.tmp .git/config; sleep 0.002; cp .git/bad .git/c.tmp; mv .git/c.tmp .git/config; sleep 0.003; done`
	if sc, _ := callTool(t, cs, "exec_command", map[string]any{"operationId": "e1", "shell": true, "command": script, "timeoutMs": 12000}, me); sc["status"] != "running" {
		t.Fatalf("flipper: %v", sc)
	}
	reviews := 0
	for deadline := time.Now().Add(6 * time.Second); time.Now().Before(deadline); reviews++ {
		callTool(t, cs, "show_changes", map[string]any{"source": "repository"}, me)
		if b, err := os.ReadFile(leak); err == nil && len(b) > 0 {
			t.Fatalf("after %d reviews DevSpace's Git ran the repository's filter with access to the state directory: %d bytes of auth.json leaked", reviews+1, len(b))
		}
	}
	t.Logf("%d reviews, nothing leaked", reviews)
}

// TestWorktreeCommandCannotFollowSourceGitSymlink: a worktree execution's
// commands may read the source repository's .git. A command of a direct
// execution on the same Project replaces that .git with a symlink to the
// state directory; the worktree's next command must not be able to read
// through it (found by an attacker review: it read auth.json).
func TestWorktreeCommandCannotFollowSourceGitSymlink(t *testing.T) {
	t.Parallel()
	env, root := execRepo(t, map[string]string{"README.md": "source\n"})
	_, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read", "project:write", "process:execute"}})
	cs := connect(t, env, tok.AccessToken, "")
	direct, wt := session("direct"), session("worktree")
	if sc, _ := callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o1"}, direct); errCode(sc) != "" {
		t.Fatalf("open direct: %v", sc)
	}
	if sc, _ := callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o2", "checkoutKind": "worktree"}, wt); errCode(sc) != "" {
		t.Fatalf("open worktree: %v", sc)
	}
	auth := filepath.Join(env.StateDir, "auth.json")
	src := filepath.Join(root, ".git")
	// The control: Git works in the worktree, through the source's .git.
	if sc, _ := callTool(t, cs, "exec_command", map[string]any{"operationId": "w0", "program": "git", "args": []string{"log", "--oneline"}}, wt); !exitOK(sc) {
		t.Fatalf("git log in the worktree: %v", sc)
	}
	sc, _ := callTool(t, cs, "exec_command", map[string]any{"operationId": "d1", "shell": true,
		"command": "mv .git .git.real && ln -s " + env.StateDir + " .git"}, direct)
	if !exitOK(sc) {
		t.Fatalf("plant: %v", sc)
	}
	sc, _ = callTool(t, cs, "exec_command", map[string]any{"operationId": "w1", "shell": true,
		"command": "ls " + src + "/; cat " + src + "/auth.json; cat " + auth}, wt)
	if out, _ := sc["output"].(string); strings.Contains(out, "masterKey") || strings.Contains(out, "devspace.db") {
		t.Errorf("a worktree command read the state directory through the source's .git symlink:\n%s", out)
	}
}

// execRepo starts a server whose Project alpha is a Git repository with
// files committed, for grants that may run commands.
func execRepo(t *testing.T, files map[string]string) (*apptest.Env, string) {
	t.Helper()
	needLandlock(t)
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}, Env: execScopes})
	root := env.Roots["alpha"]
	git(t, root, "init", "-q")
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, root, "add", ".")
	git(t, root, "commit", "-qm", "init")
	return env, root
}
