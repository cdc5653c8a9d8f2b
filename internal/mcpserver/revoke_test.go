package mcpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/apptest"
)

// subdirs lists the directory names under dir (undo keeps one per
// execution).
func subdirs(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestRevokeClosesGrantResources follows the revoke path end to end
// (oauth → executions.CloseGrants → the commands service) with real
// processes, SQLite and undo snapshots: revoking grant A kills A's
// commands (a daemonized tree included), deletes A's undo snapshots and
// retires A's retained output, and leaves grant B's commands, snapshots
// and output untouched.
func TestRevokeClosesGrantResources(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"a", "b"}, Env: execScopes})
	scopes := []string{"project:read", "project:write", "process:execute"}
	type grant struct {
		cs        *mcp.ClientSession
		grantID   string
		marker    string
		outputRef string
		spools    []string
		snapshots string // its execution's undo directory
	}
	snapDir := filepath.Join(env.StateDir, "snapshots")
	setup := func(name string) *grant {
		_, tok := env.Grant(apptest.Approval{Scopes: scopes, Projects: []string{name}})
		p, err := env.App.OAuth().Verify(context.Background(), tok.AccessToken)
		if err != nil {
			t.Fatal(err)
		}
		g := &grant{cs: connect(t, env, tok.AccessToken, ""), grantID: p.GrantID, marker: marker(t)}
		me := session(name)
		before, _ := spoolState(t, env)
		snapsBefore := subdirs(t, snapDir)
		callTool(t, g.cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, me)
		// Each grant has its own Project: a running command holds its
		// Project's root lock, which apply_patch waits for.
		patch := "*** Begin Patch\n*** Add File: " + name + ".txt\n+" + name + "\n*** End Patch\n"
		if sc, res := callTool(t, g.cs, "apply_patch", map[string]any{"operationId": "p", "patch": patch, "ifMatch": map[string]any{name + ".txt": nil}}, me); res.IsError {
			t.Fatalf("%s apply_patch: %v", name, sc)
		}
		for _, d := range subdirs(t, snapDir) {
			if !slices.Contains(snapsBefore, d) {
				g.snapshots = d
			}
		}
		if g.snapshots == "" {
			t.Fatalf("%s apply_patch left no undo snapshot", name)
		}
		sc, _ := callTool(t, g.cs, "exec_command", map[string]any{"operationId": "e", "shell": true, "command": "echo output-of-" + name}, me)
		if sc["status"] != "exited" {
			t.Fatalf("%s echo: %v", name, sc)
		}
		g.outputRef = sc["outputRef"].(string)
		daemon := "setsid sh -c 'exec -a " + g.marker + " sleep 1000' & (exec -a " + g.marker + " sleep 1000) & wait"
		if sc, _ := callTool(t, g.cs, "exec_command", map[string]any{"operationId": "d", "shell": true, "command": daemon}, me); sc["status"] != "running" {
			t.Fatalf("%s daemon: %v", name, sc)
		}
		after, _ := spoolState(t, env)
		for _, f := range after {
			if !slices.Contains(before, f) {
				g.spools = append(g.spools, f)
			}
		}
		if len(g.spools) != 2 {
			t.Fatalf("%s spool files: %v (before %v)", name, after, before)
		}
		return g
	}
	a, b := setup("a"), setup("b")
	if !alive(a.marker) || !alive(b.marker) {
		t.Fatal("daemons did not start")
	}
	if got := subdirs(t, snapDir); len(got) != 2 {
		t.Fatalf("undo snapshot directories before revoke: %v", got)
	}

	if err := env.App.RevokeGrant(context.Background(), a.grantID); err != nil {
		t.Fatal(err)
	}

	// A: commands killed, snapshots deleted, output retired.
	waitGone(t, a.marker)
	if got := subdirs(t, snapDir); !slices.Equal(got, []string{b.snapshots}) {
		t.Errorf("undo snapshot directories after revoke: %v, want only the other grant's %s", got, b.snapshots)
	}
	files, _ := spoolState(t, env)
	for _, f := range a.spools {
		if slices.Contains(files, f) {
			t.Errorf("revoked grant's output %s survives (files %v)", f, files)
		}
	}
	// B: untouched.
	if !alive(b.marker) {
		t.Error("the other grant's command was killed")
	}
	for _, f := range b.spools {
		if !slices.Contains(files, f) {
			t.Errorf("the other grant's output %s was removed (files %v)", f, files)
		}
	}
	me := session("b")
	if sc, res := callTool(t, b.cs, "read_process_output", map[string]any{"outputRef": b.outputRef}, me); res.IsError || sc["output"] != "output-of-b\n" {
		t.Errorf("the other grant's retained output: %v", sc)
	}
	env.Stop()
	waitGone(t, b.marker)
}
