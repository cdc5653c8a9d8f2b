package oauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/oauth2"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/oauth"
)

func getJSON(t *testing.T, u string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// TestFullFlowXOAuth2 walks discovery → DCR → consent → code exchange →
// refresh → revoke with golang.org/x/oauth2 as the client.
func TestFullFlowXOAuth2(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	ctx := context.Background()

	// Discovery: both PRM paths, both AS metadata paths, no OIDC.
	for _, p := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		code, prm := getJSON(t, env.URL+p)
		if code != 200 || prm["resource"] != env.URL+"/mcp" {
			t.Fatalf("%s: %d %v", p, code, prm)
		}
		if diff := cmp.Diff([]any{env.URL}, prm["authorization_servers"]); diff != "" {
			t.Errorf("%s authorization_servers (-want +got):\n%s", p, diff)
		}
	}
	var asm map[string]any
	for _, p := range []string{"/.well-known/oauth-authorization-server", "/.well-known/oauth-authorization-server/mcp"} {
		code, m := getJSON(t, env.URL+p)
		if code != 200 || m["issuer"] != env.URL {
			t.Fatalf("%s: %d %v", p, code, m)
		}
		asm = m
	}
	if diff := cmp.Diff([]any{"S256"}, asm["code_challenge_methods_supported"]); diff != "" {
		t.Errorf("PKCE methods (-want +got):\n%s", diff)
	}
	if asm["authorization_response_iss_parameter_supported"] != true || asm["scopes_supported"] == nil {
		t.Errorf("metadata missing iss support or scopes: %v", asm)
	}
	for _, s := range asm["scopes_supported"].([]any) {
		if s == "openid" || s == "email" || s == "profile" {
			t.Errorf("OIDC scope advertised: %v", s)
		}
	}
	if resp, err := http.Head(env.URL + "/.well-known/oauth-authorization-server"); err != nil || resp.StatusCode != 200 {
		t.Errorf("HEAD AS metadata: %v %v", resp, err)
	}
	if code, _ := getJSON(t, env.URL+"/.well-known/openid-configuration"); code != 404 {
		t.Errorf("openid-configuration = %d, want 404", code)
	}

	// DCR always returns a secret, also for "none".
	pub := env.Register("Public", "http://127.0.0.1:9/cb", "none")
	if pub.Secret == "" {
		t.Fatal("registration without client_secret for auth method none")
	}
	c := env.Register("x/oauth2 client", "http://127.0.0.1:9/callback", "client_secret_basic")

	conf := &oauth2.Config{
		ClientID: c.ID, ClientSecret: c.Secret, RedirectURL: c.RedirectURI,
		Scopes:   []string{"project:read", "project:write"},
		Endpoint: oauth2.Endpoint{AuthURL: asm["authorization_endpoint"].(string), TokenURL: asm["token_endpoint"].(string), AuthStyle: oauth2.AuthStyleInHeader},
	}
	verifier := oauth2.GenerateVerifier()
	authURL := conf.AuthCodeURL("state-123", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", env.URL+"/mcp"))
	res := env.Authorize(authURL, apptest.Approval{Projects: []string{"beta"}, Scopes: []string{"project:read", "project:write"}})
	if res.Status != http.StatusFound || res.Location == nil {
		t.Fatalf("consent: %d %s", res.Status, res.Body)
	}
	q := res.Location.Query()
	if q.Get("state") != "state-123" || q.Get("iss") != env.URL || q.Get("code") == "" {
		t.Fatalf("redirect query = %v", q)
	}
	if !strings.HasPrefix(res.Location.String(), c.RedirectURI+"?") {
		t.Fatalf("redirected to %s", res.Location)
	}
	tok, err := conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", env.URL+"/mcp"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := env.App.OAuth().Verify(ctx, tok.AccessToken)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"project:read", "project:write"}, p.Scopes); diff != "" {
		t.Errorf("scopes (-want +got):\n%s", diff)
	}
	if len(p.ProjectIDs) != 1 || p.ClientID != c.ID {
		t.Errorf("principal = %+v", p)
	}

	// Refresh through x/oauth2 (expired token forces it).
	tok.Expiry = time.Now().Add(-time.Minute)
	tok2, err := conf.TokenSource(ctx, tok).Token()
	if err != nil {
		t.Fatal(err)
	}
	if tok2.AccessToken == tok.AccessToken || tok2.RefreshToken == tok.RefreshToken {
		t.Fatal("refresh did not rotate both tokens")
	}
	if _, err := env.App.OAuth().Verify(ctx, tok.AccessToken); !errors.Is(err, oauth.ErrTokenRevoked) {
		t.Errorf("old access token after rotation: %v", err)
	}
	if _, err := env.App.OAuth().Verify(ctx, tok2.AccessToken); err != nil {
		t.Fatalf("new access token: %v", err)
	}

	// Revoking the access token ends it alone; revoking the refresh token
	// ends the grant.
	if st := env.Revoke(c, tok2.AccessToken); st != 200 {
		t.Fatalf("revoke access: %d", st)
	}
	if _, err := env.App.OAuth().Verify(ctx, tok2.AccessToken); !errors.Is(err, oauth.ErrTokenRevoked) {
		t.Errorf("revoked access token verifies: %v", err)
	}
	tr := env.Token(c, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok2.RefreshToken}})
	if tr.Status != 200 {
		t.Fatalf("refresh after access revocation: %+v", tr)
	}
	if st := env.Revoke(c, tr.RefreshToken); st != 200 {
		t.Fatalf("revoke refresh: %d", st)
	}
	if _, err := env.App.OAuth().Verify(ctx, tr.AccessToken); !errors.Is(err, oauth.ErrTokenRevoked) {
		t.Errorf("grant still alive after refresh-token revocation: %v", err)
	}
}

