package mcpserver

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/oauth"
)

// The handler tests: every tool over fake services (harness_test.go). The
// tests in this file hold for every tool; the per-domain files
// (handlers_*_test.go) check what each handler passes to its service and
// how it renders the answer. The end-to-end flows through a whole
// instance (apptest) are the other _test.go files.

// validArgs are arguments each tool accepts. A registered tool missing
// here fails TestHandlerArgsCoverEveryTool, so a new tool gets these
// tests.
var validArgs = map[string]map[string]any{
	"list_projects":          {},
	"project_control":        {"action": "open", "operationId": "op-1"},
	"project_thread_control": {"action": "list"},
	"save_progress":          {"operationId": "op-1", "title": "Refactor", "progress": "done: a", "status": "resumable"},
	"read_files":             {"files": []any{map[string]any{"path": "a.txt"}}},
	"skills":                 {},
	"show_changes":           {"source": "repository"},
	"apply_patch":            {"operationId": "op-1", "patch": "*** Begin Patch\n*** End Patch\n", "ifMatch": nil},
	"undo_patch":             {"operationId": "op-1"},
	"inspect":                {"operations": []any{map[string]any{"op": "ls"}}},
	"exec_command":           {"operationId": "op-1", "program": "true"},
	"write_stdin":            {"operationId": "op-1", "processRef": "prc_1", "closeStdin": true},
	"read_process_output":    {"processRef": "prc_1"},
}

// aField is a string property of each tool, for the strict scan's cases.
var aField = map[string]string{
	"list_projects":          "projectRef",
	"project_control":        "operationId",
	"project_thread_control": "threadRef",
	"save_progress":          "title",
	"read_files":             "files",
	"skills":                 "query",
	"show_changes":           "cursor",
	"apply_patch":            "patch",
	"undo_patch":             "patchOperationId",
	"inspect":                "operations",
	"exec_command":           "program",
	"write_stdin":            "processRef",
	"read_process_output":    "processRef",
}

// resolving lists the tools that work in the caller's open execution,
// and whether their failures before the service ran carry the
// operationId with phase not_started (the tools with effects).
var resolving = map[string]bool{
	"save_progress":       false,
	"read_files":          false,
	"skills":              false,
	"show_changes":        false,
	"apply_patch":         true,
	"undo_patch":          true,
	"inspect":             false,
	"exec_command":        true,
	"write_stdin":         false,
	"read_process_output": false,
}

func TestHandlerArgsCoverEveryTool(t *testing.T) {
	t.Parallel()
	h := startHandlers(t, newFakes(t), testPrincipal(allScopes...))
	var names []string
	for _, tl := range h.srv.tools {
		names = append(names, tl.spec.name)
		if _, ok := validArgs[tl.spec.name]; !ok {
			t.Errorf("tool %s has no validArgs", tl.spec.name)
		}
		if _, ok := aField[tl.spec.name]; !ok {
			t.Errorf("tool %s has no aField", tl.spec.name)
		}
	}
	for name := range validArgs {
		if !slices.Contains(names, name) {
			t.Errorf("validArgs names %s, which is not registered", name)
		}
	}
}

// TestHandlersRefuseMissingScopes: a tool called without one of its
// scopes is insufficient_scope, with the scopes it needs in details and a
// challenge naming them in _meta, and no service is called.
func TestHandlersRefuseMissingScopes(t *testing.T) {
	t.Parallel()
	probe := startHandlers(t, newFakes(t), testPrincipal(allScopes...))
	for _, tl := range probe.srv.tools {
		for _, missing := range tl.spec.scopes {
			t.Run(tl.spec.name+" without "+missing, func(t *testing.T) {
				t.Parallel()
				f := newFakes(t)
				h := startHandlers(t, f, testPrincipal(slices.DeleteFunc(slices.Clone(allScopes), func(s string) bool { return s == missing })...))
				res := h.call(tl.spec.name, validArgs[tl.spec.name])
				details := wantError(t, res, envelope{Code: "insufficient_scope", Category: catScope})
				if diff := cmp.Diff(map[string]any{"requiredScopes": toAny(tl.spec.scopes)}, details); diff != "" {
					t.Errorf("details (-want +got):\n%s", diff)
				}
				want := `Bearer resource_metadata="https://devspace.test/.well-known/oauth-protected-resource/mcp", scope="` +
					strings.Join(tl.spec.scopes, " ") + `", error="insufficient_scope", error_description="this tool needs ` + missing + `"`
				if diff := cmp.Diff(mcp.Meta{"mcp/www_authenticate": []any{want}}, toolMeta(res)); diff != "" {
					t.Errorf("_meta (-want +got):\n%s", diff)
				}
				f.wantCalls(t)
			})
		}
	}
}

// TestHandlersStrictScan: arguments the published input schema refuses
// — an unknown property, a repeated key, a value of the wrong type — are
// invalid_tool_input before any service runs.
func TestHandlersStrictScan(t *testing.T) {
	t.Parallel()
	for name, args := range validArgs {
		field := aField[name]
		// The key twice, then the valid arguments (which may hold it too).
		repeated := `{"` + field + `":"x","` + field + `":"y"`
		if raw := string(mustMarshal(t, args)); raw != "{}" {
			repeated += "," + raw[1:]
		} else {
			repeated += "}"
		}
		for cname, arg := range map[string]any{
			"unknown property": with(args, "unknownProperty", "x"),
			"case variant":     with(args, strings.ToUpper(field[:1])+field[1:], "x"),
			"wrong type":       with(args, field, 7),
			"repeated key":     json.RawMessage(repeated),
			"not an object":    json.RawMessage(`["x"]`),
		} {
			t.Run(name+" "+cname, func(t *testing.T) {
				t.Parallel()
				f := newFakes(t)
				h := startHandlers(t, f, testPrincipal(allScopes...))
				wantError(t, h.call(name, arg), invalid)
				f.wantCalls(t)
			})
		}
	}
}

