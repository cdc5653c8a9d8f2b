package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/app"
	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/config"
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

// TestDiagnosticReadsMetrics: the bundle carries a metrics snapshot from
// the running server's configured metrics listener whenever that is an
// address of this host: a wildcard bind (the image's 0.0.0.0:7678) is
// asked on loopback, an interface address or a name resolving to one
// (compose's devspace-metrics alias) directly. An address of another
// machine is never asked.
func TestDiagnosticReadsMetrics(t *testing.T) {
	port := func() string { _, p, _ := net.SplitHostPort(freeAddr(t)); return p }
	cases := []struct{ name, listen string }{{"wildcard", "0.0.0.0:" + port()}}
	if ip := interfaceIP(t); ip != "" {
		cases = append(cases, struct{ name, listen string }{"interface address", net.JoinHostPort(ip, port())})
		if host, err := os.Hostname(); err == nil {
			if ips, err := net.LookupHost(host); err == nil && slices.Contains(ips, ip) {
				cases = append(cases, struct{ name, listen string }{"host name", net.JoinHostPort(host, port())})
			}
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vars := diagnosticServer(t, tc.listen)
			b := diagnosticBundleOf(t, vars)
			metrics, _ := b["metrics"].([]any)
			var grants bool
			for _, m := range metrics {
				grants = grants || strings.HasPrefix(fmt.Sprint(m), "devspace_grants_active ")
			}
			if !grants {
				t.Errorf("metrics from %s: %v (notes %v)", tc.listen, metrics, b["notes"])
			}
		})
	}
	t.Run("another machine", func(t *testing.T) {
		vars := map[string]string{"DEVSPACE_STATE_DIR": t.TempDir(), "DEVSPACE_CONTROL_LISTEN": freeAddr(t),
			"DEVSPACE_METRICS_LISTEN": "192.0.2.1:7678"}
		b := diagnosticBundleOf(t, vars)
		if b["metrics"] != nil || !strings.Contains(fmt.Sprint(b["notes"]), "not an address of this host; not scraped") {
			t.Errorf("metrics %v, notes %v", b["metrics"], b["notes"])
		}
	})
}

// diagnosticServer initializes a state and serves it with real listeners,
// metrics on metricsListen; it returns the configuration's variables.
func diagnosticServer(t *testing.T, metricsListen string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	proj := filepath.Join(dir, "proj")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"DEVSPACE_STATE_DIR": filepath.Join(dir, "state"), "DEVSPACE_PROJECTS": proj,
		"DEVSPACE_LISTEN": "127.0.0.1:0", "DEVSPACE_CONTROL_LISTEN": freeAddr(t), "DEVSPACE_METRICS_LISTEN": metricsListen}
	if code, _, stderr := run(t, vars, "init"); code != 0 {
		t.Fatal(stderr)
	}
	cfg, err := config.Load(nil, func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(context.Background(), cfg, slogTo(io.Discard), app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Shutdown(context.Background()) })
	return vars
}

// diagnosticBundleOf runs `devspace diagnostic` and decodes the bundle.
func diagnosticBundleOf(t *testing.T, vars map[string]string) map[string]any {
	t.Helper()
	code, stdout, stderr := run(t, vars, "diagnostic")
	if code != 0 {
		t.Fatalf("diagnostic: %d\n%s", code, stderr)
	}
	var b map[string]any
	if err := json.Unmarshal([]byte(stdout), &b); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	return b
}

// interfaceIP is a non-loopback IPv4 address of this host, or "".
func interfaceIP(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}
