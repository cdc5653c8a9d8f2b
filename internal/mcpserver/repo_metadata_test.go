package mcpserver_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/testutil"
)

func contentHash(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// TestGitMetadataNeverWritten is the first attack through the real
// endpoint with a write grant (no process:execute): every spelling of a
// path into repository metadata is refused before anything is staged, the
// repository on disk is byte-identical afterwards, and the owner's own
// `git status` on the host runs nothing a patch could have planted.
func TestGitMetadataNeverWritten(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	root := env.Roots["alpha"]
	testutil.Git(t, root, "init", "-q")
	testutil.WriteFile(t, root, "hook.sh", "#!/bin/sh\ntouch \"$(git rev-parse --git-dir)/../PWNED\"\n")
	if err := os.Chmod(filepath.Join(root, "hook.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, root, "sub/keep.txt", "x\n")
	testutil.WriteFile(t, root, "sub/.git", "gitdir: ../.git\n")
	testutil.Git(t, root, "-c", "user.name=t", "-c", "user.email=t@e", "add", "hook.sh")
	testutil.Git(t, root, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "init")
	if err := os.Symlink(".git", filepath.Join(root, "g")); err != nil {
		t.Fatal(err)
	}
	config, err := os.ReadFile(filepath.Join(root, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	// The whole Project, not only .git: the sub/.git file, the link g,
	// the move's source hook.sh, and no .GIT, .git. or a/ created.
	before := testutil.Tree(t, root)
	hook, _ := os.ReadFile(filepath.Join(root, "hook.sh"))

	_, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read", "project:write"}})
	cs := connect(t, env, tok.AccessToken, "")
	me := session("s")
	callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, me)

	fsmonitor := string(config) + "[core]\n\tfsmonitor = \"touch PWNED\"\n"
	add := func(p string) string {
		return "*** Begin Patch\n*** Add File: " + p + "\n+#!/bin/sh\n+touch PWNED\n*** End Patch\n"
	}
	for i, tc := range []struct {
		name, patch string
		ifMatch     any
	}{
		{".git/config", "*** Begin Patch\n*** Update File: .git/config\n@@\n" + lines("-", string(config)) + lines("+", fsmonitor) + "*** End Patch\n", contentHash(config)},
		{".GIT/hooks/x", add(".GIT/hooks/x"), nil},
		{".git/hooks/post-checkout", add(".git/hooks/post-checkout"), nil},
		{"sub/.git/x", add("sub/.git/x"), nil},
		{"sub/.git file", "*** Begin Patch\n*** Delete File: sub/.git\n*** End Patch\n", contentHash([]byte("gitdir: ../.git\n"))},
		{"a/../.git/x", add("a/../.git/x"), nil},
		{"link g → .git", add("g/hooks/post-checkout"), nil},
		{".git. (Windows spelling)", add(".git./hooks/x"), nil},
		{".g\u00adit (Linux casefold drops the soft hyphen)", add(".g\u00adit/hooks/post-checkout"), nil},
		{"move into hooks", "*** Begin Patch\n*** Update File: hook.sh\n*** Move to: .git/hooks/post-checkout\n*** End Patch\n",
			map[string]any{"hook.sh": contentHash(hook), ".git/hooks/post-checkout": nil}},
		{"commondir", add(".git/commondir"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, allow := range []bool{false, true} {
				args := map[string]any{"operationId": "p" + string(rune('a'+i)) + map[bool]string{true: "s"}[allow], "patch": tc.patch, "ifMatch": tc.ifMatch}
				if allow {
					args["allowSensitive"] = true
				}
				sc, _ := callTool(t, cs, "apply_patch", args, me)
				e, _ := sc["error"].(map[string]any)
				details, _ := e["details"].(map[string]any)
				if errCode(sc) != "path_denied" || details["reason"] != "repository_metadata" {
					t.Fatalf("apply_patch (allowSensitive %v) = %v, want path_denied (repository_metadata)", allow, sc)
				}
			}
		})
	}
	if diff := cmp.Diff(before, testutil.Tree(t, root)); diff != "" {
		t.Errorf("the Project changed (-before +after):\n%s", diff)
	}
	// read_files and inspect refuse it too.
	for _, p := range []string{".git/config", ".git", "g/config", ".GIT/config", "sub/.git"} {
		sc, _ := callTool(t, cs, "read_files", map[string]any{"files": []any{map[string]any{"path": p}}}, me)
		item := sc["files"].([]any)[0].(map[string]any)
		if e, _ := item["error"].(map[string]any); e == nil || e["code"] != "path_denied" || item["content"] != nil {
			t.Errorf("read_files %q = %v, want path_denied", p, item)
		}
	}
	// The owner runs git on the host: nothing a patch could plant runs.
	cmd := exec.Command("git", "status")
	cmd.Dir = root
	cmd.Env = testutil.GitEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git status: %v\n%s", err, out)
	}
	cmd = exec.Command("git", "checkout", "-q", "-B", "other")
	cmd.Dir = root
	cmd.Env = testutil.GitEnv()
	cmd.CombinedOutput()
	if _, err := os.Stat(filepath.Join(root, "PWNED")); err == nil {
		t.Fatal("a planted hook or fsmonitor ran on the owner's git")
	}
}

// lines prefixes every line of s with p, for a hunk.
func lines(p, s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString(p + l)
		}
	}
	return b.String()
}

// TestUndoPatchRefusesRepositoryMetadata: patches deleted d/post-checkout
// and m/hooks/post-checkout from plain directories; then the owner's
// checkout made d a link to .git/hooks and m the Git directory a sub/.git
// file names. Undoing either would plant a hook the owner's git runs:
// undo_patch refuses with path_denied (repository_metadata), the
// repository on disk is byte-identical and the owner's git runs nothing.
func TestUndoPatchRefusesRepositoryMetadata(t *testing.T) {
	t.Parallel()
	const hook = "#!/bin/sh\ntouch \"$(git rev-parse --show-toplevel)/PWNED\"\n"
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	root := env.Roots["alpha"]
	testutil.Git(t, root, "init", "-q")
	testutil.Git(t, root, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "init")
	for _, p := range []string{"d/post-checkout", "m/hooks/post-checkout"} {
		testutil.WriteFile(t, root, p, hook)
		if err := os.Chmod(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read", "project:write"}})
	cs := connect(t, env, tok.AccessToken, "")
	me := session("s")
	callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, me)
	for i, p := range []string{"d/post-checkout", "m/hooks/post-checkout"} {
		sc, _ := callTool(t, cs, "read_files", map[string]any{"files": []any{map[string]any{"path": p}}}, me)
		v := readVersion(t, cs, sc)
		sc, res := callTool(t, cs, "apply_patch", map[string]any{"operationId": fmt.Sprintf("p%d", i+1),
			"patch": "*** Begin Patch\n*** Delete File: " + p + "\n*** End Patch\n", "ifMatch": v}, me)
		if res.IsError {
			t.Fatalf("delete %s: %v", p, sc)
		}
	}
	// The owner's checkout: d becomes a link to .git/hooks, m a Git
	// directory that sub/.git names.
	if err := os.RemoveAll(filepath.Join(root, "d")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(".git", "hooks"), filepath.Join(root, "d")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(root, "m")); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, root, "init", "-q", "--bare", "m")
	testutil.WriteFile(t, root, "sub/.git", "gitdir: ../m\n")
	before := map[string]map[string]string{".git": testutil.Tree(t, filepath.Join(root, ".git")), "m": testutil.Tree(t, filepath.Join(root, "m"))}

	for _, args := range []map[string]any{
		{"operationId": "u1"},                           // the latest: p2, into m/hooks
		{"operationId": "u2", "patchOperationId": "p1"}, // into d → .git/hooks
	} {
		sc, _ := callTool(t, cs, "undo_patch", args, me)
		e, _ := sc["error"].(map[string]any)
		details, _ := e["details"].(map[string]any)
		if errCode(sc) != "path_denied" || details["reason"] != "repository_metadata" {
			t.Errorf("undo_patch %v = %v, want path_denied (repository_metadata)", args, sc)
		}
	}
	for dir, tree := range before {
		if diff := cmp.Diff(tree, testutil.Tree(t, filepath.Join(root, dir))); diff != "" {
			t.Errorf("%s changed (-before +after):\n%s", dir, diff)
		}
	}
	cmd := exec.Command("git", "checkout", "-q", "-B", "other")
	cmd.Dir = root
	cmd.Env = testutil.GitEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git checkout: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(root, "PWNED")); err == nil {
		t.Fatal("a hook restored by undo_patch ran on the owner's git")
	}
}

