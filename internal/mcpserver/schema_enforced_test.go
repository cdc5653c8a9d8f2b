package mcpserver_test

import (
	"testing"

	"github.com/devspace-dev/devspace/internal/apptest"
)

// TestPublishedSchemaIsEnforced: what a tool's input schema says is what
// the server holds callers to — a wrong type, a value outside an enum or
// range and a missing required field are invalid_tool_input, answered
// before any tool runs (no execution is open here, so a call that got past
// validation would answer project_execution_required instead).
func TestPublishedSchemaIsEnforced(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}, Env: execScopes})
	_, tok := env.Grant(apptest.Approval{Projects: []string{"alpha"},
		Scopes: []string{"project:read", "project:write", "process:execute"}})
	cs := connect(t, env, tok.AccessToken, "")
	for name, tc := range map[string]struct {
		tool string
		args map[string]any
	}{
		"enum":                  {"show_changes", map[string]any{"source": "Repository"}},
		"missing_required":      {"show_changes", map[string]any{}},
		"null_for_string":       {"show_changes", map[string]any{"source": "repository", "cursor": nil}},
		"number_for_string":     {"read_process_output", map[string]any{"outputRef": 7}},
		"fraction_for_integer":  {"read_process_output", map[string]any{"outputRef": "out_x", "limit": 1.5}},
		"nested_enum":           {"inspect", map[string]any{"operations": []any{map[string]any{"op": "find"}}}},
		"nested_required":       {"inspect", map[string]any{"operations": []any{map[string]any{"path": "."}}}},
		"below_minimum":         {"read_files", map[string]any{"files": []any{map[string]any{"path": "a", "offset": -1}}}},
		"above_maximum":         {"project_thread_control", map[string]any{"action": "activity", "threadRef": "t", "waitMs": 20001}},
		"map_value_type":        {"exec_command", map[string]any{"operationId": "e", "program": "true", "environment": map[string]any{"A": 1}}},
		"ifMatch_wrong_kind":    {"apply_patch", map[string]any{"operationId": "p", "patch": "x", "ifMatch": []any{1}}},
		"required_ifMatch":      {"apply_patch", map[string]any{"operationId": "p", "patch": "x"}},
		"action_enum":           {"project_control", map[string]any{"action": "close"}},
		"status_enum":           {"save_progress", map[string]any{"operationId": "s", "title": "t", "progress": "p", "status": "done"}},
		"boolean_for_string":    {"skills", map[string]any{"query": true}},
		"array_for_object_item": {"read_files", map[string]any{"files": []any{[]any{"a"}}}},
	} {
		t.Run(name, func(t *testing.T) {
			sc, res := callTool(t, cs, tc.tool, tc.args, session("schema-"+name))
			if !res.IsError || errCode(sc) != "invalid_tool_input" {
				t.Fatalf("%s %v = %v, want invalid_tool_input", tc.tool, tc.args, sc)
			}
		})
	}
	// What the schema allows passes validation (and then meets the tool).
	sc, _ := callTool(t, cs, "show_changes", map[string]any{"source": "apply_patch_history"}, session("schema-ok"))
	if errCode(sc) != "project_execution_required" {
		t.Fatalf("valid arguments: %v", sc)
	}
}
