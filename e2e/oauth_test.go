//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// ownerPassword is the Owner password every instance is initialized with
// (DEVSPACE_OWNER_PASSWORD_FILE).
const ownerPassword = "e2e owner password, long enough"

// allScopes is what the tests ask for and approve unless they say otherwise.
var allScopes = []string{"project:read", "project:write", "process:execute"}

// endpoint is a DevSpace public listener as seen from the host.
type endpoint struct {
	// public is the origin the server believes it has (its issuer); the
	// requests carry it as Origin, as a browser on that origin would.
	public string
	// base is where requests go. For a container whose public URL is
	// http://127.0.0.1:7676, base is that URL too and dial sends it to the
	// published port, so the Host header is the one the server expects.
	base string
	// client sends every request (no redirects followed).
	client *http.Client
}

// newEndpoint returns an endpoint for base whose TCP connections to
// dialAs go to dialTo instead (empty: dial as is).
func newEndpoint(public, base, dialAs, dialTo string) *endpoint {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	if dialAs != "" {
		d := &net.Dialer{Timeout: 5 * time.Second}
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr == dialAs {
				addr = dialTo
			}
			return d.DialContext(ctx, network, addr)
		}
	}
	return &endpoint{public: public, base: base, client: &http.Client{Transport: tr, Timeout: 60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// oauthClient is a dynamically registered client.
type oauthClient struct {
	ID, Secret, RedirectURI string
}

// tokens is a token endpoint answer.
type tokens struct {
	Status       int    `json:"-"`
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
	Error        string `json:"error"`
}

func (e *endpoint) do(t testing.TB, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (e *endpoint) get(t testing.TB, path string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.base+path, nil)
	return e.do(t, req)
}

func (e *endpoint) postForm(t testing.TB, path string, form url.Values, basicAuth *oauthClient) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basicAuth != nil {
		req.SetBasicAuth(url.QueryEscape(basicAuth.ID), url.QueryEscape(basicAuth.Secret))
	} else {
		req.Header.Set("Origin", e.public)
	}
	return e.do(t, req)
}

// register performs RFC 7591 registration for a client that authenticates
// with client_secret_basic.
func (e *endpoint) register(t testing.TB, name string) oauthClient {
	t.Helper()
	redirect := "http://127.0.0.1:9/callback"
	body, _ := json.Marshal(map[string]any{"client_name": name, "redirect_uris": []string{redirect},
		"token_endpoint_auth_method": "client_secret_basic", "grant_types": []string{"authorization_code", "refresh_token"}})
	req, _ := http.NewRequest(http.MethodPost, e.base+"/oauth/register", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	resp, data := e.do(t, req)
	var out struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if resp.StatusCode != http.StatusCreated || json.Unmarshal([]byte(data), &out) != nil {
		t.Fatalf("register: %s %s", resp.Status, data)
	}
	return oauthClient{ID: out.ClientID, Secret: out.ClientSecret, RedirectURI: redirect}
}

var (
	requestRE   = regexp.MustCompile(`name="request" value="([^"]+)"`)
	selectionRE = regexp.MustCompile(`name="selection" value="([^"]+)"`)
	projectRE   = regexp.MustCompile(`name="project" value="([^"]+)"[^>]*> ([^<\n]+)`)
)

// grant runs the authorization code flow with PKCE, posting both consent
// steps as the Owner would (password, then Projects and scopes), and
// exchanges the code.
func (e *endpoint) grant(t testing.TB, c oauthClient, projects, scopes []string) tokens {
	t.Helper()
	verifier := randomString(48)
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {c.ID}, "redirect_uri": {c.RedirectURI},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
		"state": {"e2e-state"}, "scope": {strings.Join(scopes, " ")}, "resource": {e.public + "/mcp"}}
	resp, body := e.get(t, "/oauth/authorize?"+q.Encode())
	m := requestRE.FindStringSubmatch(body)
	if resp.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("consent step 1: %s\n%s", resp.Status, body)
	}
	resp, body = e.postForm(t, "/oauth/authorize", url.Values{"request": {html.UnescapeString(m[1])}, "password": {ownerPassword}}, nil)
	m = selectionRE.FindStringSubmatch(body)
	if resp.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("consent step 2: %s\n%s", resp.Status, body)
	}
	form := url.Values{"selection": {html.UnescapeString(m[1])}, "decision": {"approve"}, "scope": scopes}
	refs := map[string]string{}
	for _, pm := range projectRE.FindAllStringSubmatch(body, -1) {
		refs[strings.TrimSpace(html.UnescapeString(pm[2]))] = html.UnescapeString(pm[1])
	}
	for _, label := range projects {
		ref, ok := refs[label]
		if !ok {
			t.Fatalf("consent page lists no Project %q (has %v)", label, refs)
		}
		form.Add("project", ref)
	}
	resp, body = e.postForm(t, "/oauth/authorize", form, nil)
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || loc == nil || loc.Query().Get("code") == "" {
		t.Fatalf("consent approval: %s %s\n%s", resp.Status, resp.Header.Get("Location"), body)
	}
	if iss := loc.Query().Get("iss"); iss != e.public {
		t.Errorf("redirect iss = %q, want %q", iss, e.public)
	}
	tok := e.token(t, c, url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
		"redirect_uri": {c.RedirectURI}, "code_verifier": {verifier}, "resource": {e.public + "/mcp"}})
	if tok.Status != http.StatusOK || tok.AccessToken == "" {
		t.Fatalf("code exchange: %d %s", tok.Status, tok.Error)
	}
	return tok
}

// token posts to the token endpoint as c.
func (e *endpoint) token(t testing.TB, c oauthClient, form url.Values) tokens {
	t.Helper()
	resp, body := e.postForm(t, "/oauth/token", form, &c)
	var tok tokens
	_ = json.Unmarshal([]byte(body), &tok)
	tok.Status = resp.StatusCode
	return tok
}

// refresh uses a refresh token.
func (e *endpoint) refresh(t testing.TB, c oauthClient, refreshToken string) tokens {
	t.Helper()
	return e.token(t, c, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}})
}

// revoke posts to the revocation endpoint as c.
func (e *endpoint) revoke(t testing.TB, c oauthClient, token string) {
	t.Helper()
	resp, body := e.postForm(t, "/oauth/revoke", url.Values{"token": {token}}, &c)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %s %s", resp.Status, body)
	}
}

func randomString(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)[:n]
}