// TestHandlersWithoutPrincipal: a request that reached a tool without a
// verified principal (never over HTTP: authenticate answers 401 first)
// is internal_error, and no service is called.
func TestHandlersWithoutPrincipal(t *testing.T) {
	t.Parallel()
	f := newFakes(t)
	h := startHandlers(t, f, nil)
	for name, args := range validArgs {
		wantError(t, h.call(name, args), envelope{Code: "internal_error", Category: catInternal})
	}
	f.wantCalls(t)
	// Nor does tools/list show it any tool.
	res, err := h.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 0 {
		t.Errorf("tools/list without a principal: %d tools", len(res.Tools))
	}
}

// TestHandlersNeedExecution: a tool that works in the caller's open
// execution fails closed without a host session, and renders the
// resolver's error; the tools with effects add their operationId and
// phase not_started.
func TestHandlersNeedExecution(t *testing.T) {
	t.Parallel()
	for name, effects := range resolving {
		want := func(code, category string) envelope {
			e := envelope{Code: code, Category: category}
			if effects {
				e.OperationID = "op-1" // nothing reached a service: no phase
			}
			return e
		}
		t.Run(name+" without a session", func(t *testing.T) {
			t.Parallel()
			f := newFakes(t)
			h := startHandlers(t, f, testPrincipal(allScopes...))
			wantError(t, h.callMeta(h.cs, name, validArgs[name], nil), want("session_identity_required", catInput))
			f.wantCalls(t)
		})
		t.Run(name+" without an execution", func(t *testing.T) {
			t.Parallel()
			f := newFakes(t)
			f.answer("Resolve", nil, executions.ErrExecutionRequired)
			h := startHandlers(t, f, testPrincipal(allScopes...))
			wantError(t, h.call(name, validArgs[name]), want("project_execution_required", catState))
			f.wantCalls(t, serviceCall{Method: "Resolve", Caller: h.caller()})
		})
	}
}

// TestHandlersCaller: the caller a service gets is the principal's grant
// with the HMACs of the host session and Actor; without host metadata
// the Actor is the client.
func TestHandlersCaller(t *testing.T) {
	t.Parallel()
	f := newFakes(t)
	f.answer("Counts", map[string]int{}, nil)
	h := startHandlers(t, f, testPrincipal(allScopes...))
	h.callMeta(h.cs, "list_projects", nil, mcp.Meta{metaSession: conv, metaSubject: "user-1", metaOrganization: "org-1"})
	h.callMeta(h.cs, "list_projects", nil, nil)
	want := h.caller()
	want.ActorRef = h.srv.hmacRef("openai-actor", "user-1\x00org-1")
	bare := h.caller()
	bare.SessionRef = ""
	f.wantCalls(t,
		serviceCall{Method: "Projects", Caller: want}, serviceCall{Method: "Counts", Args: []string(nil)},
		serviceCall{Method: "Projects", Caller: bare}, serviceCall{Method: "Counts", Args: []string(nil)})
}

// TestHandlersToolsList: tools/list shows the tools whose scopes the
// grant holds; the process tools only when commands can run, undo_patch
// only when the edits keep snapshots.
func TestHandlersToolsList(t *testing.T) {
	t.Parallel()
	read := []string{"list_projects", "project_control", "project_thread_control", "save_progress",
		"read_files", "skills", "show_changes", "inspect"}
	write := []string{"apply_patch", "undo_patch"}
	execute := []string{"exec_command", "write_stdin", "read_process_output"}
	for name, tc := range map[string]struct {
		scopes       []string
		canRun, undo bool
		want         [][]string
	}{
		"read":                  {[]string{oauth.ScopeRead}, true, true, [][]string{read}},
		"read write":            {[]string{oauth.ScopeRead, oauth.ScopeWrite}, true, true, [][]string{read, write}},
		"read execute":          {[]string{oauth.ScopeRead, oauth.ScopeExecute}, true, true, [][]string{read, execute}},
		"all":                   {allScopes, true, true, [][]string{read, write, execute}},
		"write without read":    {[]string{oauth.ScopeWrite, oauth.ScopeExecute}, true, true, nil},
		"commands cannot run":   {allScopes, false, true, [][]string{read, write}},
		"no undo snapshots":     {allScopes, true, false, [][]string{read, {"apply_patch"}, execute}},
		"neither runs nor undo": {allScopes, false, false, [][]string{read, {"apply_patch"}}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakes(t)
			f.canRun, f.undo = tc.canRun, tc.undo
			h := startHandlers(t, f, testPrincipal(tc.scopes...))
			res, err := h.cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tl := range res.Tools {
				got = append(got, tl.Name)
			}
			want := slices.Concat(tc.want...)
			slices.Sort(got)
			slices.Sort(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
		})
	}
}

// with is args with k set to v.
func with(args map[string]any, k string, v any) map[string]any {
	out := map[string]any{k: v}
	for ak, av := range args {
		if ak != k {
			out[ak] = av
		}
	}
	return out
}

func toAny[T any](s []T) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
