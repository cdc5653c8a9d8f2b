package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/apptest"
)

// TestRevokeStopsCallsInFlight: a call that passed the binding check
// before its grant was revoked waits for the Project's lock and then went
// on to its effect: the patch committed after the revoke, and the command
// started after the revoke had killed the execution's commands, so nothing
// ever killed it (found by an attacker review). A grant holder can hold
// that window open on purpose: a running command holds the Command lease,
// an apply_patch queues behind it and an exec_command behind the patch
// (the lock is FIFO); the revoke kills the running command, which frees
// the lease for both. Neither may take effect now.
func TestRevokeStopsCallsInFlight(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"revoke", "revoke-all"} {
		t.Run(how, func(t *testing.T) { revokeRace(t, how) })
	}
}

func revokeRace(t *testing.T, how string) {
	env := apptest.Start(t, apptest.Options{Projects: []string{"a"}, Env: execScopes})
	root := env.Roots["a"]
	_, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read", "project:write", "process:execute"}, Projects: []string{"a"}})
	p, err := env.App.OAuth().Verify(context.Background(), tok.AccessToken)
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, env, tok.AccessToken, "")
	me := session("attacker")
	if sc, res := callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, me); res.IsError {
		t.Fatalf("open: %v", sc)
	}
	holder, late := marker(t), marker(t)
	t.Cleanup(func() { // never leave an escaped command behind
		for _, m := range []string{holder, late} {
			for alive(m) {
				killMarked(m)
				time.Sleep(20 * time.Millisecond)
			}
		}
	})
	if sc, _ := callTool(t, cs, "exec_command", map[string]any{"operationId": "hold", "shell": true,
		"command": "exec -a " + holder + " sleep 60"}, me); sc["status"] != "running" {
		t.Fatalf("holder: %v", sc)
	}
	call := func(name string, args map[string]any) (map[string]any, error) {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args, Meta: me})
		if err != nil {
			return nil, err
		}
		var sc map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &sc)
		return sc, nil
	}
	var wg sync.WaitGroup
	var patchRes, execRes map[string]any
	var patchErr, execErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		patchRes, patchErr = call("apply_patch", map[string]any{"operationId": "late-patch",
			"patch":   "*** Begin Patch\n*** Add File: after-revoke.txt\n+written after the grant was revoked\n*** End Patch\n",
			"ifMatch": map[string]any{"after-revoke.txt": nil}})
	}()
	time.Sleep(700 * time.Millisecond)
	go func() {
		defer wg.Done()
		execRes, execErr = call("exec_command", map[string]any{"operationId": "late-exec", "shell": true,
			"command": "exec -a " + late + " sleep 1000", "timeoutMs": 3600000})
	}()
	time.Sleep(700 * time.Millisecond)

	if how == "revoke" {
		err = env.App.RevokeGrant(context.Background(), p.GrantID)
	} else {
		_, err = env.App.RevokeAll(context.Background())
	}
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if _, err := call("list_projects", map[string]any{}); err == nil {
		t.Fatal("the revoked token still works")
	}
	waitGone(t, holder)
	time.Sleep(time.Second)
	if b, err := os.ReadFile(filepath.Join(root, "after-revoke.txt")); err == nil {
		t.Errorf("a patch of the revoked grant was committed after the revoke: %q (%v)", b, patchRes)
	}
	if alive(late) {
		t.Errorf("a command of the revoked grant started after the revoke and still runs (%v)", execRes)
	}
	// The call answers that its execution is gone, or — when the revoke
	// ended the grant's MCP sessions before the answer went out (seen
	// under load with revoke-all) — gets no answer at all; what counts is
	// that it had no effect, checked above.
	for name, r := range map[string]struct {
		sc  map[string]any
		err error
	}{"apply_patch": {patchRes, patchErr}, "exec_command": {execRes, execErr}} {
		if code := errCode(r.sc); code != "project_execution_required" && r.err == nil {
			t.Errorf("%s in flight during the revoke answered %q, want project_execution_required: %v", name, code, r.sc)
		} else if r.err != nil {
			t.Logf("%s in flight during the revoke: %v", name, r.err)
		}
	}
}

// killMarked SIGKILLs the processes whose command line carries m.
func killMarked(m string) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), m) {
			if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 0 {
				if pr, err := os.FindProcess(pid); err == nil {
					_ = pr.Kill()
				}
			}
		}
	}
}
