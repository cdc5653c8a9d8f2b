package mcpserver

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/commands"
	"github.com/devspace-dev/devspace/internal/diskguard"
	"github.com/devspace-dev/devspace/internal/idempotency"
	"github.com/devspace-dev/devspace/internal/oauth"
	"github.com/devspace-dev/devspace/internal/process"
	"github.com/devspace-dev/devspace/internal/secret"
)

// Handler tests of exec_command, write_stdin and read_process_output over
// fake services (harness_test.go).

var (
	readExecute = []string{oauth.ScopeRead, oauth.ScopeExecute}
	zero        = 0
)

// commandFailure is one service error of a process tool and its envelope.
type commandFailure struct {
	err  error
	want envelope
}

// checkCommandFailures checks that tool renders each failure of its
// service method with args.
func checkCommandFailures(t *testing.T, tool, method string, args map[string]any, cases map[string]commandFailure) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakes(t)
			f.answer(method, nil, tc.err)
			h := startHandlers(t, f, testPrincipal(allScopes...))
			wantError(t, h.call(tool, args), tc.want)
			if calls := f.got(); len(calls) != 2 || calls[1].Method != method {
				t.Errorf("calls %+v, want Resolve, %s", calls, method)
			}
		})
	}
}

func TestExecCommandHandler(t *testing.T) {
	t.Parallel()
	exited := commands.View{ProcessRef: "prc_1", OutputRef: "out_1", Status: "exited", ExitCode: &zero, Revision: 2,
		Output: "ok\n", OutputBytes: 3, WallTime: 1500 * time.Millisecond, Sandbox: commands.SandboxWorkspaceWrite}
	for name, tc := range map[string]struct {
		scopes  []string
		args    map[string]any
		wantReq commands.StartRequest
		answer  commands.View
		summary string
		want    map[string]any
	}{
		"direct, every field": {
			scopes: allScopes,
			args: map[string]any{"operationId": "op-1", "program": "go", "args": []any{"test", "./..."}, "workingDirectory": "sub",
				"environment": map[string]any{"GOFLAGS": "-count=1"}, "timeoutMs": 60000, "tty": true, "stdin": "y\n", "closeStdin": true},
			wantReq: commands.StartRequest{Command: commands.Command{OperationID: "op-1", Program: "go", Args: []string{"test", "./..."},
				WorkingDirectory: "sub", Environment: map[string]string{"GOFLAGS": "-count=1"}, TimeoutMs: 60000, TTY: true, Stdin: "y\n", CloseStdin: true},
				Sandbox: commands.SandboxWorkspaceWrite},
			answer:  exited,
			summary: "The command exited with code 0.",
			want: map[string]any{"processRef": "prc_1", "outputRef": "out_1", "status": "exited", "exitCode": 0.0, "revision": 2.0,
				"output": "ok\n", "outputBytes": 3.0, "wallTimeMs": 1500.0, "sandbox": "workspaceWrite"},
		},
		"shell without project:write": {
			scopes:  readExecute,
			args:    map[string]any{"operationId": "op-1", "shell": true, "command": "make test"},
			wantReq: commands.StartRequest{Command: commands.Command{OperationID: "op-1", Shell: true, Command: "make test"}, Sandbox: commands.SandboxReadOnly},
			answer:  commands.View{ProcessRef: "prc_1", OutputRef: "out_1", Status: "running", Revision: 1, Output: "building", OutputBytes: 8, Sandbox: "readOnly"},
			summary: "The command is still running; poll it with read_process_output (processRef).",
			want: map[string]any{"processRef": "prc_1", "outputRef": "out_1", "status": "running", "revision": 1.0, "output": "building",
				"outputBytes": 8.0, "wallTimeMs": 0.0, "sandbox": "readOnly"},
		},
		"readOnly asked with project:write": {
			scopes:  allScopes,
			args:    map[string]any{"operationId": "op-1", "program": "ls", "sandbox": "readOnly"},
			wantReq: commands.StartRequest{Command: commands.Command{OperationID: "op-1", Program: "ls", Sandbox: "readOnly"}, Sandbox: commands.SandboxReadOnly},
			answer: commands.View{ProcessRef: "prc_1", OutputRef: "out_1", Status: "killed", KillReason: process.ReasonOutOfMemory,
				Truncated: true, OmittedBytes: 100, OutputBytes: 4200, Replayed: true, Sandbox: "readOnly"},
			summary: "The command used more memory than a command may and was stopped, all of its processes.",
			want: map[string]any{"processRef": "prc_1", "outputRef": "out_1", "status": "killed", "killReason": "out_of_memory", "revision": 0.0,
				"output": "", "truncated": true, "omittedBytes": 100.0, "outputBytes": 4200.0, "wallTimeMs": 0.0, "replayed": true, "sandbox": "readOnly"},
		},
		"workspaceWrite asked": {
			scopes:  allScopes,
			args:    map[string]any{"operationId": "op-1", "program": "ls", "sandbox": "workspaceWrite"},
			wantReq: commands.StartRequest{Command: commands.Command{OperationID: "op-1", Program: "ls", Sandbox: "workspaceWrite"}, Sandbox: commands.SandboxWorkspaceWrite},
			answer:  commands.View{ProcessRef: "prc_1", OutputRef: "out_1", Status: "timed_out", KillReason: process.ReasonTimeout, TreeAlive: true},
			summary: "The command hit its timeout and was stopped.",
			want: map[string]any{"processRef": "prc_1", "outputRef": "out_1", "status": "timed_out", "killReason": "timeout", "treeAlive": true,
				"revision": 0.0, "output": "", "outputBytes": 0.0, "wallTimeMs": 0.0},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakes(t)
			f.answer("Start", tc.answer, nil)
			h := startHandlers(t, f, testPrincipal(tc.scopes...))
			sc := h.ok("exec_command", h.call("exec_command", tc.args), tc.summary)
			diff(t, "structuredContent", tc.want, sc)
			f.wantCalls(t, serviceCall{Method: "Resolve", Caller: h.caller()}, serviceCall{Method: "Start", Exec: execID, Args: tc.wantReq})
		})
	}
	t.Run("workspaceWrite without project:write", func(t *testing.T) {
		t.Parallel()
		f := newFakes(t)
		h := startHandlers(t, f, testPrincipal(readExecute...))
		res := h.call("exec_command", map[string]any{"operationId": "op-1", "program": "ls", "sandbox": "workspaceWrite"})
		wantError(t, res, envelope{Code: "insufficient_scope", Category: catScope, OperationID: "op-1"})
		diff(t, "_meta", mcp.Meta{"mcp/www_authenticate": []any{`Bearer resource_metadata="https://devspace.test/.well-known/oauth-protected-resource/mcp", ` +
			`scope="project:read project:write process:execute", error="insufficient_scope", error_description="workspaceWrite needs project:write"`}}, toolMeta(res))
		f.wantCalls(t)
	})
	checkCommandFailures(t, "exec_command", "Start", validArgs["exec_command"], map[string]commandFailure{
		"spawn": {idempotency.NotStarted(fmt.Errorf("start: %w", process.ErrSpawn)),
			envelope{Code: "command_spawn_failed", Category: catInput, Phase: "not_started", OperationID: "op-1"}},
		"no such directory": {idempotency.NotStarted(commands.ErrWorkingDirMissing),
			envelope{Code: "working_directory_invalid", Category: catInput, Phase: "not_started", OperationID: "op-1"}},
		"a credential": {idempotency.NotStarted(&secret.Error{Field: "command", Kind: "github_token"}),
			envelope{Code: "secret_persistence_blocked", Category: catSafety, Phase: "not_started", OperationID: "op-1"}},
		"share used": {idempotency.NotStarted(commands.ErrGrantShare),
			envelope{Code: "process_limit", Category: catLimit, Phase: "not_started", OperationID: "op-1"}},
		"slots busy": {idempotency.NotStarted(commands.ErrSlotsBusy),
			envelope{Code: "process_slots_busy", Category: catTransient, Retryable: true, Phase: "not_started", OperationID: "op-1"}},
		"disk low": {idempotency.NotStarted(diskguard.ErrDiskLow),
			envelope{Code: "disk_low", Category: catTransient, Retryable: true, Phase: "not_started", OperationID: "op-1"}},
		// An error that says whether its effect began keeps its phase.
		"outcome unknown": {idempotency.ErrOutcomeUnknown,
			envelope{Code: "operation_outcome_unknown", Category: catState, Phase: "outcome_unknown", OperationID: "op-1"}},
	})
	// What a command may be is the commands service's rule
	// (commands.Command.Validate, TestCommandValidate); the edge renders
	// its refusals.
	checkCommandFailures(t, "exec_command", "Start", validArgs["exec_command"], map[string]commandFailure{
		"no sandbox": {idempotency.NotStarted(process.ErrSandboxUnavailable),
			envelope{Code: "sandbox_unavailable", Category: catSafety, Phase: "not_started", OperationID: "op-1"}},
		"no mode": {idempotency.NotStarted(commands.ErrCommandMode),
			envelope{Code: "command_mode_invalid", Category: catInput, Phase: "not_started", OperationID: "op-1"}},
		"stdin too large": {idempotency.NotStarted(commands.ErrStdinTooLarge),
			envelope{Code: "stdin_too_large", Category: catLimit, Phase: "not_started", OperationID: "op-1"}},
		"a NUL": {idempotency.NotStarted(commands.ErrNUL),
			envelope{Code: "invalid_tool_input", Category: catInput, Phase: "not_started", OperationID: "op-1"}},
	})
	checkRefused(t, "exec_command", map[string]map[string]any{
		"a negative timeout":        {"operationId": "op-1", "program": "ls", "timeoutMs": -1},
		"a timeout over 6 hours":    {"operationId": "op-1", "program": "ls", "timeoutMs": int64(process.MaxTimeout/time.Millisecond) + 1},
		"a sandbox not in the enum": {"operationId": "op-1", "program": "ls", "sandbox": "none"},
		"no operationId":            {"program": "ls"},
	})
}

