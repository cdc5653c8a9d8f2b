//go:build inspector

package mcpserver_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/apptest"
)

// TestInspectorCLI runs the MCP Inspector CLI against a real instance:
// go test -tags inspector -run Inspector ./internal/mcpserver (needs the
// inspector installed; DEVSPACE_INSPECTOR names its CLI entry point).
func TestInspectorCLI(t *testing.T) {
	bin := os.Getenv("DEVSPACE_INSPECTOR")
	env := apptest.Start(t, apptest.Options{})
	_, tok := env.Grant(apptest.Approval{})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--method", "tools/list"}, `"name": "project_control"`},
		{[]string{"--method", "tools/call", "--tool-name", "list_projects"}, `"label": "alpha"`},
		{[]string{"--method", "tools/call", "--tool-name", "project_control", "--tool-arg", "action=open", "--tool-arg", "operationId=inspector-1"}, `"status": "open"`},
	} {
		cmd := exec.Command("node", append([]string{bin, env.URL + "/mcp", "--transport", "http", "--header", "Authorization: Bearer " + tok.AccessToken}, tc.args...)...)
		out, err := cmd.CombinedOutput()
		t.Logf("%v:\n%s", tc.args, out)
		if err != nil || !strings.Contains(string(out), tc.want) {
			t.Fatalf("%v: %v; want %s", tc.args, err, tc.want)
		}
	}
}