// TestClientIDMetadataDocument authorizes a client whose client_id is an
// https URL served by a loopback TLS server.
func TestClientIDMetadataDocument(t *testing.T) {
	var clientID string
	var fetches atomic.Int32
	doc := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"client_id": clientID, "client_name": "Metadata Client",
			"redirect_uris": []string{"http://127.0.0.1:9/cimd-cb"}, "token_endpoint_auth_method": "none"})
	}))
	defer doc.Close()
	clientID = doc.URL + "/client.json"
	env := apptest.Start(t, apptest.Options{AllowLoopbackMetadata: true, MetadataHTTPClient: doc.Client()})
	c := apptest.Client{ID: clientID, RedirectURI: "http://127.0.0.1:9/cimd-cb", AuthMethod: "none"}
	verifier, challenge := apptest.PKCE()
	res := env.Authorize(env.AuthURL(c, challenge, "s", "", nil), apptest.Approval{})
	if res.Location == nil || res.Location.Query().Get("code") == "" {
		t.Fatalf("consent: %d %s", res.Status, res.Body)
	}
	if !strings.Contains(res.Body, "") || fetches.Load() == 0 {
		t.Fatal("metadata document was never fetched")
	}
	tr := env.Token(c, url.Values{"grant_type": {"authorization_code"}, "code": {res.Location.Query().Get("code")},
		"redirect_uri": {c.RedirectURI}, "code_verifier": {verifier}})
	if tr.Status != 200 {
		t.Fatalf("exchange: %+v", tr)
	}
	p, err := env.App.OAuth().Verify(context.Background(), tr.AccessToken)
	if err != nil || p.ClientID != clientID {
		t.Fatalf("verify: %+v %v", p, err)
	}
	// A redirect URI not in the document is refused without redirecting.
	bad := c
	bad.RedirectURI = "http://127.0.0.1:9/other"
	res = env.Authorize(env.AuthURL(bad, challenge, "s", "", nil), apptest.Approval{})
	if res.Status != 400 || res.Location != nil {
		t.Fatalf("foreign redirect for CIMD client: %d %v", res.Status, res.Location)
	}
}

// authCode runs consent and returns a fresh code, the verifier and client.
func authCode(t *testing.T, env *apptest.Env, c apptest.Client, a apptest.Approval) (code, verifier string) {
	t.Helper()
	verifier, challenge := apptest.PKCE()
	res := env.Authorize(env.AuthURL(c, challenge, "st", strings.Join(a.Scopes, " "), nil), a)
	if res.Location == nil || res.Location.Query().Get("code") == "" {
		t.Fatalf("consent: %d %s", res.Status, res.Body)
	}
	return res.Location.Query().Get("code"), verifier
}

