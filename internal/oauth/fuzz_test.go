package oauth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/displayname"
)

// The OAuth fuzz targets drive the real public handler of an in-process
// instance (host checks, body limits, routing, the OAuth server and its
// SQLite store) with httptest: no sockets, so each input costs
// microseconds. Inputs may carry the placeholders {client_id},
// {client_secret} and {redirect_uri}, replaced by a client registered
// before fuzzing, so that mutations reach past client lookup.

type fuzzEnv struct {
	env    *apptest.Env
	h      http.Handler
	host   string
	client apptest.Client
	// victim holds a grant whose consumed code ({victim_code}) and client
	// ({victim_id}, public) the fuzzer may present; nothing it sends
	// without the verifier may end that grant.
	victim       apptest.Client
	victimTokens apptest.TokenResponse
	victimCode   string
}

func newFuzzEnv(f *testing.F) *fuzzEnv {
	// The loopback peer is a trusted proxy, so per-source limits apply to
	// the address in Cf-Connecting-Ip (see do).
	env := apptest.Start(f, apptest.Options{Projects: []string{"alpha"}, Env: map[string]string{"DEVSPACE_LOG_LEVEL": "error",
		"DEVSPACE_TRUSTED_PROXIES": "127.0.0.1"}})
	c := env.Register("Fuzz Client", "http://127.0.0.1:9/callback", "client_secret_basic")
	victim := env.Register("Victim", "http://127.0.0.1:9/victim", "none")
	verifier, challenge := apptest.PKCE()
	res := env.Authorize(env.AuthURL(victim, challenge, "s", "", nil), apptest.Approval{})
	if res.Location == nil {
		f.Fatalf("victim consent: %d", res.Status)
	}
	code := res.Location.Query().Get("code")
	tok := env.Token(victim, url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"redirect_uri": {victim.RedirectURI}, "code_verifier": {verifier}})
	if tok.Status != http.StatusOK {
		f.Fatalf("victim exchange: %+v", tok)
	}
	u, _ := url.Parse(env.URL)
	return &fuzzEnv{env: env, h: env.App.PublicHandler(), host: u.Host, client: c,
		victim: victim, victimTokens: tok, victimCode: code}
}

func (e *fuzzEnv) expand(b []byte) []byte {
	r := strings.NewReplacer("{client_id}", url.QueryEscape(e.client.ID), "{client_secret}", url.QueryEscape(e.client.Secret),
		"{redirect_uri}", url.QueryEscape(e.client.RedirectURI), "{victim_id}", url.QueryEscape(e.victim.ID),
		"{victim_code}", url.QueryEscape(e.victimCode), "{victim_redirect_uri}", url.QueryEscape(e.victim.RedirectURI))
	return []byte(r.Replace(string(b)))
}

// victimAlive fails t when the victim's grant was ended.
func (e *fuzzEnv) victimAlive(t *testing.T, input []byte) {
	t.Helper()
	if _, err := e.env.App.OAuth().Verify(context.Background(), e.victimTokens.AccessToken); err != nil {
		t.Fatalf("input %q ended another client's grant: %v", input, err)
	}
}

func (e *fuzzEnv) do(req *http.Request) *httptest.ResponseRecorder {
	req.Host = e.host
	req.RemoteAddr = "127.0.0.1:40000"
	if req.Header.Get("Cf-Connecting-Ip") == "" {
		req.Header.Set("Cf-Connecting-Ip", "203.0.113.7")
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, req)
	return w
}

// oauthError decodes an RFC 6749 / RFC 7591 JSON error body.
func oauthError(t *testing.T, w *httptest.ResponseRecorder, allowed ...string) string {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("status %d with Content-Type %q: %s", w.Code, ct, w.Body.Bytes())
	}
	if w.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("status %d without Cache-Control: no-store", w.Code)
	}
	var body struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("status %d with a body that is not JSON: %q", w.Code, w.Body.Bytes())
	}
	if !slices.Contains(allowed, body.Error) {
		t.Fatalf("status %d error %q, want one of %v", w.Code, body.Error, allowed)
	}
	return body.Error
}

