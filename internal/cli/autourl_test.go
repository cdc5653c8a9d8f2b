package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/cli"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// cloudflaredStandIn serves /quicktunnel like cloudflared's metrics server:
// no hostname for the first two requests, then host.
func cloudflaredStandIn(t *testing.T, host string) *httptest.Server {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/quicktunnel" {
			http.NotFound(w, r)
			return
		}
		h := ""
		if calls.Add(1) > 2 {
			h = host
		}
		fmt.Fprintf(w, `{"hostname":"%s"}`, h)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// autoEnv initializes state and returns the environment of a server whose
// public URL is learned from the cloudflared stand-in at metricsURL.
func autoEnv(t *testing.T, metricsURL string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	pw := filepath.Join(dir, "owner-password")
	if err := os.WriteFile(pw, []byte("a long enough owner password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(dir, "alpha")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"DEVSPACE_STATE_DIR":           filepath.Join(dir, "state"),
		"DEVSPACE_SCRATCH_DIR":         filepath.Join(dir, "scratch"),
		"DEVSPACE_PROJECTS":            "alpha=" + proj,
		"DEVSPACE_PUBLIC_BASE_URL":     "auto",
		"DEVSPACE_CLOUDFLARED_METRICS": metricsURL,
		"DEVSPACE_LISTEN":              freeAddr(t),
		"DEVSPACE_CONTROL_LISTEN":      freeAddr(t),
		"DEVSPACE_METRICS_LISTEN":      freeAddr(t),
		"DEVSPACE_ADMIN_LISTEN":        freeAddr(t),
		"DEVSPACE_OWNER_PASSWORD_FILE": pw,
	}
	if code, _, stderr := run(t, env, "init"); code != 0 {
		t.Fatalf("init: %d %s", code, stderr)
	}
	return env
}

func TestServeLearnsPublicURLFromCloudflared(t *testing.T) {
	env := autoEnv(t, cloudflaredStandIn(t, "Calm-River-7.trycloudflare.com").URL)
	const public = "https://calm-river-7.trycloudflare.com"

	// The CLI acting on the state directory does not need the public URL.
	if code, out, stderr := run(t, env, "grants", "list"); code != 0 || !strings.Contains(out, "No grants.") {
		t.Fatalf("grants list without a server: %d %q %s", code, out, stderr)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr testutil.SyncBuffer
	go func() {
		lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
		done <- cli.Main(ctx, []string{"serve"}, lookup, cli.IO{Stdout: &testutil.SyncBuffer{}, Stderr: &stderr})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	})

	get := func(host string) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+env["DEVSPACE_LISTEN"]+"/.well-known/oauth-authorization-server", nil)
		req.Host = host
		return http.DefaultClient.Do(req)
	}
	var meta struct {
		Issuer                string `json:"issuer"`
		AuthorizationEndpoint string `json:"authorization_endpoint"`
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := get("calm-river-7.trycloudflare.com")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&meta)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %s", resp.Status)
			}
		}
		if err == nil {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited with %d: %s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not answering: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if meta.Issuer != public || meta.AuthorizationEndpoint != public+"/oauth/authorize" {
		t.Errorf("metadata = %+v, want issuer %s", meta, public)
	}
	// Loopback names stay allowed (healthcheck, local clients); others do not.
	for host, ok := range map[string]bool{"localhost": true, "evil.example.com": false} {
		resp, err := get(host)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if (resp.StatusCode == http.StatusOK) != ok {
			t.Errorf("Host %s: %s", host, resp.Status)
		}
	}
	if !strings.Contains(stderr.String(), public) {
		t.Errorf("the learned URL is not logged:\n%s", stderr.String())
	}
}

func TestServeRefusesABadQuickTunnelAnswer(t *testing.T) {
	env := autoEnv(t, cloudflaredStandIn(t, "localhost").URL)
	code, _, stderr := run(t, env, "serve")
	if code != 1 || !strings.Contains(stderr, "DEVSPACE_PUBLIC_BASE_URL: auto: cloudflared reported an invalid quick-tunnel hostname") {
		t.Fatalf("serve = %d, %s", code, stderr)
	}
}
