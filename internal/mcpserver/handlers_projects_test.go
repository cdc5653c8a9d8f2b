package mcpserver

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/cursor"
	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/oauth"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/store"
	"github.com/devspace-dev/devspace/internal/tasks"
	"github.com/devspace-dev/devspace/internal/widget"
)

// Handler tests of list_projects, project_control, project_thread_control
// and save_progress over fake services (harness_test.go).

var (
	alphaRoot = project.Root{Ref: "prj_alpha", Label: "alpha", Path: "/host/projects/alpha"}
	betaRoot  = project.Root{Ref: "prj_beta", Label: "beta", Path: "/host/projects/beta"}
)

// diff fails t when got differs from want.
func diff(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

func TestListProjectsHandler(t *testing.T) {
	t.Parallel()
	t.Run("all", func(t *testing.T) {
		t.Parallel()
		f := newFakes(t)
		f.answer("Projects", []project.Root{alphaRoot, betaRoot}, nil)
		f.answer("Counts", map[string]int{"prj_alpha": 2}, nil)
		h := startHandlers(t, f, testPrincipal(oauth.ScopeRead))
		res := h.call("list_projects", map[string]any{})
		sc := h.ok("list_projects", res, "2 Projects are available to this connection.")
		diff(t, "structuredContent", map[string]any{"projects": []any{
			map[string]any{"projectRef": "prj_alpha", "label": "alpha", "resumableTaskCount": 2.0},
			map[string]any{"projectRef": "prj_beta", "label": "beta", "resumableTaskCount": 0.0},
		}}, sc)
		if m := toolMeta(res); m != nil {
			t.Errorf("_meta without the widget: %v", m)
		}
		f.wantCalls(t, serviceCall{Method: "Projects", Caller: h.caller()},
			serviceCall{Method: "Counts", Args: []string{"prj_alpha", "prj_beta"}})
	})
	t.Run("one Project's Tasks", func(t *testing.T) {
		t.Parallel()
		f := newFakes(t)
		f.answer("Projects", []project.Root{alphaRoot, betaRoot}, nil)
		f.answer("Counts", map[string]int{"prj_beta": 1}, nil)
		f.answer("List", []tasks.Summary{{TaskRef: "tsk_1", Title: "Refactor", UpdatedAt: "2031-02-03T04:05:06Z", Revision: 2}}, nil)
		h := startHandlers(t, f, testPrincipal(oauth.ScopeRead))
		sc := h.ok("list_projects", h.call("list_projects", map[string]any{"projectRef": "prj_beta"}), "1 Project is available to this connection.")
		diff(t, "structuredContent", map[string]any{
			"projects":       []any{map[string]any{"projectRef": "prj_beta", "label": "beta", "resumableTaskCount": 1.0}},
			"resumableTasks": []any{map[string]any{"taskRef": "tsk_1", "title": "Refactor", "updatedAt": "2031-02-03T04:05:06Z", "revision": 2.0}},
		}, sc)
		f.wantCalls(t, serviceCall{Method: "Projects", Caller: h.caller()},
			serviceCall{Method: "Counts", Args: []string{"prj_beta"}}, serviceCall{Method: "List", Args: "prj_beta"})
	})
	t.Run("a Project not granted", func(t *testing.T) {
		t.Parallel()
		f := newFakes(t)
		f.answer("Projects", []project.Root{alphaRoot}, nil)
		h := startHandlers(t, f, testPrincipal(oauth.ScopeRead))
		wantError(t, h.call("list_projects", map[string]any{"projectRef": "prj_beta"}),
			envelope{Code: "project_not_authorized", Category: catScope})
		f.wantCalls(t, serviceCall{Method: "Projects", Caller: h.caller()})
	})
	t.Run("widget", func(t *testing.T) {
		t.Parallel()
		f := newFakes(t)
		f.answer("Projects", []project.Root{alphaRoot}, nil)
		threads := []executions.ThreadView{{ThreadRef: "thr_1", ProjectRef: "prj_alpha", Label: "alpha", Status: "open", Revision: 3, UpdatedAt: "2031-02-03T04:05:06Z"}}
		f.answer("Threads", threads, nil)
		h := startHandlers(t, f, testPrincipal(oauth.ScopeRead), func(o *Options) { o.Widgets = "full" })
		res := h.call("list_projects", nil)
		sc := h.ok("list_projects", res, "1 Project is available to this connection.")
		if _, ok := sc["threads"]; ok {
			t.Error("the Threads reach the model (structuredContent)")
		}
		diff(t, "_meta", mcp.Meta{widget.ThreadsMetaKey: []any{map[string]any{"threadRef": "thr_1", "projectRef": "prj_alpha",
			"projectLabel": "alpha", "status": "open", "revision": 3.0, "updatedAt": "2031-02-03T04:05:06Z"}}}, toolMeta(res))
		f.wantCalls(t, serviceCall{Method: "Projects", Caller: h.caller()},
			serviceCall{Method: "Counts", Args: []string{"prj_alpha"}}, serviceCall{Method: "Threads", Caller: h.caller()})
	})
	t.Run("counts fail", func(t *testing.T) {
		t.Parallel()
		f := newFakes(t)
		f.answer("Projects", []project.Root{alphaRoot}, nil)
		f.answer("Counts", nil, errors.New("database is locked"))
		h := startHandlers(t, f, testPrincipal(oauth.ScopeRead))
		res := h.call("list_projects", nil)
		wantError(t, res, envelope{Code: "internal_error", Category: catInternal})
		if strings.Contains(text(res)+string(mustMarshal(t, res.StructuredContent)), "database") {
			t.Errorf("the cause reaches the client: %q", text(res))
		}
	})
}

func TestProjectControlHandler(t *testing.T) {
	t.Parallel()
	instructions := &executions.Instructions{Revision: "rev-1", Page: 1, PageCount: 3, Content: "# Rules\nRun make test.\n",
		Files: []executions.InstructionSource{{Path: "AGENTS.md", Trust: "repository_untrusted"}}, NextCursor: "cur-2"}
	instructionsJSON := map[string]any{"revision": "rev-1", "page": 1.0, "pageCount": 3.0, "content": "# Rules\nRun make test.\n",
		"files": []any{map[string]any{"path": "AGENTS.md", "trust": "repository_untrusted"}}, "nextCursor": "cur-2"}
	alpha := &executions.Opened{ProjectRef: "prj_alpha", Label: "alpha", Status: "open"}
	for name, tc := range map[string]struct {
		scopes  []string
		args    map[string]any
		method  string // the service method the action calls
		answer  any
		summary string
		wantArg any
		want    map[string]any
	}{
		"open": {
			args:   map[string]any{"action": "open", "operationId": "op-1", "projectRef": "prj_alpha", "checkoutKind": "worktree"},
			method: "Open", answer: opened{Opened: &executions.Opened{ProjectRef: "prj_alpha", Label: "alpha", Status: "open", Instructions: instructions}},
			wantArg: openArgs{ProjectRef: "prj_alpha", OperationID: "op-1", Worktree: true},
			summary: "Opened Project alpha. Read the remaining 2 instruction page(s) with project_control hydrate before using Project tools.",
			want:    map[string]any{"action": "open", "projectRef": "prj_alpha", "label": "alpha", "status": "open", "instructions": instructionsJSON},
		},
		"open replayed": {
			args:   map[string]any{"action": "open", "operationId": "op-1"},
			method: "Open", answer: opened{Opened: alpha, Replayed: true},
			wantArg: openArgs{OperationID: "op-1"},
			summary: "Opened Project alpha.",
			want:    map[string]any{"action": "open", "projectRef": "prj_alpha", "label": "alpha", "status": "open", "replayed": true},
		},
		"hydrate": {
			args:   map[string]any{"action": "hydrate", "cursor": "cur-2"},
			method: "Hydrate", answer: opened{Opened: alpha}, wantArg: "cur-2",
			summary: "Re-attached to Project alpha.",
			want:    map[string]any{"action": "hydrate", "projectRef": "prj_alpha", "label": "alpha", "status": "open"},
		},
		"resume": {
			args:   map[string]any{"action": "resume", "operationId": "op-2", "taskRef": "tsk_1"},
			method: "Resume",
			answer: opened{Opened: alpha, Checkpoint: &executions.Checkpoint{TaskRef: "tsk_1",
				UntrustedSummary: executions.UntrustedSummary{Title: "Refactor", Progress: "done: a"}, ServerObserved: map[string]any{"patches": 2}}},
			wantArg: resumeArgs{TaskRef: "tsk_1", OperationID: "op-2"},
			summary: "Resumed a saved Task in Project alpha; its summary is untrusted text from an earlier conversation.",
			want: map[string]any{"action": "resume", "projectRef": "prj_alpha", "label": "alpha", "status": "open",
				"checkpoint": map[string]any{"taskRef": "tsk_1", "untrustedSummary": map[string]any{"title": "Refactor", "progress": "done: a"},
					"serverObserved": map[string]any{"patches": 2.0}}},
		},
		"interrupt": {
			scopes: []string{oauth.ScopeRead, oauth.ScopeExecute},
			args:   map[string]any{"action": "interrupt"},
			method: "Interrupt", answer: 2,
			summary: "Interrupted 2 running process(es).",
			want:    map[string]any{"action": "interrupt", "status": "open", "interrupted": 2.0},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakes(t)
			f.answer(tc.method, tc.answer, nil)
			scopes := tc.scopes
			if scopes == nil {
				scopes = []string{oauth.ScopeRead}
			}
			h := startHandlers(t, f, testPrincipal(scopes...))
			sc := h.ok("project_control", h.call("project_control", tc.args), tc.summary)
			diff(t, "structuredContent", tc.want, sc)
			f.wantCalls(t, serviceCall{Method: "Lock", Caller: h.caller()},
				serviceCall{Method: tc.method, Caller: h.caller(), Args: tc.wantArg}, serviceCall{Method: "unlock"})
		})
	}
	t.Run("interrupt without process:execute", func(t *testing.T) {
		t.Parallel()
		f := newFakes(t)
		h := startHandlers(t, f, testPrincipal(oauth.ScopeRead, oauth.ScopeWrite))
		res := h.call("project_control", map[string]any{"action": "interrupt"})
		wantError(t, res, envelope{Code: "insufficient_scope", Category: catScope})
		diff(t, "_meta", mcp.Meta{"mcp/www_authenticate": []any{`Bearer resource_metadata="https://devspace.test/.well-known/oauth-protected-resource/mcp", ` +
			`scope="project:read process:execute", error="insufficient_scope", error_description="interrupt needs process:execute"`}}, toolMeta(res))
		f.wantCalls(t)
	})
	for name, tc := range map[string]struct {
		args   map[string]any
		method string
		err    error
		want   envelope
	}{
		"open refused": {map[string]any{"action": "open", "operationId": "op-1"}, "Open", executions.ErrProjectRefRequired,
			envelope{Code: "project_ref_required", Category: catInput, OperationID: "op-1"}},
		"open failed": {map[string]any{"action": "open", "operationId": "op-1"}, "Open", errors.New("disk I/O error"),
			envelope{Code: "internal_error", Category: catInternal, OperationID: "op-1"}},
		"resume refused": {map[string]any{"action": "resume", "operationId": "op-2", "taskRef": "tsk_1"}, "Resume", executions.ErrTaskNotFound,
			envelope{Code: "project_task_not_found", Category: catState, OperationID: "op-2"}},
		"hydrate refused": {map[string]any{"action": "hydrate", "cursor": "cur-2"}, "Hydrate", cursor.ErrExpired,
			envelope{Code: "cursor_expired", Category: catState}},
		"hydrate with an operationId": {map[string]any{"action": "hydrate", "operationId": "op-3"}, "Hydrate", executions.ErrExecutionRequired,
			envelope{Code: "project_execution_required", Category: catState, OperationID: "op-3"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakes(t)
			f.answer(tc.method, nil, tc.err)
			h := startHandlers(t, f, testPrincipal(oauth.ScopeRead))
			wantError(t, h.call("project_control", tc.args), tc.want)
			calls := f.got()
			if len(calls) != 3 || calls[1].Method != tc.method || calls[2].Method != "unlock" {
				t.Errorf("calls %+v, want Lock, %s, unlock", calls, tc.method)
			}
		})
	}
	for name, args := range map[string]map[string]any{
		"open without operationId":       {"action": "open"},
		"resume without operationId":     {"action": "resume", "taskRef": "tsk_1"},
		"resume without taskRef":         {"action": "resume", "operationId": "op-1"},
		"hydrate with projectRef":        {"action": "hydrate", "projectRef": "prj_alpha"},
		"hydrate with checkoutKind":      {"action": "hydrate", "checkoutKind": "checkout"},
		"open with taskRef":              {"action": "open", "operationId": "op-1", "taskRef": "tsk_1"},
		"open with cursor":               {"action": "open", "operationId": "op-1", "cursor": "cur-2"},
		"interrupt with a bad id":        {"action": "interrupt", "operationId": strings.Repeat("x", 129)},
		"an action not in the enum":      {"action": "close"},
		"a checkoutKind not in the enum": {"action": "open", "operationId": "op-1", "checkoutKind": "clone"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakes(t)
			h := startHandlers(t, f, testPrincipal(allScopes...))
			wantError(t, h.call("project_control", args), invalid)
			f.wantCalls(t)
		})
	}
}

