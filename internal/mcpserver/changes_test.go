package mcpserver_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/apptest"
)

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func TestShowChangesRepository(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	root := env.Roots["alpha"]
	git(t, root, "init", "-q")
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\n"), 0o644)
	git(t, root, "add", "a.txt")
	git(t, root, "commit", "-qm", "init")
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\ntwo\n"), 0o644) // unstaged
	os.WriteFile(filepath.Join(root, "b.txt"), []byte("staged\n"), 0o644)
	git(t, root, "add", "b.txt")
	big := strings.Repeat("untracked line with some text in it\n", 3000) // > 3 pages
	os.WriteFile(filepath.Join(root, "c.txt"), []byte(big), 0o644)
	_, tok := env.Grant(apptest.Approval{})
	cs := connect(t, env, tok.AccessToken, "")
	me := session("review")
	callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, me)

	sc, res := callTool(t, cs, "show_changes", map[string]any{"source": "repository"}, me)
	if res.IsError {
		t.Fatalf("show_changes: %v", sc)
	}
	status := map[string]string{}
	for _, f := range sc["files"].([]any) {
		m := f.(map[string]any)
		status[m["path"].(string)] = m["status"].(string)
	}
	if status["a.txt"] != "modified" || status["b.txt"] != "added" || status["c.txt"] != "untracked" {
		t.Fatalf("statuses: %v", status)
	}
	text := sc["patch"].(string)
	cur, _ := sc["nextCursor"].(string)
	if len(text) > 32000 || cur == "" {
		t.Fatalf("first page %d bytes, cursor %q", len(text), cur)
	}
	pages := 1
	for cur != "" {
		sc, res := callTool(t, cs, "show_changes", map[string]any{"source": "repository", "cursor": cur}, me)
		if res.IsError {
			t.Fatalf("page %d: %v", pages, sc)
		}
		text += sc["patch"].(string)
		cur, _ = sc["nextCursor"].(string)
		pages++
	}
	if pages < 4 || strings.Count(text, "untracked line") != 3000 || !strings.Contains(text, "+two") {
		t.Fatalf("pages %d, joined text incomplete", pages)
	}
	// A page cursor goes stale when the changes move.
	sc, _ = callTool(t, cs, "show_changes", map[string]any{"source": "repository"}, me)
	stale := sc["nextCursor"].(string)
	os.WriteFile(filepath.Join(root, "d.txt"), []byte("new\n"), 0o644)
	sc, _ = callTool(t, cs, "show_changes", map[string]any{"source": "repository", "cursor": stale}, me)
	if errCode(sc) != "diff_cursor_stale" {
		t.Fatalf("stale cursor: %v", sc)
	}
	// The other source's cursor is refused.
	sc, _ = callTool(t, cs, "show_changes", map[string]any{"source": "apply_patch_history", "cursor": stale}, me)
	if errCode(sc) != "cursor_invalid" {
		t.Fatalf("cross-source cursor: %v", sc)
	}
	sc, res = callTool(t, cs, "show_changes", map[string]any{"source": "apply_patch_history"}, me)
	if res.IsError || len(sc["files"].([]any)) != 0 {
		t.Fatalf("empty history: %v", sc)
	}
}

func TestShowChangesNestedRoot(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	// The Project root is a subdirectory of a repository: refused.
	git(t, filepath.Dir(env.Roots["alpha"]), "init", "-q")
	_, tok := env.Grant(apptest.Approval{})
	cs := connect(t, env, tok.AccessToken, "")
	callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, session("n"))
	sc, _ := callTool(t, cs, "show_changes", map[string]any{"source": "repository"}, session("n"))
	if errCode(sc) != "repository_review_unavailable" {
		t.Fatalf("nested root: %v", sc)
	}
}