// TestSecretsNeverLeaveThroughLinks: symlinks to .env, .ssh and .kube
// (file and directory links) through every tool of a read grant: read_files,
// inspect grep with and without path, ls, glob, AGENTS.md at the root and
// nested, skills and skill:// reads. No secret byte in any result.
func TestSecretsNeverLeaveThroughLinks(t *testing.T) {
	t.Parallel()
	const marker = "SECRET-MARKER-c4f1"
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	root := env.Roots["alpha"]
	for rel, content := range map[string]string{
		".env": "TOKEN=" + marker + "\n", ".ssh/id_ed25519": marker + "\n", ".kube/config": "token: " + marker + "\n",
		".kube/SKILL.md":                "---\nname: kube\ndescription: k\n---\n" + marker + "\n",
		".agents/skills/tools/SKILL.md": "---\nname: tools\ndescription: t\n---\nbody\n",
		"src/main.go":                   "package main\n", "docs/AGENTS.md": "nested\n",
	} {
		testutil.WriteFile(t, root, rel, content)
	}
	for link, target := range map[string]string{
		"lnk_env": ".env", "zzz": ".kube", "keys": ".ssh", "AGENTS.md": ".env", "sub/AGENTS.md": "../.ssh/id_ed25519",
		".agents/skills/kube": "../../.kube", ".agents/skills/tools/cfg": "../../../.kube/config",
		".agents/skills/tools/kube": "../../../.kube", "docs/env": "../.env",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	_, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read"}})
	cs := connect(t, env, tok.AccessToken, "")
	me := session("s")
	var all []string
	record := func(sc map[string]any, res *mcp.CallToolResult) map[string]any {
		b, _ := json.Marshal(res) // content, structured content and _meta
		all = append(all, string(b))
		return sc
	}
	record(callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, me))
	for _, p := range []string{"lnk_env", "zzz/config", "keys/id_ed25519", "AGENTS.md", "sub/AGENTS.md", "docs/env", "sub/x"} {
		record(callTool(t, cs, "read_files", map[string]any{"files": []any{map[string]any{"path": p}}}, me))
	}
	var ops []any
	for _, p := range []string{"", "lnk_env", "zzz", "keys", "docs", "sub", ".agents/skills/kube", ".agents/skills/tools"} {
		ops = append(ops,
			map[string]any{"op": "grep", "path": p, "pattern": marker},
			map[string]any{"op": "ls", "path": p, "depth": 4},
			map[string]any{"op": "glob", "path": p, "pattern": "**"},
		)
	}
	// Every path inspect returns, with whether it is a link listed as
	// such (never followed).
	listed := map[string]bool{}
	for i := 0; i < len(ops); i += 8 {
		sc := record(callTool(t, cs, "inspect", map[string]any{"operations": ops[i:min(i+8, len(ops))]}, me))
		for _, r := range sc["results"].([]any) {
			r := r.(map[string]any)
			for _, key := range []string{"entries", "matches"} {
				items, _ := r[key].([]any)
				for _, it := range items {
					it := it.(map[string]any)
					listed[it["path"].(string)] = it["type"] == "symlink"
				}
			}
		}
	}
	list := record(callTool(t, cs, "skills", map[string]any{}, me))
	var ids []string
	items, _ := list["skills"].([]any)
	for _, it := range items {
		s := it.(map[string]any)
		if s["name"] == "kube" {
			t.Errorf("a skill behind a link to .kube is listed: %v", s)
		}
		ids = append(ids, s["skillId"].(string))
	}
	for _, id := range ids {
		sc := record(callTool(t, cs, "skills", map[string]any{"skillId": id}, me))
		loaded := sc["loaded"].(map[string]any)
		files, _ := loaded["files"].([]any)
		for _, f := range files {
			listed[path.Join(".agents/skills", loaded["name"].(string), f.(string))] = false
		}
		for _, rel := range []string{"cfg", "kube/config", "SKILL.md"} {
			record(callTool(t, cs, "read_files", map[string]any{"files": []any{map[string]any{"path": "skill://" + id + "/" + rel}}}, me))
		}
	}
	if len(ids) == 0 {
		t.Fatal("no skill listed: the skill part proves nothing")
	}
	for _, out := range all {
		if strings.Contains(out, marker) {
			t.Errorf("a result holds a secret: %s", out)
		}
	}
	// A name is a secret too: no listed path may lead to a sensitive
	// file (zzz/config is .kube/config, keys/id_ed25519 is
	// .ssh/id_ed25519). A link listed as such is not followed, so only
	// the directories on its way count.
	if len(listed) == 0 {
		t.Fatal("inspect listed nothing: the name check proves nothing")
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	for p, link := range listed {
		host := filepath.Join(root, filepath.FromSlash(p))
		var real string
		if link {
			dir, err := filepath.EvalSymlinks(filepath.Dir(host))
			if err != nil {
				t.Fatal(err)
			}
			real = filepath.Join(dir, filepath.Base(host))
		} else if real, err = filepath.EvalSymlinks(host); err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(realRoot, real)
		if err != nil {
			t.Fatal(err)
		}
		if project.IsSensitive(filepath.ToSlash(rel)) {
			t.Errorf("listed %q leads to the sensitive %q", p, rel)
		}
	}
}

// TestSecretRaceSwap: a goroutine swaps a directory and a symlink to a
// sensitive directory in a tight loop while 10,000 reads (8 per call) and
// 200 whole-tree greps run through the endpoint; no result may hold the
// secret (the issue leaked it in 17 of 24 greps and once in 2,400 reads).
// Not parallel: the swapping goroutine spins a core for as long as the
// test runs, so beside other tests both it and they take longer (-race,
// 2026-12-07: 417 s beside the other tests; the only parallel test
// before, it ran alone after the sequential ones).
func TestSecretRaceSwap(t *testing.T) {
	const marker = "SECRET-MARKER-0b7e"
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	root := env.Roots["alpha"]
	testutil.WriteFile(t, root, ".kube/config", "token: "+marker+"\n")
	testutil.WriteFile(t, root, "zzz/config", "token: public\n")
	for i := range 20 {
		testutil.WriteFile(t, root, "src/f"+string(rune('a'+i))+".txt", "token: source\n")
	}
	if err := os.Symlink(".kube", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	_, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read"}})
	cs := connect(t, env, tok.AccessToken, "")
	me := session("s")
	callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, me)

	defer testutil.SwapDirAndLink(root, "zzz", "plain", "link")()
	reads, greps := 10000, 200
	if testing.Short() {
		reads, greps = 1000, 20
	}
	files := make([]any, 8)
	for i := range files {
		files[i] = map[string]any{"path": "zzz/config"}
	}
	check := func(res *mcp.CallToolResult) bool {
		b, _ := json.Marshal(res)
		if strings.Contains(string(b), marker) {
			t.Fatalf("a result under the swap holds the secret: %s", b)
		}
		return strings.Contains(string(b), "public")
	}
	calls := reads / len(files)
	seen, wholeTree := 0, 0
	for i := range calls {
		_, res := callTool(t, cs, "read_files", map[string]any{"files": files}, me)
		if check(res) {
			seen++
		}
		// Exactly greps of the calls, spread evenly, also grep the whole
		// tree (and zzz alone).
		if (i+1)*greps/calls != i*greps/calls {
			wholeTree++
			_, res := callTool(t, cs, "inspect", map[string]any{"operations": []any{
				map[string]any{"op": "grep", "pattern": "token"}, map[string]any{"op": "grep", "path": "zzz", "pattern": "token"},
			}}, me)
			check(res)
		}
	}
	if calls*len(files) != reads || wholeTree != greps {
		t.Fatalf("%d reads and %d whole-tree greps, want %d and %d", calls*len(files), wholeTree, reads, greps)
	}
	if seen == 0 {
		t.Fatal("no read saw the plain file: the race test proves nothing")
	}
}