func TestPKCEAndCodeRules(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	c := env.Register("pkce", "http://127.0.0.1:9/cb", "client_secret_post")
	exchange := func(code, verifier string) apptest.TokenResponse {
		f := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {c.RedirectURI}}
		if verifier != "" {
			f.Set("code_verifier", verifier)
		}
		return env.Token(c, f)
	}
	t.Run("missing verifier", func(t *testing.T) {
		code, _ := authCode(t, env, c, apptest.Approval{})
		tr := exchange(code, "")
		if tr.Status != 400 || tr.Error != "invalid_request" {
			t.Fatalf("got %+v", tr)
		}
	})
	t.Run("wrong verifier", func(t *testing.T) {
		code, _ := authCode(t, env, c, apptest.Approval{})
		tr := exchange(code, "wrong-verifier-wrong-verifier-wrong-verifier-00")
		if tr.Status != 400 || tr.Error != "invalid_grant" {
			t.Fatalf("got %+v", tr)
		}
	})
	t.Run("code reuse revokes what the first use produced", func(t *testing.T) {
		code, verifier := authCode(t, env, c, apptest.Approval{})
		first := exchange(code, verifier)
		if first.Status != 200 {
			t.Fatalf("first use: %+v", first)
		}
		second := exchange(code, verifier)
		if second.Status != 400 || second.Error != "invalid_grant" {
			t.Fatalf("second use: %+v", second)
		}
		if _, err := env.App.OAuth().Verify(context.Background(), first.AccessToken); !errors.Is(err, oauth.ErrTokenRevoked) {
			t.Fatalf("token from reused code still valid: %v", err)
		}
		tr := env.Token(c, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {first.RefreshToken}})
		if tr.Status != 400 {
			t.Fatalf("refresh from reused code: %+v", tr)
		}
	})
	t.Run("concurrent exchanges: exactly one wins", func(t *testing.T) {
		code, verifier := authCode(t, env, c, apptest.Approval{})
		var wg sync.WaitGroup
		var ok atomic.Int32
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if exchange(code, verifier).Status == 200 {
					ok.Add(1)
				}
			}()
		}
		wg.Wait()
		if ok.Load() != 1 {
			t.Fatalf("%d exchanges succeeded", ok.Load())
		}
	})
	t.Run("expired code", func(t *testing.T) {
		code, verifier := authCode(t, env, c, apptest.Approval{})
		env.Clock.Advance(6 * time.Minute)
		tr := exchange(code, verifier)
		if tr.Status != 400 || tr.Error != "invalid_grant" {
			t.Fatalf("got %+v", tr)
		}
	})
	t.Run("code of another client", func(t *testing.T) {
		other := env.Register("other", "http://127.0.0.1:9/cb", "client_secret_post")
		code, verifier := authCode(t, env, c, apptest.Approval{})
		tr := env.Token(other, url.Values{"grant_type": {"authorization_code"}, "code": {code},
			"redirect_uri": {c.RedirectURI}, "code_verifier": {verifier}})
		if tr.Status != 400 || tr.Error != "invalid_grant" {
			t.Fatalf("got %+v", tr)
		}
	})
	t.Run("wrong client secret is 401", func(t *testing.T) {
		code, verifier := authCode(t, env, c, apptest.Approval{})
		bad := c
		bad.Secret = "dss_wrong"
		tr := env.Token(bad, url.Values{"grant_type": {"authorization_code"}, "code": {code},
			"redirect_uri": {c.RedirectURI}, "code_verifier": {verifier}})
		if tr.Status != 401 || tr.Error != "invalid_client" {
			t.Fatalf("got %+v", tr)
		}
	})
	t.Run("wrong resource at token endpoint", func(t *testing.T) {
		code, verifier := authCode(t, env, c, apptest.Approval{})
		tr := env.Token(c, url.Values{"grant_type": {"authorization_code"}, "code": {code},
			"redirect_uri": {c.RedirectURI}, "code_verifier": {verifier}, "resource": {"https://evil.example/mcp"}})
		if tr.Status != 400 || tr.Error != "invalid_target" {
			t.Fatalf("got %+v", tr)
		}
	})
}

