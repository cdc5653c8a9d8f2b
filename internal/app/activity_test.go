package app_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/activity"
	"github.com/devspace-dev/devspace/internal/app"
	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/testutil"
)

var allScopes = []string{"project:read", "project:write", "process:execute"}

// activityEnv is a real instance with one grant of every scope on alpha,
// and an MCP session of the official client with it.
type activityEnv struct {
	*apptest.Env
	cs      *mcp.ClientSession
	grantID string
	project string // alpha's projectRef
}

func startActivity(t *testing.T) *activityEnv {
	t.Helper()
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"},
		Env: map[string]string{"DEVSPACE_OAUTH_SCOPES": strings.Join(allScopes, " ")}})
	c := env.Register("Console <b>Client</b>", "http://127.0.0.1:9/callback", "client_secret_basic")
	tok := env.GrantFor(c, apptest.Approval{Scopes: allScopes})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "activity-test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: env.URL + "/mcp", DisableStandaloneSSE: true,
			HTTPClient: &http.Client{Transport: testutil.Bearer(tok.AccessToken, nil)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	grants, err := env.App.ListGrants(context.Background(), false)
	if err != nil || len(grants) != 1 {
		t.Fatalf("grants: %v %v", grants, err)
	}
	e := &activityEnv{Env: env, cs: cs, grantID: grants[0].ID, project: env.App.Projects()[0].Ref}
	return e
}

// call calls a tool with a host session and returns its structured
// content and whether it failed.
func (e *activityEnv) call(t *testing.T, name string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	res, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args,
		Meta: map[string]any{"openai/session": "activity"}})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var sc map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &sc)
	return sc, res.IsError
}

func (e *activityEnv) mustCall(t *testing.T, name string, args map[string]any) map[string]any {
	t.Helper()
	sc, failed := e.call(t, name, args)
	if failed {
		t.Fatalf("%s failed: %v", name, sc)
	}
	return sc
}

