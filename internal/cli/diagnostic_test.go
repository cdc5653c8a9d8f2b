package cli_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/app"
	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/authstate"
	"github.com/devspace-dev/devspace/internal/cli"
	"github.com/devspace-dev/devspace/internal/config"
	"github.com/devspace-dev/devspace/internal/control"
	"github.com/devspace-dev/devspace/internal/sandbox"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// TestDiagnosticRedacts: the support bundle of a running instance with a
// grant carries versions, configuration, doctor, counts and audit events,
// and no password, password verifier, token, authorization code (redeemed
// or not), master-key byte (raw, hex or base64, nor the control key
// derived from it), state path or Project path. The paths are shown to be
// in what the bundle is built from, so their absence is redaction's work.
func TestDiagnosticRedacts(t *testing.T) {
	// Paths as an owner's look: t.TempDir()'s long runs of letters and
	// digits would be removed as credential-like whatever the path
	// redaction does.
	dir, err := os.MkdirTemp("", "devspace.")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha", "beta"}, Dir: dir})
	c := env.Register("Test Client", "http://127.0.0.1:9/callback", "client_secret_basic")
	code, verifier := env.Code(c, apptest.Approval{Scopes: []string{"project:read"}})
	tok := env.Exchange(c, code, verifier)
	pending, _ := env.Code(c, apptest.Approval{Scopes: []string{"project:read"}, Projects: []string{"beta"}})
	// beta holds two repositories: doctor warns about it, naming its path.
	for _, repo := range []string{"one", "two"} {
		if err := os.MkdirAll(filepath.Join(env.Roots["beta"], repo, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	vars := envOf(env)
	// A home directory apart from the instance's: one holding the state
	// and the Projects would have its "~" redaction hide them whatever
	// the path redaction does.
	vars["HOME"] = t.TempDir()
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }

	inputs, err := cli.DiagnosticInputs(context.Background(), nil, lookup)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := json.Marshal(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string]struct{ text, path string }{
		"the configuration holds the alpha path":    {string(cfg), env.Roots["alpha"]},
		"the unredacted bundle holds the beta path": {string(inputs), env.Roots["beta"]},
		"the unredacted bundle holds the state dir": {string(inputs), env.StateDir},
	} {
		if !strings.Contains(in.text, in.path) {
			t.Errorf("not so: %s (%s)", name, in.path)
		}
	}

	out := filepath.Join(t.TempDir(), "bundle.json")
	code2, stdout, stderr := run(t, vars, "diagnostic", "--output", out)
	if code2 != 0 {
		t.Fatalf("diagnostic: %d\n%s\n%s", code2, stdout, stderr)
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
	if d, _ := b["disk"].(map[string]any); d["toolsMax"] != float64(env.Config.ToolsMax) || env.Config.ToolsMax == 0 {
		t.Errorf("disk = %v, want toolsMax %d", d, env.Config.ToolsMax)
	}
	// The pending code's grant exists from the consent on.
	if c, _ := b["counts"].(map[string]any); c["grantsActive"] != float64(2) {
		t.Errorf("counts = %v, want two active grants", c)
	}
	if !strings.Contains(fmt.Sprint(b["doctor"]), `"<project beta>" (project "beta") is not a Git repository but holds 2`) {
		t.Errorf("doctor's warning about beta is not in the bundle, redacted:\n%s", raw)
	}

	secrets := map[string][]byte{
		"owner password": []byte(apptest.Password), "access token": []byte(tok.AccessToken), "refresh token": []byte(tok.RefreshToken),
		"redeemed authorization code": []byte(code), "pending authorization code": []byte(pending),
		"client secret": []byte(c.Secret), "state dir": []byte(env.StateDir),
		"alpha path": []byte(env.Roots["alpha"]), "beta path": []byte(env.Roots["beta"]),
		"tools dir": []byte(env.Config.ToolsDir),
	}
	authJSON, err := os.ReadFile(filepath.Join(env.StateDir, "auth.json"))
	if err != nil {
		t.Fatal(err)
	}
	var a struct {
		MasterKey string `json:"masterKey"`
		Password  struct{ Salt, Hash string }
	}
	if err := json.Unmarshal(authJSON, &a); err != nil {
		t.Fatal(err)
	}
	for name, b64 := range map[string]string{"master key": a.MasterKey, "password verifier hash": a.Password.Hash,
		"password verifier salt": a.Password.Salt} {
		bin, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(bin) < 16 {
			t.Fatalf("auth.json %s: %q %v", name, b64, err)
		}
		secrets[name+" (base64)"] = []byte(b64)
		secrets[name+" (raw base64url)"] = []byte(base64.RawURLEncoding.EncodeToString(bin))
		secrets[name+" (hex)"] = []byte(hex.EncodeToString(bin))
		secrets[name+" (raw bytes)"] = bin
	}
	st, err := authstate.Load(env.StateDir, "")
	if err != nil {
		t.Fatal(err)
	}
	secrets["control key (hex)"] = []byte(control.EncodeKey(st.Derive(control.KeyPurpose)))
	for name, s := range secrets {
		if len(s) == 0 {
			t.Fatalf("%s is empty: the test proves nothing", name)
		}
		if bytes.Contains(raw, s) || bytes.Contains(bytes.ToLower(raw), bytes.ToLower(s)) {
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
		"DEVSPACE_LISTEN": "127.0.0.1:0", "DEVSPACE_CONTROL_LISTEN": freeAddr(t), "DEVSPACE_METRICS_LISTEN": metricsListen,
		"DEVSPACE_ADMIN_LISTEN": "127.0.0.1:0"}
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

// TestDiagnosticCountsRunningCommands: the bundle counts the commands that
// run (started through exec_command and not ended), and stops counting
// one once it ended.
func TestDiagnosticCountsRunningCommands(t *testing.T) {
	if !sandbox.Probe().Available() {
		t.Skip("no Landlock: process:execute is not offered")
	}
	scopes := []string{"project:read", "project:write", "process:execute"}
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"},
		Env: map[string]string{"DEVSPACE_OAUTH_SCOPES": strings.Join(scopes, " ")}})
	_, tok := env.Grant(apptest.Approval{Scopes: scopes})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "diagnostic-test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: env.URL + "/mcp", DisableStandaloneSSE: true,
			HTTPClient: &http.Client{Transport: testutil.Bearer(tok.AccessToken, nil)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args,
			Meta: map[string]any{"openai/session": "diagnostic"}})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		sc, _ := res.StructuredContent.(map[string]any)
		return sc
	}
	running := func() any {
		c, _ := diagnosticBundleOf(t, envOf(env))["counts"].(map[string]any)
		return c["processesRunning"]
	}
	if n := running(); n != float64(0) {
		t.Fatalf("processesRunning before any command = %v", n)
	}
	call("project_control", map[string]any{"action": "open", "operationId": "o"})
	if sc := call("exec_command", map[string]any{"operationId": "s", "shell": true, "command": "exec sleep 1000"}); sc["status"] != "running" {
		t.Fatalf("sleep: %v", sc)
	}
	if n := running(); n != float64(1) {
		t.Fatalf("processesRunning with a sleep running = %v", n)
	}
	call("project_control", map[string]any{"action": "interrupt"})
	for deadline := time.Now().Add(10 * time.Second); running() != float64(0); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("processesRunning after the interrupt = %v", running())
		}
	}
}
