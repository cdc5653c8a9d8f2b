//go:build unix

package mcpserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// noHostPaths fails when any of the tool results in outs names one of the
// host directories.
func noHostPaths(t *testing.T, env *apptest.Env, outs ...map[string]any) {
	t.Helper()
	base := filepath.Dir(env.StateDir)
	for _, sc := range outs {
		text := mustJSON(sc)
		for _, p := range []string{base, env.StateDir} {
			if strings.Contains(text, p) {
				t.Errorf("tool output names a host path (%s): %s", p, text)
			}
		}
	}
}

// TestRepositoryUnsafeCommondir replays issue 15 (b) with a grant holding
// project:read and project:write and no process:execute: .git/commondir
// names a repository outside the Project and .git/index is gone. Neither
// show_changes nor a worktree open may read or write that repository.
func TestRepositoryUnsafeCommondir(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	root := env.Roots["alpha"]
	git(t, root, "init", "-q")
	os.WriteFile(filepath.Join(root, "README.md"), []byte("inside\n"), 0o644)
	git(t, root, "add", ".")
	git(t, root, "commit", "-qm", "init")
	outside := filepath.Join(filepath.Dir(filepath.Dir(root)), "outside")
	testutil.OutsideRepo(t, outside, false)
	before := testutil.Git(t, outside, "for-each-ref") + testutil.Git(t, outside, "worktree", "list", "--porcelain")
	gitDir := filepath.Join(root, ".git")
	rel, _ := filepath.Rel(gitDir, filepath.Join(outside, ".git"))
	os.WriteFile(filepath.Join(gitDir, "commondir"), []byte(rel+"\n"), 0o644)
	os.Remove(filepath.Join(gitDir, "index"))

	_, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read", "project:write"}})
	cs := connect(t, env, tok.AccessToken, "")
	me := session("attacker")
	opened, _ := callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o1"}, me)
	if errCode(opened) != "" {
		t.Fatalf("open: %v", opened)
	}
	review, _ := callTool(t, cs, "show_changes", map[string]any{"source": "repository"}, me)
	if errCode(review) != "repository_unsafe" || review["error"].(map[string]any)["category"] != "safety" {
		t.Errorf("show_changes: %v", review)
	}
	wt, _ := callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o2", "checkoutKind": "worktree"}, session("wt"))
	if errCode(wt) != "repository_unsafe" {
		t.Errorf("worktree open: %v", wt)
	}
	for _, sc := range []map[string]any{review, wt} {
		if strings.Contains(mustJSON(sc), "secret") {
			t.Errorf("outside content leaked: %v", sc)
		}
	}
	noHostPaths(t, env, opened, review, wt)
	after := testutil.Git(t, outside, "for-each-ref") + testutil.Git(t, outside, "worktree", "list", "--porcelain")
	if after != before {
		t.Errorf("the outside repository changed:\nbefore %s\nafter %s", before, after)
	}
	if dirs, _ := filepath.Glob(filepath.Join(env.StateDir, "worktrees", "*", "*")); len(dirs) != 0 {
		t.Errorf("worktrees created: %v", dirs)
	}
}

// TestGitRunsNoRepositoryCode: hooks, fsmonitor, pagers, an external diff
// and an ssh command planted in the Project's .git run neither during
// show_changes nor during a worktree open, review and close.
func TestGitRunsNoRepositoryCode(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	root := env.Roots["alpha"]
	git(t, root, "init", "-q")
	os.WriteFile(filepath.Join(root, "README.md"), []byte("inside\n"), 0o644)
	git(t, root, "add", ".")
	git(t, root, "commit", "-qm", "init")
	os.WriteFile(filepath.Join(root, "README.md"), []byte("changed\n"), 0o644)
	markers := filepath.Join(filepath.Dir(filepath.Dir(root)), "markers")
	testutil.PlantRepositoryCode(t, root, markers)

	_, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read", "project:write"}})
	cs := connect(t, env, tok.AccessToken, "")
	callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o1"}, session("co"))
	if sc, _ := callTool(t, cs, "show_changes", map[string]any{"source": "repository"}, session("co")); errCode(sc) != "" {
		t.Fatalf("show_changes: %v", sc)
	}
	// Another client, so that its Thread list holds only the worktree's.
	_, tok2 := env.Grant(apptest.Approval{Scopes: []string{"project:read", "project:write"}})
	cs = connect(t, env, tok2.AccessToken, "")
	me := session("wt")
	if sc, _ := callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o2", "checkoutKind": "worktree"}, me); errCode(sc) != "" {
		t.Fatalf("worktree open: %v", sc)
	}
	if sc, _ := callTool(t, cs, "show_changes", map[string]any{"source": "repository"}, me); errCode(sc) != "" {
		t.Fatalf("worktree show_changes: %v", sc)
	}
	th, _ := callTool(t, cs, "project_thread_control", map[string]any{"action": "list"}, me)
	if n := len(th["threads"].([]any)); n != 1 {
		t.Fatalf("threads: %v", th)
	}
	x := th["threads"].([]any)[0].(map[string]any)
	if sc, _ := callTool(t, cs, "project_thread_control", map[string]any{"action": "close", "threadRef": x["threadRef"], "ifMatch": x["revision"]}, me); errCode(sc) != "" {
		t.Fatalf("close: %v", sc)
	}
	if dirs, _ := filepath.Glob(filepath.Join(env.StateDir, "worktrees", "*", "*")); len(dirs) != 0 {
		t.Errorf("worktree not removed: %v", dirs)
	}
	if got := testutil.Markers(t, markers); len(got) != 0 {
		t.Fatalf("repository code ran: %v", got)
	}
	git(t, root, "status")
	if got := testutil.Markers(t, markers); len(got) == 0 {
		t.Fatal("control: plain git status ran nothing")
	}
}