func TestWriteStdinHandler(t *testing.T) {
	t.Parallel()
	three := int64(3)
	code := 130
	for name, tc := range map[string]struct {
		args    map[string]any
		wantIn  commands.Input
		answer  commands.View
		summary string
		want    map[string]any
	}{
		"chars": {map[string]any{"operationId": "op-1", "processRef": "prc_1", "chars": "y\n", "expectedRevision": 3},
			commands.Input{OperationID: "op-1", ProcessRef: "prc_1", Chars: "y\n", ExpectedRevision: &three},
			commands.View{ProcessRef: "prc_1", OutputRef: "out_1", Status: "running", Revision: 4, Output: "next?", OutputBytes: 40},
			"The command is still running; poll it with read_process_output (processRef).",
			map[string]any{"processRef": "prc_1", "outputRef": "out_1", "status": "running", "revision": 4.0, "output": "next?",
				"outputBytes": 40.0, "wallTimeMs": 0.0}},
		"interrupt": {map[string]any{"operationId": "op-2", "processRef": "prc_1", "interrupt": true},
			commands.Input{OperationID: "op-2", ProcessRef: "prc_1", Interrupt: true},
			commands.View{ProcessRef: "prc_1", OutputRef: "out_1", Status: "exited", ExitCode: &code, Revision: 5,
				KillReason: process.ReasonInterrupt, InterruptKilled: 2, WallTime: 3 * time.Second},
			"The command exited with code 130.",
			map[string]any{"processRef": "prc_1", "outputRef": "out_1", "status": "exited", "exitCode": 130.0, "revision": 5.0, "output": "",
				"outputBytes": 0.0, "wallTimeMs": 3000.0, "killReason": "interrupt", "interruptKilled": 2.0}},
		"close": {map[string]any{"operationId": "op-3", "processRef": "prc_1", "closeStdin": true},
			commands.Input{OperationID: "op-3", ProcessRef: "prc_1", CloseStdin: true},
			commands.View{ProcessRef: "prc_1", OutputRef: "out_1", Status: "exited", Signal: "SIGPIPE", Replayed: true},
			"The command exited (SIGPIPE).",
			map[string]any{"processRef": "prc_1", "outputRef": "out_1", "status": "exited", "signal": "SIGPIPE", "revision": 0.0, "output": "",
				"outputBytes": 0.0, "wallTimeMs": 0.0, "replayed": true}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakes(t)
			f.answer("WriteStdin", tc.answer, nil)
			h := startHandlers(t, f, testPrincipal(readExecute...))
			sc := h.ok("write_stdin", h.call("write_stdin", tc.args), tc.summary)
			diff(t, "structuredContent", tc.want, sc)
			f.wantCalls(t, serviceCall{Method: "Resolve", Caller: h.caller()}, serviceCall{Method: "WriteStdin", Exec: execID, Args: tc.wantIn})
		})
	}
	checkCommandFailures(t, "write_stdin", "WriteStdin", validArgs["write_stdin"], map[string]commandFailure{
		// Not one of this conversation's commands: no operation was made.
		"unknown command": {commands.ErrNotFound, envelope{Code: "process_not_found", Category: catState}},
		"stale revision":  {process.ErrRevisionConflict, envelope{Code: "process_revision_conflict", Category: catConflict, OperationID: "op-1"}},
		"ended":           {process.ErrNotRunning, envelope{Code: "process_not_running", Category: catState, OperationID: "op-1"}},
		"input full":      {process.ErrStdinFull, envelope{Code: "stdin_busy", Category: catTransient, Retryable: true, OperationID: "op-1"}},
		"reused operationId": {idempotency.ErrConflict,
			envelope{Code: "operation_id_conflict", Category: catConflict, OperationID: "op-1"}},
	})
	checkRefused(t, "write_stdin", map[string]map[string]any{
		"nothing to send":       {"operationId": "op-1", "processRef": "prc_1"},
		"chars and interrupt":   {"operationId": "op-1", "processRef": "prc_1", "chars": "x", "interrupt": true},
		"close and interrupt":   {"operationId": "op-1", "processRef": "prc_1", "closeStdin": true, "interrupt": true},
		"no processRef":         {"operationId": "op-1", "closeStdin": true},
		"a fractional revision": {"operationId": "op-1", "processRef": "prc_1", "closeStdin": true, "expectedRevision": 1.5},
	})
}