// TestActivityRecordsToolCalls: every tool call, failed ones too, is in
// Recent and on a subscription, with its grant, client name, Project and
// error code; and counted in the hour.
func TestActivityRecordsToolCalls(t *testing.T) {
	e := startActivity(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	feed := e.App.Activity().Subscribe(ctx)

	e.mustCall(t, "list_projects", map[string]any{})
	e.mustCall(t, "project_control", map[string]any{"action": "open", "operationId": "o"})
	// Per-item failures (a missing file, a denied path) leave the call a
	// success; an unknown argument fails it.
	e.mustCall(t, "read_files", map[string]any{"files": []any{map[string]any{"path": "missing.txt"}}})
	e.mustCall(t, "read_files", map[string]any{"files": []any{map[string]any{"path": "../outside"}}})
	if _, failed := e.call(t, "inspect", map[string]any{"bogus": true}); !failed {
		t.Fatal("a call with an unknown argument did not fail")
	}

	type seen struct{ Tool, Grant, Client, Project, Code string }
	want := []seen{
		{"list_projects", e.grantID, "Console <b>Client</b>", "", ""},
		{"project_control", e.grantID, "Console <b>Client</b>", e.project, ""},
		{"read_files", e.grantID, "Console <b>Client</b>", e.project, ""},
		{"read_files", e.grantID, "Console <b>Client</b>", e.project, ""},
		{"inspect", e.grantID, "Console <b>Client</b>", "", "invalid_tool_input"},
	}
	var got []seen
	for range want {
		select {
		case c := <-feed:
			got = append(got, seen{c.Tool, c.GrantID, c.Client, c.Project, c.Code})
			if c.Duration <= 0 || c.At.IsZero() {
				t.Errorf("%s: duration %v, at %v", c.Tool, c.Duration, c.At)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the subscription got %d calls of %d: %v", len(got), len(want), got)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("subscription (-want +got):\n%s", diff)
	}
	var recent []seen
	for _, c := range e.App.Activity().Recent(len(want)) {
		recent = append(recent, seen{c.Tool, c.GrantID, c.Client, c.Project, c.Code})
	}
	slices.Reverse(recent)
	if diff := cmp.Diff(want, recent); diff != "" {
		t.Errorf("Recent, oldest first (-want +got):\n%s", diff)
	}
	h := e.App.Activity().Hour(e.Clock.Now())
	if m := h[59]; m.Tools["read_files"].Calls != 2 || m.Errors["invalid_tool_input"] != 1 || m.Tools["inspect"].Errors != 1 {
		t.Errorf("this minute: %+v", m)
	}
}

// marker is a random string to find a command's processes by.
func marker(t *testing.T) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "devspace-activity-" + hex.EncodeToString(b[:])
}

// marked lists the processes whose command line or environment carries
// mark.
func marked(mark string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, ent := range ents {
		for _, f := range []string{"cmdline", "environ"} {
			b, err := os.ReadFile(filepath.Join("/proc", ent.Name(), f))
			if err == nil && bytes.Contains(b, []byte(mark)) {
				out = append(out, ent.Name())
				break
			}
		}
	}
	return out
}

// TestActivityRunningCommands: a running command of a real grant is
// listed for the Owner with its command line redacted, its output tail
// grows, and InterruptCommand ends its whole tree (an audit event names
// the Owner); a command holding a literal credential never runs.
func TestActivityRunningCommands(t *testing.T) {
	e := startActivity(t)
	ctx := context.Background()
	e.mustCall(t, "project_control", map[string]any{"action": "open", "operationId": "o"})

	// A credential in one argument is refused before anything runs.
	const token = "9f8e7d6c5b4a3928171605f4e3d2c1b0"
	sc, failed := e.call(t, "exec_command", map[string]any{"operationId": "refused", "program": "curl",
		"args": []any{"-H", "Authorization: Bearer " + token}})
	if !failed || sc["error"].(map[string]any)["code"] != "secret_persistence_blocked" {
		t.Fatalf("a command with a literal credential: %v", sc)
	}

	// Joined, these arguments make one the detector knows; each alone is
	// harmless. They are the loop's $0…$3.
	mark := marker(t)
	sc = e.mustCall(t, "exec_command", map[string]any{"operationId": "loop", "program": "sh",
		"args":        []any{"-c", `i=0; while :; do echo "tick $i"; i=$((i+1)); sleep 0.1; done`, "Authorization:", "Bearer", token},
		"environment": map[string]any{"DSMARK": mark}})
	if sc["status"] != "running" {
		t.Fatalf("exec_command: %v", sc)
	}
	ref := sc["processRef"].(string)

	cmds, err := e.App.RunningCommands(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) != 1 {
		t.Fatalf("RunningCommands = %+v, want the loop", cmds)
	}
	c := cmds[0]
	if c.ID != ref || c.GrantID != e.grantID || c.Client != "Console <b>Client</b>" || c.Project != e.project || !c.Running ||
		time.Since(c.Started) > time.Minute {
		t.Errorf("RunningCommands[0] = %+v", c)
	}
	wantLine := `sh -c 'i=0; while :; do echo "tick $i"; i=$((i+1)); sleep 0.1; done' Authorization: Bearer [REDACTED]`
	if c.CommandLine != wantLine {
		t.Errorf("CommandLine = %q, want %q", c.CommandLine, wantLine)
	}
	if strings.Contains(c.CommandLine, token) {
		t.Fatalf("the credential reached the Owner's listing: %q", c.CommandLine)
	}

	// The tail grows, bounded by max.
	first, err := e.App.CommandTail(ctx, ref, 0)
	if err != nil || first.Done || !strings.Contains(first.Tail, "tick ") {
		t.Fatalf("CommandTail = %+v, %v", first, err)
	}
	var later activity.Output
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if later, err = e.App.CommandTail(ctx, ref, 8); err != nil {
			t.Fatal(err)
		}
		if later.Total > first.Total {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tail did not grow: %+v then %+v", first, later)
		}
	}
	if len(later.Tail) > 8 {
		t.Errorf("CommandTail(8) returned %d bytes", len(later.Tail))
	}
	if _, err := e.App.CommandTail(ctx, "prc_unknown", 0); !errors.Is(err, app.ErrCommandNotFound) {
		t.Errorf("CommandTail of an unknown ID: %v", err)
	}

	if n := len(marked(mark)); n == 0 {
		t.Fatal("the command's processes are not found by their marker")
	}
	if err := e.App.InterruptCommand(ctx, ref); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); len(marked(mark)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("processes left after InterruptCommand: %v", marked(mark))
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		cmds, err = e.App.RunningCommands(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(cmds) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still listed after the interrupt: %+v", cmds)
		}
	}
	done, err := e.App.CommandTail(ctx, ref, 0)
	if err != nil || !done.Done || done.Total < later.Total {
		t.Errorf("CommandTail after the end = %+v, %v", done, err)
	}
	audit, err := e.App.RecentAudit(ctx)
	if err != nil || len(audit) == 0 || audit[0] != "command_interrupted" {
		t.Errorf("latest audit events: %v, %v; want command_interrupted first", audit, err)
	}
	if err := e.App.InterruptCommand(ctx, "prc_unknown"); !errors.Is(err, app.ErrCommandNotFound) {
		t.Errorf("InterruptCommand of an unknown ID: %v", err)
	}
	// The hour saw the command run.
	peak := 0
	for _, m := range e.App.Activity().Hour(e.Clock.Now()) {
		peak = max(peak, m.Running)
	}
	if peak < 1 {
		t.Error("no minute of the hour saw a command running")
	}
}

