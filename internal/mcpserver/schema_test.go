package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/mcpserver"
)

// update is -update (mcpserver.Update): rewrite the golden files.
var update = mcpserver.Update

// requiredScopes is docs/design.md §7's table: the scopes each tool needs. A tool
// missing here fails the test, so new tools must be added deliberately.
var requiredScopes = map[string][]string{
	"list_projects":          {"project:read"},
	"project_control":        {"project:read"},
	"save_progress":          {"project:read"},
	"project_thread_control": {"project:read"},
	"read_files":             {"project:read"},
	"skills":                 {"project:read"},
	"show_changes":           {"project:read"},
	"apply_patch":            {"project:read", "project:write"},
	"undo_patch":             {"project:read", "project:write"},
	"inspect":                {"project:read"},
	"exec_command":           {"project:read", "process:execute"},
	"write_stdin":            {"project:read", "process:execute"},
	"read_process_output":    {"project:read", "process:execute"},
}

// TestToolSnapshots compares every tool's public definition with its
// golden file and checks the parts ChatGPT's review relies on.
func TestToolSnapshots(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Env: map[string]string{"DEVSPACE_OAUTH_SCOPES": "project:read project:write process:execute"}})
	_, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read", "project:write", "process:execute"}})
	cs := connect(t, env, tok.AccessToken, "2025-11-25")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		if _, ok := requiredScopes[tl.Name]; !ok {
			t.Errorf("tool %s is not in the scope table", tl.Name)
		}
		checkTool(t, tl)
		got, _ := json.MarshalIndent(tl, "", "  ")
		got = append(got, '\n')
		path := filepath.Join("testdata", "tools", tl.Name+".json")
		if *update {
			os.MkdirAll(filepath.Dir(path), 0o755)
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./internal/mcpserver -run TestToolSnapshots -update)", err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s schema changed (-want +got); if intended, run with -update and tell hosts to refresh:\n%s", tl.Name, diff)
		}
	}
	for name := range requiredScopes {
		if !slices.Contains(names, name) {
			t.Errorf("tool %s is missing from tools/list", name)
		}
	}
}

func checkTool(t *testing.T, tl *mcp.Tool) {
	t.Helper()
	if tl.Title == "" || tl.Annotations == nil || tl.Annotations.DestructiveHint == nil || tl.Annotations.OpenWorldHint == nil {
		t.Errorf("%s lacks a title or annotations", tl.Name)
	}
	for _, part := range []string{"Use when", "Avoid", "Returns"} {
		if !strings.Contains(tl.Description, part) {
			t.Errorf("%s description lacks %q", tl.Name, part)
		}
	}
	if tl.OutputSchema == nil {
		t.Errorf("%s has no output schema", tl.Name)
	}
	schemes, _ := json.Marshal(tl.Meta["securitySchemes"])
	if !strings.Contains(string(schemes), `"oauth2"`) {
		t.Errorf("%s lacks _meta.securitySchemes: %s", tl.Name, schemes)
	}
	in, _ := json.Marshal(tl.InputSchema)
	if !strings.Contains(string(in), `"additionalProperties":false`) {
		t.Errorf("%s input schema allows additional properties: %s", tl.Name, in)
	}
}

// TestToolsListPerScopeSet checks that tools/list shows exactly the tools
// whose scopes the grant holds.
func TestToolsListPerScopeSet(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Env: map[string]string{"DEVSPACE_OAUTH_SCOPES": "project:read project:write process:execute"}})
	for _, scopes := range [][]string{
		{"project:read"},
		{"project:read", "project:write"},
		{"project:read", "project:write", "process:execute"},
	} {
		t.Run(strings.Join(scopes, "+"), func(t *testing.T) {
			_, tok := env.Grant(apptest.Approval{Scopes: scopes})
			cs := connect(t, env, tok.AccessToken, "")
			var want []string
			for name, need := range requiredScopes {
				ok := true
				for _, n := range need {
					ok = ok && slices.Contains(scopes, n)
				}
				if ok {
					want = append(want, name)
				}
			}
			got := toolNames(t, cs)
			slices.Sort(want)
			slices.Sort(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("tools (-want +got):\n%s", diff)
			}
		})
	}
}
