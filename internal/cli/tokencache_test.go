package cli_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/apptest"
)

const mcpInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// mcpStatus sends an MCP initialize request with token to the instance
// and returns the HTTP status.
func mcpStatus(t *testing.T, env *apptest.Env, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, env.URL+"/mcp", strings.NewReader(mcpInit))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// cacheHits reads devspace_oauth_verifications_total{source="cache"}.
func cacheHits(t *testing.T, env *apptest.Env) float64 {
	t.Helper()
	w := httptest.NewRecorder()
	env.App.MetricsHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	sc := bufio.NewScanner(w.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), `devspace_oauth_verifications_total{source="cache"} `); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	return 0
}

// TestRevokedTokenRefusedOnNextRequest: a token answered from the
// verification cache is refused on the very next /mcp request after a
// revocation through the public endpoints or the owner CLI over the
// control API.
func TestRevokedTokenRefusedOnNextRequest(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	c := env.Register("Cache Client", "http://127.0.0.1:9/cb", "client_secret_basic")
	vars := envOf(env)
	for _, tc := range []struct {
		name   string
		revoke func(tok apptest.TokenResponse, grantID string)
	}{
		{"revocation endpoint", func(tok apptest.TokenResponse, _ string) {
			if st := env.Revoke(c, tok.AccessToken); st != http.StatusOK {
				t.Fatalf("revoke: %d", st)
			}
		}},
		{"refresh rotation", func(tok apptest.TokenResponse, _ string) {
			if tr := env.Token(c, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}}); tr.Status != http.StatusOK {
				t.Fatalf("refresh: %+v", tr)
			}
		}},
		{"devspace grants revoke", func(_ apptest.TokenResponse, grantID string) {
			if code, out, stderr := run(t, vars, "grants", "revoke", grantID); code != 0 || !strings.Contains(out, "revoked") {
				t.Fatalf("grants revoke: %d %s %s", code, out, stderr)
			}
		}},
		{"devspace grants revoke-all", func(apptest.TokenResponse, string) {
			if code, out, stderr := run(t, vars, "grants", "revoke-all"); code != 0 {
				t.Fatalf("grants revoke-all: %d %s %s", code, out, stderr)
			}
		}},
		{"devspace owner rotate-password", func(apptest.TokenResponse, string) {
			if code, out, stderr := run(t, vars, "owner", "rotate-password"); code != 0 {
				t.Fatalf("rotate-password: %d %s %s", code, out, stderr)
			}
		}},
	} {
		tok := env.GrantFor(c, apptest.Approval{})
		p, err := env.App.OAuth().Verify(context.Background(), tok.AccessToken)
		if err != nil {
			t.Fatalf("%s: verify: %v", tc.name, err)
		}
		if st := mcpStatus(t, env, tok.AccessToken); st != http.StatusOK {
			t.Fatalf("%s: first request: %d", tc.name, st)
		}
		before := cacheHits(t, env)
		if st := mcpStatus(t, env, tok.AccessToken); st != http.StatusOK {
			t.Fatalf("%s: second request: %d", tc.name, st)
		}
		if cacheHits(t, env) <= before {
			t.Fatalf("%s: the second request was not answered from the cache", tc.name)
		}
		tc.revoke(tok, p.GrantID)
		if st := mcpStatus(t, env, tok.AccessToken); st != http.StatusUnauthorized {
			t.Errorf("%s: next request: %d, want 401", tc.name, st)
		}
	}
}

// TestCLIRefusesStateOfAServerItCannotReach: with a server running on the
// state but the CLI pointed at the wrong control address, the CLI does not
// open the state behind the server's back (its revocation would not reach
// the server's verification cache): it says what to set, and writes
// nothing.
func TestCLIRefusesStateOfAServerItCannotReach(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	_, tok := env.Grant(apptest.Approval{})
	vars := envOf(env)
	vars["DEVSPACE_CONTROL_LISTEN"] = "127.0.0.1:1" // nothing listens
	code, out, stderr := run(t, vars, "grants", "revoke-all")
	if code == 0 || !strings.Contains(stderr, "is using the state") || !strings.Contains(stderr, "DEVSPACE_CONTROL_LISTEN") {
		t.Fatalf("revoke-all against a running server's state: %d %s %s", code, out, stderr)
	}
	if st := mcpStatus(t, env, tok.AccessToken); st != http.StatusOK {
		t.Fatalf("token after the refused command: %d", st)
	}
	if code, out, stderr = run(t, vars, "init", "--force"); code == 0 || !strings.Contains(stderr, "stop it before") {
		t.Fatalf("init --force against a running server's state: %d %s %s", code, out, stderr)
	}
	if st := mcpStatus(t, env, tok.AccessToken); st != http.StatusOK {
		t.Fatalf("token after the refused init: %d", st)
	}
	// doctor only reads (OpenReadOnly) and works beside the server.
	if code, out, stderr = run(t, vars, "doctor"); strings.Contains(stderr+out, "is using the state") {
		t.Fatalf("doctor beside a server: %d %s %s", code, out, stderr)
	}
}
