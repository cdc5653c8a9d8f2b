package app_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/apptest"
)

// TestDiagnosticRedacts: the support bundle of a running instance with a
// grant carries versions, configuration, doctor, counts and audit events,
// and no password, token, master-key byte, state path or Project path.
func TestDiagnosticRedacts(t *testing.T) {
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha", "beta"}})
	_, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read"}})
	vars := envOf(env)
	vars["HOME"] = filepath.Dir(env.StateDir)
	out := filepath.Join(t.TempDir(), "bundle.json")
	code, stdout, stderr := run(t, vars, "diagnostic", "--output", out)
	if code != 0 {
		t.Fatalf("diagnostic: %d\n%s\n%s", code, stdout, stderr)
	}
	raw, err := os.ReadFile(out)
	if testing.Verbose() {
		t.Logf("%s", raw)
	}
	if err != nil {
		t.Fatal(err)
	}
	var b map[string]any
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, raw)
	}
	for _, section := range []string{"version", "config", "doctor", "cgroup", "commandSandbox", "counts", "recentAudit"} {
		if b[section] == nil {
			t.Errorf("no %s section:\n%s", section, raw)
		}
	}
	if c, _ := b["counts"].(map[string]any); c["grantsActive"] != float64(1) {
		t.Errorf("counts = %v, want one active grant", c)
	}
	auth, err := os.ReadFile(filepath.Join(env.StateDir, "auth.json"))
	if err != nil {
		t.Fatal(err)
	}
	var a map[string]any
	json.Unmarshal(auth, &a)
	secrets := map[string]string{
		"owner password": apptest.Password, "access token": tok.AccessToken, "refresh token": tok.RefreshToken,
		"state dir": env.StateDir, "alpha path": env.Roots["alpha"], "beta path": env.Roots["beta"],
	}
	for k, v := range a {
		if s, ok := v.(string); ok && len(s) >= 16 {
			secrets["auth.json "+k] = s
		}
	}
	for name, s := range secrets {
		if s == "" {
			t.Fatalf("%s is empty: the test proves nothing", name)
		}
		if strings.Contains(string(raw), s) {
			t.Errorf("the bundle holds the %s", name)
		}
	}
}