// TestActivityPatchesAndUndos: a patch apply_patch made is listed with
// its files and diff; its undo and redo are in the undo history.
func TestActivityPatchesAndUndos(t *testing.T) {
	e := startActivity(t)
	ctx := context.Background()
	if err := os.WriteFile(filepath.Join(e.Roots["alpha"], "notes.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.mustCall(t, "project_control", map[string]any{"action": "open", "operationId": "o"})
	read := e.mustCall(t, "read_files", map[string]any{"files": []any{map[string]any{"path": "notes.txt"}}})
	version := read["files"].([]any)[0].(map[string]any)["version"]
	e.mustCall(t, "apply_patch", map[string]any{"operationId": "p1",
		"patch":   "*** Begin Patch\n*** Update File: notes.txt\n@@\n one\n-two\n+<b>deux</b>\n*** Add File: new.txt\n+fresh\n*** End Patch",
		"ifMatch": map[string]any{"notes.txt": version, "new.txt": nil}})
	e.mustCall(t, "undo_patch", map[string]any{"operationId": "u1"})
	e.mustCall(t, "undo_patch", map[string]any{"operationId": "r1", "redo": true})

	patches, err := e.App.RecentPatches(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(patches) != 1 {
		t.Fatalf("RecentPatches = %+v, want the one patch", patches)
	}
	p := patches[0]
	if p.GrantID != e.grantID || p.Project != e.project || p.ID == "" || time.Since(p.At) > time.Hour {
		t.Errorf("patch = %+v", p)
	}
	if diff := cmp.Diff([]string{"notes.txt", "new.txt"}, p.Files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	for _, line := range []string{"-two", "+<b>deux</b>", "+fresh"} {
		if !strings.Contains(p.Diff, line) {
			t.Errorf("diff lacks %q:\n%s", line, p.Diff)
		}
	}

	undos, err := e.App.UndoHistory(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	type u struct {
		Undone bool
		Files  []string
	}
	var got []u
	for _, x := range undos {
		got = append(got, u{x.Undone, x.Files})
		if x.GrantID != e.grantID || x.Project != e.project || x.ID == "" || x.ID == p.ID {
			t.Errorf("undo = %+v", x)
		}
	}
	// Newest first: the redo, then the undo.
	want := []u{{false, []string{"notes.txt", "new.txt"}}, {true, []string{"notes.txt", "new.txt"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("UndoHistory (-want +got):\n%s", diff)
	}
	if got, _ := e.App.RecentPatches(ctx, 0); len(got) != 0 {
		t.Errorf("RecentPatches(0) = %d entries", len(got))
	}
}