// TestWorktreeNamesNoHostPath: a managed worktree's .git file is relative,
// and neither open, show_changes nor read_files of .git (refused, or at
// least relative) shows a host path.
func TestWorktreeNamesNoHostPath(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	root := env.Roots["alpha"]
	git(t, root, "init", "-q")
	os.WriteFile(filepath.Join(root, "README.md"), []byte("inside\n"), 0o644)
	git(t, root, "add", ".")
	git(t, root, "commit", "-qm", "init")
	_, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read", "project:write"}})
	cs := connect(t, env, tok.AccessToken, "")
	me := session("wt")
	opened, _ := callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o", "checkoutKind": "worktree"}, me)
	if errCode(opened) != "" {
		t.Fatalf("open: %v", opened)
	}
	dotgits, _ := filepath.Glob(filepath.Join(env.StateDir, "worktrees", "*", "*", ".git"))
	if len(dotgits) != 1 {
		t.Fatalf("worktrees: %v", dotgits)
	}
	data, err := os.ReadFile(dotgits[0])
	if err != nil {
		t.Fatal(err)
	}
	if target, ok := strings.CutPrefix(string(data), "gitdir: "); !ok || filepath.IsAbs(target) {
		t.Errorf(".git file = %q, want a relative gitdir", data)
	}
	changes, _ := callTool(t, cs, "show_changes", map[string]any{"source": "repository"}, me)
	if errCode(changes) != "" {
		t.Fatalf("show_changes: %v", changes)
	}
	read, _ := callTool(t, cs, "read_files", map[string]any{"files": []any{map[string]any{"path": ".git"}}}, me)
	noHostPaths(t, env, opened, changes, read)
}

// TestWorktreeRedirected: a managed worktree whose .git is made to name a
// repository outside (as a command in the worktree could) is refused by
// show_changes and by closing its Thread, which keeps the worktree.
func TestWorktreeRedirected(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	root := env.Roots["alpha"]
	git(t, root, "init", "-q")
	os.WriteFile(filepath.Join(root, "README.md"), []byte("inside\n"), 0o644)
	git(t, root, "add", ".")
	git(t, root, "commit", "-qm", "init")
	outside := filepath.Join(filepath.Dir(filepath.Dir(root)), "outside")
	testutil.OutsideRepo(t, outside, false)
	_, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read", "project:write"}})
	cs := connect(t, env, tok.AccessToken, "")
	me := session("wt")
	if sc, _ := callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o", "checkoutKind": "worktree"}, me); errCode(sc) != "" {
		t.Fatalf("open: %v", sc)
	}
	dotgits, _ := filepath.Glob(filepath.Join(env.StateDir, "worktrees", "*", "*", ".git"))
	if len(dotgits) != 1 {
		t.Fatalf("worktrees: %v", dotgits)
	}
	os.WriteFile(dotgits[0], []byte("gitdir: "+filepath.Join(outside, ".git")+"\n"), 0o644)
	sc, _ := callTool(t, cs, "show_changes", map[string]any{"source": "repository"}, me)
	if errCode(sc) != "repository_unsafe" || strings.Contains(mustJSON(sc), "secret") {
		t.Errorf("show_changes: %v", sc)
	}
	th, _ := callTool(t, cs, "project_thread_control", map[string]any{"action": "list"}, me)
	x := th["threads"].([]any)[0].(map[string]any)
	closed, _ := callTool(t, cs, "project_thread_control", map[string]any{"action": "close", "threadRef": x["threadRef"], "ifMatch": x["revision"]}, me)
	if errCode(closed) != "repository_unsafe" {
		t.Errorf("close: %v", closed)
	}
	if _, err := os.Stat(dotgits[0]); err != nil {
		t.Errorf("worktree removed: %v", err)
	}
	noHostPaths(t, env, sc, closed)
}