func TestReadProcessOutputHandler(t *testing.T) {
	t.Parallel()
	running := commands.View{ProcessRef: "prc_1", OutputRef: "out_1", Status: "running", Revision: 3, Output: "line 2\n", OutputBytes: 14}
	for name, tc := range map[string]struct {
		args    map[string]any
		wantReq commands.ReadRequest
		answer  *commands.Output
		summary string
		want    map[string]any
	}{
		"live": {map[string]any{"processRef": "prc_1", "cursor": "cur-1", "waitMs": 2500, "limit": 1000},
			commands.ReadRequest{Ref: "prc_1", Cursor: "cur-1", Limit: 1000, Wait: 2500 * time.Millisecond},
			&commands.Output{View: running, Offset: 7, NextCursor: "cur-2"},
			"The command is still running; poll it with read_process_output (processRef).",
			map[string]any{"processRef": "prc_1", "outputRef": "out_1", "status": "running", "revision": 3.0, "output": "line 2\n",
				"outputBytes": 14.0, "wallTimeMs": 0.0, "offset": 7.0, "nextCursor": "cur-2"}},
		"retained page": {map[string]any{"outputRef": "out_1", "mode": "page"},
			commands.ReadRequest{Ref: "out_1", ByOutput: true, Mode: commands.ModePage},
			&commands.Output{View: commands.View{ProcessRef: "prc_1", OutputRef: "out_1", Status: "exited", ExitCode: &zero, Output: "all\n", OutputBytes: 4}},
			"The command exited with code 0.",
			map[string]any{"processRef": "prc_1", "outputRef": "out_1", "status": "exited", "exitCode": 0.0, "revision": 0.0, "output": "all\n",
				"outputBytes": 4.0, "wallTimeMs": 0.0, "offset": 0.0}},
		"search": {map[string]any{"outputRef": "out_1", "mode": "search", "query": "FAIL"},
			commands.ReadRequest{Ref: "out_1", ByOutput: true, Mode: commands.ModeSearch, Query: "FAIL"},
			&commands.Output{View: running, Hits: []commands.Hit{{Offset: 120, Text: "--- FAIL: TestX"}, {Offset: 300, Text: "FAIL pkg"}}},
			"The command is still running; poll it with read_process_output (processRef).",
			map[string]any{"processRef": "prc_1", "outputRef": "out_1", "status": "running", "revision": 3.0, "output": "line 2\n",
				"outputBytes": 14.0, "wallTimeMs": 0.0, "offset": 0.0,
				"hits": []any{map[string]any{"offset": 120.0, "text": "--- FAIL: TestX"}, map[string]any{"offset": 300.0, "text": "FAIL pkg"}}}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakes(t)
			f.answer("Read", tc.answer, nil)
			h := startHandlers(t, f, testPrincipal(readExecute...))
			sc := h.ok("read_process_output", h.call("read_process_output", tc.args), tc.summary)
			diff(t, "structuredContent", tc.want, sc)
			f.wantCalls(t, serviceCall{Method: "Resolve", Caller: h.caller()}, serviceCall{Method: "Read", Exec: execID, Args: tc.wantReq})
		})
	}
	checkCommandFailures(t, "read_process_output", "Read", validArgs["read_process_output"], map[string]commandFailure{
		"unknown command": {commands.ErrNotFound, envelope{Code: "process_not_found", Category: catState}},
		"output retired":  {commands.ErrOutputGone, envelope{Code: "process_not_found", Category: catState}},
		"another cursor":  {commands.ErrCursorMismatch, envelope{Code: "cursor_invalid", Category: catInput}},
	})
	checkRefused(t, "read_process_output", map[string]map[string]any{
		"both refs":               {"processRef": "prc_1", "outputRef": "out_1"},
		"no ref":                  {},
		"search without query":    {"outputRef": "out_1", "mode": "search"},
		"a query over 1 KiB":      {"outputRef": "out_1", "mode": "search", "query": strings.Repeat("q", 1025)},
		"a mode not in the enum":  {"outputRef": "out_1", "mode": "head"},
		"a page over the maximum": {"outputRef": "out_1", "limit": commands.OutputPageMax + 1},
		"a wait over the maximum": {"processRef": "prc_1", "waitMs": int(commands.LiveWaitMax/time.Millisecond) + 1},
	})
}