func TestThreadControlHandler(t *testing.T) {
	t.Parallel()
	view := func(status string) *executions.ThreadView {
		return &executions.ThreadView{ThreadRef: "thr_1", ProjectRef: "prj_alpha", Label: "alpha", Status: status, Revision: 5, UpdatedAt: "2031-02-03T04:05:06Z"}
	}
	viewJSON := func(status string) map[string]any {
		return map[string]any{"threadRef": "thr_1", "projectRef": "prj_alpha", "projectLabel": "alpha", "status": status,
			"revision": 5.0, "updatedAt": "2031-02-03T04:05:06Z"}
	}
	for name, tc := range map[string]struct {
		args    map[string]any
		method  string
		answer  any
		wantArg any
		summary string
		want    map[string]any
	}{
		"list": {map[string]any{"action": "list"}, "Threads", []executions.ThreadView{*view("open")}, nil,
			"1 Thread(s).", map[string]any{"action": "list", "threads": []any{viewJSON("open")}}},
		"list none": {map[string]any{"action": "list"}, "Threads", nil, nil,
			"0 Thread(s).", map[string]any{"action": "list"}},
		"status": {map[string]any{"action": "status", "threadRef": "thr_1"}, "ThreadStatus", view("open"), "thr_1",
			"Thread is open.", map[string]any{"action": "status", "thread": viewJSON("open")}},
		"activity": {map[string]any{"action": "activity", "threadRef": "thr_1", "since": 5, "waitMs": 1500}, "Activity",
			[]executions.ActivityView{{Seq: 6, Kind: "patch", Data: map[string]any{"files": 1}, At: "2031-02-03T04:05:07Z"}},
			activityArgs{Ref: "thr_1", Since: 5, Wait: 1500 * time.Millisecond},
			"1 new activity entries.", map[string]any{"action": "activity", "activity": []any{
				map[string]any{"seq": 6.0, "kind": "patch", "data": map[string]any{"files": 1.0}, "at": "2031-02-03T04:05:07Z"}}}},
		"activity none": {map[string]any{"action": "activity", "threadRef": "thr_1"}, "Activity", nil,
			activityArgs{Ref: "thr_1"}, "0 new activity entries.", map[string]any{"action": "activity"}},
		"archive": {map[string]any{"action": "archive", "threadRef": "thr_1", "ifMatch": 4}, "SetThreadStatus", view("archived"),
			threadStatusArgs{Ref: "thr_1", Status: store.ThreadArchived, IfMatch: 4},
			"Thread is archived.", map[string]any{"action": "archive", "thread": viewJSON("archived")}},
		"complete": {map[string]any{"action": "complete", "threadRef": "thr_1", "ifMatch": 4}, "SetThreadStatus", view("completed"),
			threadStatusArgs{Ref: "thr_1", Status: store.ThreadCompleted, IfMatch: 4},
			"Thread is completed.", map[string]any{"action": "complete", "thread": viewJSON("completed")}},
		"close": {map[string]any{"action": "close", "threadRef": "thr_1", "ifMatch": 0}, "SetThreadStatus", view("closed"),
			threadStatusArgs{Ref: "thr_1", Status: store.ThreadClosed, IfMatch: 0},
			"Thread is closed.", map[string]any{"action": "close", "thread": viewJSON("closed")}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakes(t)
			f.answer(tc.method, tc.answer, nil)
			h := startHandlers(t, f, testPrincipal(oauth.ScopeRead))
			sc := h.ok("project_thread_control", h.call("project_thread_control", tc.args), tc.summary)
			diff(t, "structuredContent", tc.want, sc)
			f.wantCalls(t, serviceCall{Method: tc.method, Caller: h.caller(), Args: tc.wantArg})
		})
	}
	for name, tc := range map[string]struct {
		args   map[string]any
		method string
		err    error
		want   envelope
	}{
		"stale revision": {map[string]any{"action": "close", "threadRef": "thr_1", "ifMatch": 4}, "SetThreadStatus", executions.ErrThreadRevision,
			envelope{Code: "thread_revision_conflict", Category: catConflict}},
		"dirty worktree": {map[string]any{"action": "close", "threadRef": "thr_1", "ifMatch": 4}, "SetThreadStatus", executions.ErrWorktreeDirty,
			envelope{Code: "project_worktree_dirty", Category: catState}},
		"running commands": {map[string]any{"action": "archive", "threadRef": "thr_1", "ifMatch": 4}, "SetThreadStatus", executions.ErrProcessesRunning,
			envelope{Code: "project_busy", Category: catTransient, Retryable: true}},
		"unknown Thread": {map[string]any{"action": "status", "threadRef": "thr_2"}, "ThreadStatus", executions.ErrThreadNotFound,
			envelope{Code: "project_thread_not_found", Category: catState}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakes(t)
			f.answer(tc.method, nil, tc.err)
			h := startHandlers(t, f, testPrincipal(oauth.ScopeRead))
			wantError(t, h.call("project_thread_control", tc.args), tc.want)
		})
	}
	for name, args := range map[string]map[string]any{
		"archive without ifMatch":  {"action": "archive", "threadRef": "thr_1"},
		"close without ifMatch":    {"action": "close", "threadRef": "thr_1"},
		"status without threadRef": {"action": "status"},
		"a wait over 20 s":         {"action": "activity", "threadRef": "thr_1", "waitMs": 20001},
		"a negative wait":          {"action": "activity", "threadRef": "thr_1", "waitMs": -1},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakes(t)
			h := startHandlers(t, f, testPrincipal(oauth.ScopeRead))
			wantError(t, h.call("project_thread_control", args), invalid)
			f.wantCalls(t)
		})
	}
}

