package mcpserver_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glebarez/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/store"
)

// samePhaseOnRetry calls tool with args twice under one operationId and
// checks that the first failure's phase is what the retry then answers:
// not_started only if the retry runs the operation again, outcome_unknown
// if the retry is refused as operation_outcome_unknown. It returns the
// first failure's envelope.
func samePhaseOnRetry(t *testing.T, cs *mcp.ClientSession, tool string, args, meta map[string]any, wantCode string) envelope {
	t.Helper()
	_, e := call[struct{}](t, cs, tool, args, meta)
	if e == nil {
		t.Fatalf("%s succeeded", tool)
	}
	if e.Code != wantCode {
		t.Errorf("first call: %+v; want code %q", *e, wantCode)
	}
	_, retry := call[struct{}](t, cs, tool, args, meta)
	if retry == nil || retry.Code != "operation_outcome_unknown" || retry.Phase != "outcome_unknown" {
		t.Fatalf("retry with the same operationId: %+v; want operation_outcome_unknown, phase outcome_unknown", retry)
	}
	if e.Phase != retry.Phase {
		t.Errorf("the first call answered phase %q, but its operation record says %q (the retry's answer)", e.Phase, retry.Phase)
	}
	return *e
}

// TestCommandRecordFailureAfterSpawnIsOutcomeUnknown: exec_command whose
// output record cannot be written once the command runs (the store
// refuses the write) kills the command, and says phase outcome_unknown:
// the command ran for a moment and its operation record says unknown, so
// a retry with the same operationId answers operation_outcome_unknown.
// It answered phase not_started, which the edge guessed for every
// exec_command failure.
func TestCommandRecordFailureAfterSpawnIsOutcomeUnknown(t *testing.T) {
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}, Env: execScopes})
	_, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read", "project:write", "process:execute"}})
	cs := connect(t, env, tok.AccessToken, "")
	me := session("x")
	callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, me)

	db, err := sql.Open(sqlite.DriverName, "file:"+filepath.Join(env.StateDir, store.FileName)+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TRIGGER refuse_output BEFORE INSERT ON process_outputs BEGIN SELECT RAISE(ABORT, 'injected write failure'); END`); err != nil {
		t.Fatal(err)
	}
	mark := marker(t)
	args := map[string]any{"operationId": "run", "shell": true, "command": "sleep 30 # " + mark}
	e := samePhaseOnRetry(t, cs, "exec_command", args, me, "operation_outcome_unknown")
	if e.Phase != "outcome_unknown" {
		t.Errorf("phase %q, want outcome_unknown", e.Phase)
	}
	waitGone(t, mark)
	if !strings.Contains(env.Logs.String(), "injected write failure") {
		t.Error("the cause is not in the log")
	}
}

// TestPatchResultTooLargeIsOutcomeUnknown: an apply_patch that commits
// but whose result is too large to record for replay (over 2 MiB: 1,000
// files with 2 KiB paths) says phase outcome_unknown, which its operation
// record says too: a retry with the same operationId answers
// operation_outcome_unknown. It answered internal_error with phase
// not_started although every file was written.
func TestPatchResultTooLargeIsOutcomeUnknown(t *testing.T) {
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	cs, me, _ := openToPatch(t, env, "seed.txt", "x\n")
	dir := ""
	for i := range 9 {
		dir += strings.Repeat(string(rune('a'+i)), 230) + "/"
	}
	var b strings.Builder
	b.WriteString("*** Begin Patch\n")
	ifMatch := map[string]any{}
	for i := range 1000 {
		p := fmt.Sprintf("%sfile-%04d.txt", dir, i)
		fmt.Fprintf(&b, "*** Add File: %s\n+x\n", p)
		ifMatch[p] = nil
	}
	b.WriteString("*** End Patch\n")
	args := map[string]any{"operationId": "big", "patch": b.String(), "ifMatch": ifMatch}
	e := samePhaseOnRetry(t, cs, "apply_patch", args, me, "operation_outcome_unknown")
	if e.Phase != "outcome_unknown" {
		t.Errorf("phase %q, want outcome_unknown", e.Phase)
	}
	if _, err := os.Stat(filepath.Join(env.Roots["alpha"], dir, "file-0999.txt")); err != nil {
		t.Errorf("the patch did not commit: %v", err)
	}
}
