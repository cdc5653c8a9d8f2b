package app_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/sandbox"
)

// sandboxInfo returns the devspace_command_sandbox_info lines the real
// metrics handler serves.
func sandboxInfo(t *testing.T, env *apptest.Env) []string {
	t.Helper()
	rec := httptest.NewRecorder()
	env.App.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d", rec.Code)
	}
	var out []string
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(line, "devspace_command_sandbox_info") {
			out = append(out, line)
		}
	}
	return out
}

// TestCommandSandboxMetric: devspace_command_sandbox_info says how
// commands are confined: mode, Landlock ABI, network policy (and whether
// the ABI enforces it) and whether signals are scoped (ABI 6).
func TestCommandSandboxMetric(t *testing.T) {
	abi := func(n int) func() sandbox.Status {
		return func() sandbox.Status { return sandbox.Status{ABI: n, Reason: "Landlock ABI " + strconv.Itoa(n)} }
	}
	// The IPC tier is the machine's (unprivileged user namespaces).
	ipc := map[bool]string{true: "namespace", false: "refused"}[sandbox.NamespacesAvailable()]
	for _, tt := range []struct {
		name  string
		probe func() sandbox.Status
		env   map[string]string
		want  string
	}{
		{"landlock", abi(7), nil, `{abi="7",ipc="` + ipc + `",mode="landlock",network="allow",scoped="true",unix_sockets="gate"} 1`},
		{"unscoped abi", abi(5), nil, `{abi="5",ipc="` + ipc + `",mode="landlock",network="allow",scoped="false",unix_sockets="gate"} 1`},
		{"network deny", abi(6), map[string]string{"DEVSPACE_COMMAND_NETWORK": "deny"}, `{abi="6",ipc="` + ipc + `",mode="landlock",network="deny",scoped="true",unix_sockets="gate"} 1`},
		{"network deny without Landlock TCP rules", abi(3), map[string]string{"DEVSPACE_COMMAND_NETWORK": "deny"}, `{abi="3",ipc="` + ipc + `",mode="landlock",network="deny",scoped="false",unix_sockets="gate"} 1`},
		{"off", abi(7), map[string]string{"DEVSPACE_COMMAND_SANDBOX": "off"}, `{abi="7",ipc="",mode="off",network="allow",scoped="false",unix_sockets=""} 1`},
		{"unavailable", func() sandbox.Status { return sandbox.Status{Reason: "forced by the test"} }, nil, `{abi="0",ipc="",mode="unavailable",network="allow",scoped="false",unix_sockets=""} 1`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}, SandboxProbe: tt.probe, Env: tt.env})
			if diff := cmp.Diff([]string{"devspace_command_sandbox_info" + tt.want}, sandboxInfo(t, env)); diff != "" {
				t.Errorf("metric (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("kernel", func(t *testing.T) {
		st := sandbox.Probe()
		if !st.Available() {
			t.Skip("no Landlock on this kernel")
		}
		env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
		want := `devspace_command_sandbox_info{abi="` + strconv.Itoa(st.ABI) + `",ipc="` + ipc + `",mode="landlock",network="allow",scoped="` +
			strconv.FormatBool(st.Features().Scoped) + `",unix_sockets="gate"} 1`
		if diff := cmp.Diff([]string{want}, sandboxInfo(t, env)); diff != "" {
			t.Errorf("metric (-want +got):\n%s", diff)
		}
	})
}
