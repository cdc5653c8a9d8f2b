package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/app"
	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/cli"
	"github.com/devspace-dev/devspace/internal/config"
	"github.com/devspace-dev/devspace/internal/sandbox"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// run invokes the CLI with env and returns exit code, stdout and stderr.
func run(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Main(context.Background(), args, lookupOf(t, env), cli.IO{Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

// lookupOf looks env up, after giving it a HOME of the test's own when it
// names none (kept for the test's next calls): a user always has one, CI's
// root may not.
func lookupOf(t *testing.T, env map[string]string) func(string) (string, bool) {
	if _, ok := env["HOME"]; !ok {
		env["HOME"] = t.TempDir()
	}
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

func envOf(e *apptest.Env) map[string]string {
	m := map[string]string{}
	for _, k := range []string{"DEVSPACE_STATE_DIR", "DEVSPACE_SCRATCH_DIR", "DEVSPACE_TOOLS_DIR", "DEVSPACE_PROJECTS", "DEVSPACE_PUBLIC_BASE_URL", "DEVSPACE_LISTEN",
		"DEVSPACE_CONTROL_LISTEN", "DEVSPACE_METRICS_LISTEN", "DEVSPACE_ADMIN_LISTEN"} {
		if v, ok := e.LookupEnv(k); ok {
			m[k] = v
		}
	}
	return m
}

func TestCLIGrantsThroughControlAPI(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	c := env.Register("Grants CLI Client", "http://127.0.0.1:9/cb", "client_secret_basic")
	tok := env.GrantFor(c, apptest.Approval{Projects: []string{"beta"}, Scopes: []string{"project:read", "project:write"}})
	other := env.GrantFor(c, apptest.Approval{Projects: []string{"alpha"}})
	ctx := context.Background()
	p, err := env.App.OAuth().Verify(ctx, tok.AccessToken)
	if err != nil {
		t.Fatal(err)
	}
	vars := envOf(env)

	code, out, stderr := run(t, vars, "grants", "list")
	if code != 0 {
		t.Fatalf("grants list: %d %s", code, stderr)
	}
	today := time.Now().Format("2006-01-02")
	for _, want := range []string{p.GrantID, "Grants CLI Client", "project:read project:write", "beta", today, "active"} {
		if !strings.Contains(out, want) {
			t.Errorf("grants list lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = run(t, vars, "grants", "list", "--json")
	var listed []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &listed) != nil || len(listed) != 2 {
		t.Fatalf("grants list --json: %d %s", code, out)
	}

	code, out, stderr = run(t, vars, "grants", "revoke", p.GrantID)
	if code != 0 || !strings.Contains(out, "revoked") {
		t.Fatalf("revoke: %d %s %s", code, out, stderr)
	}
	if _, err := env.App.OAuth().Verify(ctx, tok.AccessToken); err == nil {
		t.Fatal("revoked grant still verifies")
	}
	if _, err := env.App.OAuth().Verify(ctx, other.AccessToken); err != nil {
		t.Fatalf("other grant affected: %v", err)
	}
	if code, _, stderr = run(t, vars, "grants", "revoke", "grt_nope"); code != 1 || !strings.Contains(stderr, "no grant") {
		t.Fatalf("unknown grant: %d %s", code, stderr)
	}

	code, out, _ = run(t, vars, "grants", "revoke-all")
	if code != 0 || !strings.Contains(out, "Revoked 1 grant") {
		t.Fatalf("revoke-all: %d %s", code, out)
	}
	if _, err := env.App.OAuth().Verify(ctx, other.AccessToken); err == nil {
		t.Fatal("grant survived revoke-all")
	}

	code, out, _ = run(t, vars, "owner", "rotate-password")
	if code != 0 || !strings.Contains(out, "New Owner password") {
		t.Fatalf("rotate: %d %s", code, out)
	}
	newPassword := strings.TrimSpace(strings.Split(out, "shown once):")[1])
	fresh := env.GrantFor(c, apptest.Approval{Password: newPassword})

	// With the server gone, the CLI works on the state directory.
	env.StopServing()
	code, out, stderr = run(t, vars, "grants", "list")
	if code != 0 || !strings.Contains(out, "Grants CLI Client") {
		t.Fatalf("offline list: %d %s %s", code, out, stderr)
	}
	code, _, stderr = run(t, vars, "grants", "revoke-all")
	if code != 0 {
		t.Fatalf("offline revoke-all: %d %s", code, stderr)
	}
	env.Restart()
	if _, err := env.App.OAuth().Verify(ctx, fresh.AccessToken); err == nil {
		t.Fatal("offline revoke-all did not take effect")
	}
}

func TestInitCommand(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "proj")
	os.Mkdir(proj, 0o755)
	// A closed control address: init refuses beside a DevSpace server
	// that answers on its control address with another state.
	ctl := freeAddr(t)
	vars := map[string]string{"DEVSPACE_STATE_DIR": filepath.Join(dir, "state"), "DEVSPACE_PROJECTS": proj, "DEVSPACE_CONTROL_LISTEN": ctl}
	code, out, stderr := run(t, vars, "init")
	if code != 0 || !strings.Contains(out, "Owner password") {
		t.Fatalf("init: %d %s %s", code, out, stderr)
	}
	for path, mode := range map[string]os.FileMode{"state": 0o700, "state/auth.json": 0o600, "state/devspace.db": 0o600} {
		fi, err := os.Stat(filepath.Join(dir, path))
		if err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v (%v)", path, fi.Mode().Perm(), mode, err)
		}
	}
	if code, _, stderr = run(t, vars, "init"); code != 1 || !strings.Contains(stderr, "--force") {
		t.Fatalf("second init: %d %s", code, stderr)
	}
	pwFile := filepath.Join(dir, "pw")
	os.WriteFile(pwFile, []byte("from a docker secret\n"), 0o600)
	vars["DEVSPACE_OWNER_PASSWORD_FILE"] = pwFile
	code, out, _ = run(t, vars, "init", "--force")
	if code != 0 || strings.Contains(out, "from a docker secret") || !strings.Contains(out, "DEVSPACE_OWNER_PASSWORD_FILE") {
		t.Fatalf("init --force with password file: %d %s", code, out)
	}
	code, out, _ = run(t, vars, "projects", "list")
	if code != 0 || !strings.Contains(out, "prj_") || !strings.Contains(out, "proj") {
		t.Fatalf("projects list: %d %s", code, out)
	}
	code, out, _ = run(t, vars, "doctor")
	if code != 0 || !strings.Contains(out, "control listener "+ctl+" is loopback-only") {
		t.Fatalf("doctor: %d %s", code, out)
	}
}

func TestServeRefusesBadConfig(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, key, value, want string }{
		{"public control", "DEVSPACE_CONTROL_LISTEN", "0.0.0.0:7677", "DEVSPACE_CONTROL_LISTEN"},
		{"root project", "DEVSPACE_PROJECTS", "/", "DEVSPACE_PROJECTS"},
		{"http public url", "DEVSPACE_PUBLIC_BASE_URL", "http://devspace.example.com", "DEVSPACE_PUBLIC_BASE_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := run(t, map[string]string{"DEVSPACE_STATE_DIR": dir, tc.key: tc.value}, "serve")
			if code != 1 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %s", code, stderr)
			}
		})
	}
	code, _, stderr := run(t, map[string]string{"DEVSPACE_STATE_DIR": filepath.Join(dir, "empty"), "DEVSPACE_CONTROL_LISTEN": freeAddr(t)}, "serve")
	if code != 1 || !strings.Contains(stderr, "no DevSpace state in "+filepath.Join(dir, "empty")) ||
		!strings.Contains(stderr, "devspace init") {
		t.Fatalf("uninitialized serve: %d %s", code, stderr)
	}
}

// TestListenersAndLimits runs the real three listeners and checks Host
// validation, the body cap, readiness, metrics and the health check.
func TestListenersAndLimits(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "proj")
	os.Mkdir(proj, 0o755)
	vars := map[string]string{"DEVSPACE_STATE_DIR": filepath.Join(dir, "state"), "DEVSPACE_PROJECTS": proj,
		"DEVSPACE_LISTEN": "127.0.0.1:0", "DEVSPACE_CONTROL_LISTEN": "127.0.0.1:0", "DEVSPACE_METRICS_LISTEN": "127.0.0.1:0",
		"DEVSPACE_ADMIN_LISTEN": "127.0.0.1:0", "DEVSPACE_MAX_REQUEST_BODY": "1MiB"}
	if code, _, stderr := run(t, vars, "init"); code != 0 {
		t.Fatal(stderr)
	}
	cfg, err := config.Load(nil, lookupOf(t, vars))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	a, err := app.New(context.Background(), cfg, slogTo(&logs), app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown(context.Background())
	addrs := a.Addrs()
	public, metricsURL := "http://"+addrs[0].String(), "http://"+addrs[2].String()

	do := func(method, u, host string, body io.Reader, size int64) *http.Response {
		req, _ := http.NewRequest(method, u, body)
		if host != "" {
			req.Host = host
		}
		if size > 0 {
			req.ContentLength = size
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if r := do("GET", public+"/healthz", "", nil, 0); r.StatusCode != 200 {
		t.Fatalf("healthz: %d", r.StatusCode)
	}
	if r := do("GET", public+"/healthz", "evil.example", nil, 0); r.StatusCode != 403 {
		t.Fatalf("bad Host: %d", r.StatusCode)
	}
	if r := do("GET", public+"/healthz", "127.0.0.1.evil.example", nil, 0); r.StatusCode != 403 {
		t.Fatalf("suffix Host: %d", r.StatusCode)
	}
	if status := testutil.PostOversized(t, public+"/oauth/register", nil, 2<<20); status != 413 {
		t.Fatalf("oversized body: %d", status)
	}
	resp, err := http.Get(public + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	var ready struct {
		Ready  bool            `json:"ready"`
		Checks map[string]bool `json:"checks"`
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if json.Unmarshal(raw, &ready) != nil || !ready.Ready || !ready.Checks["database"] || !ready.Checks["disk_space"] || strings.Contains(string(raw), dir) ||
		ready.Checks["command_unix_gate"] != (sandbox.Probe().Available() && sandbox.GateAvailable()) {
		t.Fatalf("readyz: %s", raw)
	}
	resp, err = http.Get(metricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"devspace_http_requests_total", "devspace_build_info", "go_goroutines", "devspace_process_resident_memory_bytes", "devspace_grants_active", "devspace_command_slots_grant_max", `route="/healthz"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	vars["DEVSPACE_LISTEN"] = addrs[0].String()
	if code, out, stderr := run(t, vars, "healthcheck"); code != 0 {
		t.Fatalf("healthcheck: %d %s %s", code, out, stderr)
	}
	a.Shutdown(context.Background())
	if code, _, _ := run(t, vars, "healthcheck"); code != 1 {
		t.Fatalf("healthcheck on a stopped server: %d", code)
	}
}