func TestSaveProgressHandler(t *testing.T) {
	t.Parallel()
	three := int64(3)
	for name, tc := range map[string]struct {
		args    map[string]any
		wantReq tasks.SaveRequest
		answer  saved
		summary string
		want    map[string]any
	}{
		"resumable": {
			args:    map[string]any{"operationId": "op-1", "title": "Refactor", "progress": "done: a\nnext: b", "ifMatch": 3, "status": "resumable"},
			wantReq: tasks.SaveRequest{OperationID: "op-1", Title: "Refactor", Progress: "done: a\nnext: b", IfMatch: &three, Status: "resumable"},
			answer:  saved{Saved: &tasks.Saved{TaskRef: "tsk_1", Revision: 4, Status: "resumable", SavedAt: "2031-02-03T04:05:06Z"}},
			summary: "Saved progress (revision 4); a later conversation can resume it.",
			want:    map[string]any{"taskRef": "tsk_1", "revision": 4.0, "status": "resumable", "savedAt": "2031-02-03T04:05:06Z"},
		},
		"completed, replayed": {
			args:    map[string]any{"operationId": "op-2", "title": "Refactor", "progress": "all done", "status": "completed"},
			wantReq: tasks.SaveRequest{OperationID: "op-2", Title: "Refactor", Progress: "all done", Status: "completed"},
			answer:  saved{Saved: &tasks.Saved{TaskRef: "tsk_1", Revision: 5, Status: "completed", SavedAt: "2031-02-03T04:05:06Z"}, Replayed: true},
			summary: "Saved the Task as completed.",
			want:    map[string]any{"taskRef": "tsk_1", "revision": 5.0, "status": "completed", "savedAt": "2031-02-03T04:05:06Z", "replayed": true},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakes(t)
			f.answer("Save", tc.answer, nil)
			h := startHandlers(t, f, testPrincipal(oauth.ScopeRead))
			sc := h.ok("save_progress", h.call("save_progress", tc.args), tc.summary)
			diff(t, "structuredContent", tc.want, sc)
			f.wantCalls(t, serviceCall{Method: "Resolve", Caller: h.caller()}, serviceCall{Method: "Save", Exec: execID, Args: tc.wantReq})
		})
	}
	for name, tc := range map[string]struct {
		err         error
		want        envelope
		wantDetails map[string]any
	}{
		"revision conflict": {&tasks.RevisionError{Err: tasks.ErrRevisionConflict, Current: 5},
			envelope{Code: "project_task_revision_conflict", Category: catConflict, OperationID: "op-1"}, map[string]any{"currentRevision": 5.0}},
		"ifMatch required": {&tasks.RevisionError{Err: tasks.ErrIfMatchRequired, Current: 2},
			envelope{Code: "if_match_required", Category: catInput, OperationID: "op-1"}, map[string]any{"currentRevision": 2.0}},
		"too large": {tasks.ErrTooLarge, envelope{Code: "task_context_too_large", Category: catLimit, OperationID: "op-1"}, nil},
		"capacity":  {tasks.ErrCapacity, envelope{Code: "project_task_capacity", Category: catLimit, OperationID: "op-1"}, nil},
		"failed":    {errors.New("database is locked"), envelope{Code: "internal_error", Category: catInternal, OperationID: "op-1"}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakes(t)
			f.answer("Save", nil, tc.err)
			h := startHandlers(t, f, testPrincipal(oauth.ScopeRead))
			details := wantError(t, h.call("save_progress", validArgs["save_progress"]), tc.want)
			diff(t, "details", tc.wantDetails, details)
		})
	}
	for name, args := range map[string]map[string]any{
		"a status not in the enum": with(validArgs["save_progress"], "status", "done"),
		"no title":                 {"operationId": "op-1", "progress": "p", "status": "resumable"},
		"a fractional ifMatch":     with(validArgs["save_progress"], "ifMatch", 1.5),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakes(t)
			h := startHandlers(t, f, testPrincipal(oauth.ScopeRead))
			wantError(t, h.call("save_progress", args), invalid)
			f.wantCalls(t)
		})
	}
}