// TestAuthorizeRequestValidation covers PKCE, redirect URI and resource
// checks on the authorization request.
func TestAuthorizeRequestValidation(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	c := env.Register("validation", "http://127.0.0.1:9/cb123", "client_secret_basic")
	_, challenge := apptest.PKCE()
	base := func() url.Values {
		return url.Values{"response_type": {"code"}, "client_id": {c.ID}, "redirect_uri": {c.RedirectURI},
			"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "state": {"s1"}}
	}
	get := func(q url.Values) (*http.Response, string) {
		resp, err := apptest.NoRedirect.Get(env.URL + "/oauth/authorize?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	// Redirect URI problems: an error page, never a redirect.
	for _, tc := range []struct{ name, uri string }{
		{"suffix", "http://127.0.0.1:9/cb1234"},
		{"prefix", "http://127.0.0.1:9/cb12"},
		{"case change", "http://127.0.0.1:9/CB123"},
		{"added query", "http://127.0.0.1:9/cb123?x=1"},
		{"fragment", "http://127.0.0.1:9/cb123#f"},
		{"other port", "http://127.0.0.1:10/cb123"},
		{"other host", "http://evil.example/cb123"},
		{"javascript", "javascript:alert(1)"},
		{"http non-loopback", "http://chatgpt.com/cb123"},
	} {
		t.Run("redirect "+tc.name, func(t *testing.T) {
			q := base()
			q.Set("redirect_uri", tc.uri)
			resp, body := get(q)
			if resp.StatusCode != 400 || resp.Header.Get("Location") != "" {
				t.Fatalf("status %d location %q", resp.StatusCode, resp.Header.Get("Location"))
			}
			if !strings.Contains(body, "redirect") {
				t.Errorf("page does not explain the redirect problem:\n%s", body)
			}
		})
	}
	// Registration refuses bad redirect URIs too.
	for _, uri := range []string{"javascript:alert(1)", "http://chatgpt.com/cb", "https://evil.example/cb", "https://chatgpt.com/cb#x", "ftp://127.0.0.1/cb"} {
		body := `{"redirect_uris":["` + uri + `"],"token_endpoint_auth_method":"none"}`
		resp, err := http.Post(env.URL+"/oauth/register", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("register %s: %d", uri, resp.StatusCode)
		}
	}
	// Other problems are redirected with error, state and iss.
	for _, tc := range []struct {
		name, param, value, wantErr string
	}{
		{"no challenge", "code_challenge", "", "invalid_request"},
		{"plain method", "code_challenge_method", "plain", "invalid_request"},
		{"wrong resource", "resource", "https://evil.example/mcp", "invalid_target"},
		{"unknown scope", "scope", "project:read admin", "invalid_scope"},
		{"openid scope", "scope", "openid", "invalid_scope"},
		{"token response type", "response_type", "token", "unsupported_response_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := base()
			if tc.value == "" {
				q.Del(tc.param)
			} else {
				q.Set(tc.param, tc.value)
			}
			resp, _ := get(q)
			loc, _ := url.Parse(resp.Header.Get("Location"))
			if resp.StatusCode != 302 || loc == nil {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if got := loc.Query(); got.Get("error") != tc.wantErr || got.Get("state") != "s1" || got.Get("iss") != env.URL {
				t.Fatalf("redirect query = %v", got)
			}
		})
	}
	t.Run("verifier without challenge never yields a code", func(t *testing.T) {
		q := base()
		q.Del("code_challenge")
		q.Del("code_challenge_method")
		resp, _ := get(q)
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if loc == nil || loc.Query().Get("code") != "" || loc.Query().Get("error") != "invalid_request" {
			t.Fatalf("location %v", loc)
		}
	})
	t.Run("unknown client", func(t *testing.T) {
		q := base()
		q.Set("client_id", "dcl_nope")
		resp, _ := get(q)
		if resp.StatusCode != 400 || resp.Header.Get("Location") != "" {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	t.Run("no scope defaults to project:read", func(t *testing.T) {
		verifier, challenge := apptest.PKCE()
		res := env.Authorize(env.AuthURL(c, challenge, "s", "", nil), apptest.Approval{Scopes: []string{}})
		tr := env.Token(c, url.Values{"grant_type": {"authorization_code"}, "code": {res.Location.Query().Get("code")},
			"redirect_uri": {c.RedirectURI}, "code_verifier": {verifier}})
		if tr.Status != 200 || tr.Scope != "project:read" {
			t.Fatalf("got %+v", tr)
		}
	})
	t.Run("deny", func(t *testing.T) {
		_, challenge := apptest.PKCE()
		res := env.Authorize(env.AuthURL(c, challenge, "s-deny", "", nil), apptest.Approval{Deny: true})
		if res.Location == nil || res.Location.Query().Get("error") != "access_denied" || res.Location.Query().Get("state") != "s-deny" {
			t.Fatalf("got %+v", res)
		}
	})
}

func TestRefreshRules(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	ctx := context.Background()
	refresh := func(c apptest.Client, rt, scope string) apptest.TokenResponse {
		f := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}
		if scope != "" {
			f.Set("scope", scope)
		}
		return env.Token(c, f)
	}
	t.Run("replay revokes that grant only", func(t *testing.T) {
		c, first := env.Grant(apptest.Approval{})
		_, other := env.Grant(apptest.Approval{}) // another grant, another client
		second := refresh(c, first.RefreshToken, "")
		if second.Status != 200 {
			t.Fatalf("rotation: %+v", second)
		}
		// Past the retry window, the same client's replay is a replay.
		env.Clock.Advance(oauth.RefreshRetryWindow)
		replay := refresh(c, first.RefreshToken, "")
		if replay.Status != 400 || replay.Error != "invalid_grant" {
			t.Fatalf("replay: %+v", replay)
		}
		// The new refresh token died with the grant.
		if tr := refresh(c, second.RefreshToken, ""); tr.Status != 400 {
			t.Fatalf("refresh after replay: %+v", tr)
		}
		if _, err := env.App.OAuth().Verify(ctx, second.AccessToken); !errors.Is(err, oauth.ErrTokenRevoked) {
			t.Fatalf("access token after replay: %v", err)
		}
		if _, err := env.App.OAuth().Verify(ctx, other.AccessToken); err != nil {
			t.Fatalf("other grant affected: %v", err)
		}
		events, _ := env.App.RecentAudit(ctx)
		if !slices.Contains(events, "oauth_refresh_token_replay_detected") {
			t.Errorf("no replay audit event in %v", events)
		}
	})
	t.Run("wrong client secret on refresh", func(t *testing.T) {
		c, tok := env.Grant(apptest.Approval{})
		bad := c
		bad.Secret = "dss_wrong"
		if tr := refresh(bad, tok.RefreshToken, ""); tr.Status != 401 || tr.Error != "invalid_client" {
			t.Fatalf("got %+v", tr)
		}
	})
	t.Run("a retry within the window keeps the grant", func(t *testing.T) {
		// Two refreshes at once (the loser is a retry of the winner), and a
		// retry after a lost answer: plain invalid_grant, the grant and the
		// pair the winner got keep working.
		c, first := env.Grant(apptest.Approval{})
		results := make(chan apptest.TokenResponse, 2)
		for range 2 {
			go func() { results <- refresh(c, first.RefreshToken, "") }()
		}
		a, b := <-results, <-results
		if a.Status != 200 && b.Status != 200 {
			t.Fatalf("neither concurrent refresh succeeded: %+v %+v", a, b)
		}
		won := a
		if a.Status != 200 {
			won = b
		} else if b.Status == 200 {
			t.Fatalf("both concurrent refreshes succeeded")
		}
		env.Clock.Advance(oauth.RefreshRetryWindow / 2)
		if retry := refresh(c, first.RefreshToken, ""); retry.Status != 400 || retry.Error != "invalid_grant" {
			t.Fatalf("retry after a lost answer: %+v", retry)
		}
		if _, err := env.App.OAuth().Verify(ctx, won.AccessToken); err != nil {
			t.Fatalf("the winner's access token after the retries: %v", err)
		}
		if next := refresh(c, won.RefreshToken, ""); next.Status != 200 {
			t.Fatalf("the winner's refresh token after the retries: %+v", next)
		}
		events, _ := env.App.RecentAudit(ctx)
		if !slices.Contains(events, "oauth_refresh_retry") {
			t.Errorf("no retry audit event in %v", events)
		}
	})
	t.Run("a retry after the successor refreshed is a replay", func(t *testing.T) {
		c, first := env.Grant(apptest.Approval{})
		second := refresh(c, first.RefreshToken, "")
		third := refresh(c, second.RefreshToken, "")
		if second.Status != 200 || third.Status != 200 {
			t.Fatalf("rotations: %+v %+v", second, third)
		}
		if replay := refresh(c, first.RefreshToken, ""); replay.Status != 400 {
			t.Fatalf("replay: %+v", replay)
		}
		if _, err := env.App.OAuth().Verify(ctx, third.AccessToken); !errors.Is(err, oauth.ErrTokenRevoked) {
			t.Fatalf("the grant survived a replay of a token two rotations back: %v", err)
		}
	})
	t.Run("a used token from another client is a replay", func(t *testing.T) {
		c, first := env.Grant(apptest.Approval{})
		second := refresh(c, first.RefreshToken, "")
		if second.Status != 200 {
			t.Fatalf("rotation: %+v", second)
		}
		thief := env.Register("thief", "http://127.0.0.1:9/cb", "client_secret_basic")
		if tr := refresh(thief, first.RefreshToken, ""); tr.Status != 400 || tr.Error != "invalid_grant" {
			t.Fatalf("got %+v", tr)
		}
		if _, err := env.App.OAuth().Verify(ctx, second.AccessToken); !errors.Is(err, oauth.ErrTokenRevoked) {
			t.Fatalf("the grant survived another client's replay within the window: %v", err)
		}
	})
	t.Run("another client's refresh token", func(t *testing.T) {
		_, tok := env.Grant(apptest.Approval{})
		other := env.Register("thief", "http://127.0.0.1:9/cb", "client_secret_basic")
		if tr := refresh(other, tok.RefreshToken, ""); tr.Status != 400 || tr.Error != "invalid_grant" {
			t.Fatalf("got %+v", tr)
		}
	})
	t.Run("scope widening refused, narrowing allowed", func(t *testing.T) {
		c, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read"}})
		if tr := refresh(c, tok.RefreshToken, "project:read project:write"); tr.Status != 400 || tr.Error != "invalid_scope" {
			t.Fatalf("widening: %+v", tr)
		}
		c2, tok2 := env.Grant(apptest.Approval{Scopes: []string{"project:read", "project:write"}})
		tr := refresh(c2, tok2.RefreshToken, "project:read")
		if tr.Status != 200 || tr.Scope != "project:read" {
			t.Fatalf("narrowing: %+v", tr)
		}
	})
	t.Run("concurrent refreshes: at most one succeeds, the grant stays", func(t *testing.T) {
		c, tok := env.Grant(apptest.Approval{})
		var wg sync.WaitGroup
		var ok atomic.Int32
		var won atomic.Value
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if tr := refresh(c, tok.RefreshToken, ""); tr.Status == 200 {
					ok.Add(1)
					won.Store(tr)
				}
			}()
		}
		wg.Wait()
		if ok.Load() > 1 {
			t.Fatalf("%d concurrent refreshes succeeded", ok.Load())
		}
		// The losers were retries within the window: the winner's pair works.
		if w, _ := won.Load().(apptest.TokenResponse); ok.Load() == 1 {
			if _, err := env.App.OAuth().Verify(ctx, w.AccessToken); err != nil {
				t.Fatalf("the winner's access token: %v", err)
			}
		}
	})
}

func TestGrantIsolationAndEmergencyActions(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	ctx := context.Background()
	c := env.Register("shared client", "http://127.0.0.1:9/cb", "client_secret_basic")
	a := env.GrantFor(c, apptest.Approval{Projects: []string{"alpha"}, Scopes: []string{"project:read"}})
	b := env.GrantFor(c, apptest.Approval{Projects: []string{"beta"}, Scopes: []string{"project:read", "project:write"}})
	pa, err := env.App.OAuth().Verify(ctx, a.AccessToken)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := env.App.OAuth().Verify(ctx, b.AccessToken)
	if err != nil {
		t.Fatal(err)
	}
	if pa.GrantID == pb.GrantID || slices.Equal(pa.ProjectIDs, pb.ProjectIDs) || slices.Equal(pa.Scopes, pb.Scopes) {
		t.Fatalf("grants not distinct: %+v %+v", pa, pb)
	}
	// Another client revoking our token has no effect.
	thief := env.Register("thief", "http://127.0.0.1:9/cb", "client_secret_basic")
	if st := env.Revoke(thief, a.RefreshToken); st != 200 {
		t.Fatalf("revoke by other client: %d", st)
	}
	if _, err := env.App.OAuth().Verify(ctx, a.AccessToken); err != nil {
		t.Fatalf("other client's revocation took effect: %v", err)
	}
	// Revoking grant A leaves B.
	if err := env.App.RevokeGrant(ctx, pa.GrantID); err != nil {
		t.Fatal(err)
	}
	if _, err := env.App.OAuth().Verify(ctx, a.AccessToken); !errors.Is(err, oauth.ErrTokenRevoked) {
		t.Fatalf("A after revoke: %v", err)
	}
	if _, err := env.App.OAuth().Verify(ctx, b.AccessToken); err != nil {
		t.Fatalf("B after A's revoke: %v", err)
	}
	if err := env.App.RevokeGrant(ctx, "grt_unknown"); !errors.Is(err, oauth.ErrGrantNotFound) {
		t.Fatalf("unknown grant: %v", err)
	}
	// Password rotation kills every token but keeps clients.
	if _, err := env.App.RotatePassword(ctx, []byte("a brand new owner password")); err != nil {
		t.Fatal(err)
	}
	if _, err := env.App.OAuth().Verify(ctx, b.AccessToken); !errors.Is(err, oauth.ErrTokenRevoked) {
		t.Fatalf("B after rotation: %v", err)
	}
	if tr := env.Token(c, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {b.RefreshToken}}); tr.Status != 400 {
		t.Fatalf("refresh after rotation: %+v", tr)
	}
	// Old password refused, new one works; the client is still registered.
	_, challenge := apptest.PKCE()
	res := env.Authorize(env.AuthURL(c, challenge, "s", "", nil), apptest.Approval{})
	if res.Status != http.StatusUnauthorized {
		t.Fatalf("old password after rotation: %d", res.Status)
	}
	fresh := env.GrantFor(c, apptest.Approval{Password: "a brand new owner password"})
	if _, err := env.App.OAuth().Verify(ctx, fresh.AccessToken); err != nil {
		t.Fatal(err)
	}
	// revoke-all ends it.
	n, err := env.App.RevokeAll(ctx)
	if err != nil || n != 1 {
		t.Fatalf("revoke-all: %d %v", n, err)
	}
	if _, err := env.App.OAuth().Verify(ctx, fresh.AccessToken); !errors.Is(err, oauth.ErrTokenRevoked) {
		t.Fatalf("after revoke-all: %v", err)
	}
}

func TestPasswordRateLimit(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	c := env.Register("brute", "http://127.0.0.1:9/cb", "client_secret_basic")
	var statuses []int
	for range 5 {
		_, challenge := apptest.PKCE()
		res := env.Authorize(env.AuthURL(c, challenge, "s", "", nil), apptest.Approval{Password: "wrong password!"})
		statuses = append(statuses, res.Status)
	}
	if diff := cmp.Diff([]int{401, 401, 401, 401, 429}, statuses); diff != "" {
		t.Fatalf("statuses (-want +got):\n%s", diff)
	}
	// Even the right password waits for the back-off.
	_, challenge := apptest.PKCE()
	if res := env.Authorize(env.AuthURL(c, challenge, "s", "", nil), apptest.Approval{}); res.Status != 429 {
		t.Fatalf("right password during back-off: %d", res.Status)
	}
	env.Clock.Advance(10 * time.Minute)
	if res := env.Authorize(env.AuthURL(c, challenge, "s", "", nil), apptest.Approval{}); res.Status != 302 {
		t.Fatalf("after back-off: %d", res.Status)
	}
}

func TestRestartSurvival(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	c, tok := env.Grant(apptest.Approval{})
	env.Restart()
	ctx := context.Background()
	if _, err := env.App.OAuth().Verify(ctx, tok.AccessToken); err != nil {
		t.Fatalf("access token after restart: %v", err)
	}
	tr := env.Token(c, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}})
	if tr.Status != 200 {
		t.Fatalf("refresh after restart: %+v", tr)
	}
	// The client registered before the restart can start a new grant.
	env.GrantFor(c, apptest.Approval{})
}

func TestAccessTokenExpiry(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	_, tok := env.Grant(apptest.Approval{})
	env.Clock.Advance(61 * time.Minute)
	if _, err := env.App.OAuth().Verify(context.Background(), tok.AccessToken); !errors.Is(err, oauth.ErrTokenExpired) {
		t.Fatalf("expired token: %v", err)
	}
	if _, err := env.App.OAuth().Verify(context.Background(), "dsa_"+strings.Repeat("A", 43)); !errors.Is(err, oauth.ErrTokenInvalid) {
		t.Fatalf("unknown token: %v", err)
	}
}
