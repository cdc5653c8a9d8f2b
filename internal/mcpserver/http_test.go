package mcpserver_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/testutil"
)

func post(t *testing.T, url string, hdr map[string]string, body io.Reader) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp, string(b)
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// TestUnauthenticated checks the 401 challenges ChatGPT depends on,
// including GET (stale reconnect) and wrong-audience tokens.
func TestUnauthenticated(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	_, tok := env.Grant(apptest.Approval{})
	for name, tc := range map[string]struct {
		method, auth, wantErr string
	}{
		"no token POST":     {"POST", "", ""},
		"no token GET":      {"GET", "", ""},
		"garbage token":     {"POST", "Bearer dsa_nope", `error="invalid_token"`},
		"basic auth":        {"POST", "Basic Zm9vOmJhcg==", ""},
		"refresh as access": {"POST", "Bearer " + tok.RefreshToken, `error="invalid_token"`},
	} {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, env.URL+"/mcp", strings.NewReader(initBody))
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			www := resp.Header.Get("WWW-Authenticate")
			if resp.StatusCode != 401 || !strings.Contains(www, `resource_metadata="`+env.URL+`/.well-known/oauth-protected-resource/mcp"`) ||
				!strings.Contains(www, `scope="`) || !strings.Contains(www, tc.wantErr) {
				t.Fatalf("status %d, WWW-Authenticate %q", resp.StatusCode, www)
			}
		})
	}
	t.Run("wrong audience", func(t *testing.T) {
		// The same state served under another public URL: tokens issued for
		// the old resource must not work.
		other := apptest.Start(t, apptest.Options{})
		_, tok2 := other.Grant(apptest.Approval{})
		other.StopServing()
		other.SetEnv("DEVSPACE_PUBLIC_BASE_URL", "https://devspace.example.com")
		other.SetEnv("DEVSPACE_ALLOWED_HOSTS", "devspace.example.com,127.0.0.1")
		other.Restart()
		resp, _ := post(t, other.URL+"/mcp", map[string]string{"Authorization": "Bearer " + tok2.AccessToken}, strings.NewReader(initBody))
		if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "another resource") {
			t.Fatalf("status %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	})
}

// TestHostileHTTP sends malformed and abusive requests: every one must get
// a bounded, correct answer and the server must keep serving.
func TestHostileHTTP(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Env: map[string]string{"DEVSPACE_MAX_REQUEST_BODY": "1MiB"}})
	_, tok := env.Grant(apptest.Approval{})
	auth := map[string]string{"Authorization": "Bearer " + tok.AccessToken}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{"Authorization": "Bearer " + tok.AccessToken}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	deep := strings.Repeat(`{"a":`, 100000) + "1" + strings.Repeat("}", 100000)
	for name, tc := range map[string]struct {
		hdr    map[string]string
		body   string
		size   int
		status int
		want   string
	}{
		"bad host":          {hdr: with(map[string]string{"Host": "evil.example"}), body: initBody, status: 403},
		"bad origin":        {hdr: with(map[string]string{"Origin": "https://evil.example"}), body: initBody, status: 403},
		"allowed origin":    {hdr: with(map[string]string{"Origin": "https://chatgpt.com"}), body: initBody, status: 200},
		"oversized body":    {hdr: auth, size: 2 << 20, status: 413},
		"malformed json":    {hdr: auth, body: `{"jsonrpc":"2.0",`, status: 400},
		"deep nesting":      {hdr: auth, body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":` + deep + `}`, status: 400},
		"batch array":       {hdr: auth, body: `[` + initBody + `,` + initBody + `]`, status: 400},
		"not json-rpc":      {hdr: auth, body: `{"hello":"world"}`, status: 400},
		"unknown version":   {hdr: with(map[string]string{"Mcp-Protocol-Version": "2099-01-01"}), body: initBody, status: 400},
		"unknown method":    {hdr: with(map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "no/such"}), body: `{"jsonrpc":"2.0","id":1,"method":"no/such","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`, status: 0, want: "-32601"},
		"stateless no meta": {hdr: with(map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}), body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, status: 400},
	} {
		t.Run(name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(tc.body)
			if tc.size > 0 {
				body = strings.NewReader(strings.Repeat(" ", tc.size))
			}
			start := time.Now()
			if tc.size > 0 {
				if status := testutil.PostOversized(t, env.URL+"/mcp", tc.hdr, tc.size); status != tc.status {
					t.Fatalf("status %d, want %d", status, tc.status)
				}
				return
			}
			resp, text := post(t, env.URL+"/mcp", tc.hdr, body)
			if tc.status != 0 && resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, tc.status, text)
			}
			if tc.want != "" && !strings.Contains(text, tc.want) {
				t.Fatalf("response lacks %s: %.300s", tc.want, text)
			}
			if time.Since(start) > 5*time.Second {
				t.Fatalf("took %v", time.Since(start))
			}
		})
	}
	// Still serving.
	if resp, _ := post(t, env.URL+"/mcp", auth, strings.NewReader(initBody)); resp.StatusCode != 200 {
		t.Fatalf("server unhealthy after hostile requests: %d", resp.StatusCode)
	}
}