// FuzzRegister posts arbitrary bodies to POST /oauth/register: never a
// server error, every refusal an RFC 7591 error, and every client it
// registers has only redirect URIs the policy allows (https, or http on a
// loopback host; the host on the allowlist).
func FuzzRegister(f *testing.F) {
	for _, s := range []string{
		`{"client_name":"ChatGPT","redirect_uris":["https://chatgpt.com/connector_platform_oauth_redirect"],"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"response_types":["code"]}`,
		`{"redirect_uris":["http://127.0.0.1:9/cb"],"token_endpoint_auth_method":"client_secret_basic"}`,
		`{"redirect_uris":["http://evil.example/cb"]}`,
		`{"redirect_uris":["https://chatgpt.com.evil.example/cb"]}`,
		`{"redirect_uris":["javascript:alert(1)"]}`,
		`{"redirect_uris":["https://chatgpt.com/cb#frag"]}`,
		`{"redirect_uris":[]}`, `{"redirect_uris":null}`, `{}`, `[]`, `null`, ``, `{"redirect_uris":"https://chatgpt.com/cb"}`,
		`{"redirect_uris":["https://chatgpt.com/cb"],"grant_types":["password"]}`,
		`{"redirect_uris":["https://chatgpt.com/cb"],"scope":"project:read admin"}`,
		`{"redirect_uris":["https://[::1]/cb"],"client_name":"\u0000\ud800"}`,
		`{"redirect_uris":["https://chatgpt.com/cb"]} trailing`,
		`{"redirect_uris":["https://chatgpt.com/cb"],"client_name":"ChatGPT\u202e\u200b\u2066moc.liam\u2069\ufeff"}`,
		`{"redirect_uris":["https://chatgpt.com/cb"],"client_name":"` + strings.Repeat("\u0301", 300) + `"}`,
	} {
		f.Add([]byte(s))
	}
	e := newFuzzEnv(f)
	allowedHosts := []string{"chatgpt.com", "localhost", "127.0.0.1", "::1"}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/oauth/register", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		// A few sources, so the per-source limit is reached and tested.
		req.Header.Set("Cf-Connecting-Ip", "198.51.100."+strconv.Itoa(len(body)%8))
		w := e.do(req)
		switch w.Code {
		case http.StatusCreated:
			var out struct {
				ClientID     string   `json:"client_id"`
				ClientSecret string   `json:"client_secret"`
				ClientName   string   `json:"client_name"`
				RedirectURIs []string `json:"redirect_uris"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || out.ClientID == "" || out.ClientSecret == "" || len(out.RedirectURIs) == 0 {
				t.Fatalf("201 with body %q (%v)", w.Body.Bytes(), err)
			}
			if displayname.Clean(out.ClientName) != out.ClientName || utf8.RuneCountInString(out.ClientName) > displayname.MaxRunes {
				t.Fatalf("registered an uncleaned client_name %q from %q", out.ClientName, body)
			}
			for _, r := range out.ClientName {
				if unicode.Is(unicode.Cf, r) || unicode.IsControl(r) {
					t.Fatalf("registered client_name %q keeps %U", out.ClientName, r)
				}
			}
			for _, raw := range out.RedirectURIs {
				u, err := url.Parse(raw)
				if err != nil || u.Fragment != "" || u.User != nil || !slices.Contains(allowedHosts, strings.ToLower(u.Hostname())) ||
					(u.Scheme != "https" && !(u.Scheme == "http" && strings.ToLower(u.Hostname()) != "chatgpt.com")) {
					t.Fatalf("registered a client with redirect URI %q from %q", raw, body)
				}
			}
		case http.StatusBadRequest:
			oauthError(t, w, "invalid_client_metadata", "invalid_redirect_uri")
		case http.StatusTooManyRequests:
			// The per-source limit (only behind a trusted proxy); the bound
			// on unused clients never refuses, it evicts.
			oauthError(t, w, "temporarily_unavailable")
			if w.Header().Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
		case http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("POST /oauth/register %q: status %d %s", body, w.Code, w.Body.Bytes())
		}
	})
}

// FuzzToken posts arbitrary form bodies to POST /oauth/token with no
// client authentication, the registered client's (auth&1), or a mangled
// Basic header (auth&2): never a server error, every refusal an RFC 6749
// error with no-store, and never a token (the fuzzer cannot know a code or
// a refresh token).
func FuzzToken(f *testing.F) {
	for _, s := range []struct {
		body string
		auth uint8
	}{
		{"grant_type=authorization_code&code=abc&redirect_uri={redirect_uri}&code_verifier=" + strings.Repeat("v", 43), 1},
		{"grant_type=refresh_token&refresh_token=drt_abc", 1},
		{"grant_type=refresh_token&refresh_token=x&scope=project:write", 1},
		{"grant_type=client_credentials", 1},
		{"grant_type=authorization_code&grant_type=refresh_token", 1},
		{"grant_type=refresh_token&refresh_token=x&client_id={client_id}&client_secret={client_secret}", 0},
		{"grant_type=refresh_token&refresh_token=x&client_id={client_id}&client_secret=wrong", 0},
		{"grant_type=refresh_token&refresh_token=x&resource=https://evil.example/mcp", 1},
		{"%zz=1&grant_type=refresh_token", 1},
		{"", 2},
		{strings.Repeat("a=b&", 5000), 1},
		// Another client's consumed code: refused, the grant survives.
		{"grant_type=authorization_code&code={victim_code}&redirect_uri={victim_redirect_uri}&code_verifier=" + strings.Repeat("v", 43), 1},
		// Its own public client, without the verifier: refused, survives.
		{"grant_type=authorization_code&client_id={victim_id}&code={victim_code}&redirect_uri={victim_redirect_uri}&code_verifier=" + strings.Repeat("w", 50), 0},
		{"grant_type=authorization_code&client_id={victim_id}&code={victim_code}&code_verifier=short", 0},
	} {
		f.Add([]byte(s.body), s.auth)
	}
	e := newFuzzEnv(f)
	f.Fuzz(func(t *testing.T, body []byte, auth uint8) {
		req := httptest.NewRequest(http.MethodPost, "/oauth/token", bytes.NewReader(e.expand(body)))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		switch {
		case auth&2 != 0:
			req.Header.Set("Authorization", "Basic "+string(body[:min(len(body), 64)]))
		case auth&1 != 0:
			req.SetBasicAuth(url.QueryEscape(e.client.ID), url.QueryEscape(e.client.Secret))
		}
		w := e.do(req)
		switch w.Code {
		case http.StatusBadRequest, http.StatusUnauthorized:
			oauthError(t, w, "invalid_request", "invalid_client", "invalid_grant", "unauthorized_client",
				"unsupported_grant_type", "invalid_scope", "invalid_target")
		case http.StatusRequestEntityTooLarge, http.StatusTooManyRequests:
		default:
			t.Fatalf("POST /oauth/token %q (auth %d): status %d %s", body, auth, w.Code, w.Body.Bytes())
		}
		e.victimAlive(t, body)
	})
}

// FuzzAuthorize sends arbitrary query strings to GET /oauth/authorize and
// arbitrary forms to POST /oauth/authorize (consent steps): never a server
// error, pages carry their CSP, and a redirect only ever goes to the
// registered redirect URI and never carries a code (no password is
// known to the fuzzer). Client IDs that are URLs (client ID metadata
// documents) are skipped: they would be fetched from the network.
func FuzzAuthorize(f *testing.F) {
	challenge := strings.Repeat("c", 43)
	for _, s := range []struct {
		query string
		post  bool
	}{
		{"response_type=code&client_id={client_id}&redirect_uri={redirect_uri}&code_challenge=" + challenge + "&code_challenge_method=S256&state=xyz&scope=project:read", false},
		{"response_type=code&client_id={client_id}&redirect_uri={redirect_uri}&code_challenge=" + challenge + "&code_challenge_method=plain", false},
		{"response_type=token&client_id={client_id}&redirect_uri={redirect_uri}", false},
		{"response_type=code&client_id={client_id}&redirect_uri=https://evil.example/cb", false},
		{"response_type=code&client_id={client_id}&client_id=other", false},
		{"response_type=code&client_id={client_id}&resource=https://evil.example/mcp&code_challenge=" + challenge + "&code_challenge_method=S256", false},
		{"client_id=unknown", false},
		{"", false},
		{"request=req_abc&password=wrong", true},
		{"selection=sel_abc&decision=approve&project=prj_x&scope=project:read", true},
		{"request=req_abc&selection=sel_abc", true},
		{"%gg", true},
	} {
		f.Add([]byte(s.query), s.post)
	}
	e := newFuzzEnv(f)
	f.Fuzz(func(t *testing.T, raw []byte, post bool) {
		q := e.expand(raw)
		vals, _ := url.ParseQuery(string(q))
		for _, id := range vals["client_id"] {
			if len(id) >= 4 && strings.EqualFold(id[:4], "http") {
				return
			}
		}
		var req *http.Request
		if post {
			req = httptest.NewRequest(http.MethodPost, "/oauth/authorize", bytes.NewReader(q))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", e.env.URL)
		} else {
			req = httptest.NewRequest(http.MethodGet, "/oauth/authorize", nil)
			req.URL.RawQuery = string(q)
		}
		w := e.do(req)
		switch w.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusForbidden, http.StatusTooManyRequests:
			if ct := w.Header().Get("Content-Type"); strings.HasPrefix(ct, "text/html") &&
				!strings.Contains(w.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'") {
				t.Fatalf("page without its CSP: %v", w.Header())
			}
		case http.StatusFound, http.StatusSeeOther:
			loc, err := url.Parse(w.Header().Get("Location"))
			if err != nil {
				t.Fatalf("redirect to an unparsable Location %q", w.Header().Get("Location"))
			}
			target := *loc
			target.RawQuery = ""
			if target.String() != e.client.RedirectURI {
				t.Fatalf("redirect to %q, not the registered redirect URI (input %q)", loc, raw)
			}
			if loc.Query().Has("code") {
				t.Fatalf("authorization code issued without the password: %q", raw)
			}
		case http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("%s /oauth/authorize %q: status %d %s", req.Method, raw, w.Code, w.Body.Bytes())
		}
	})
}
