package oauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/oauth"
)

// TestRefreshTokenBoundToResource: a refresh token minted when the
// resource was A is exchanged, after the public URL (hence resource and
// issuer) changed to B, for an access token valid for B. The access token
// minted for A is refused as wrong-audience; the refresh token of the same
// issuance is not checked against the resource at all.
func TestRefreshTokenBoundToResource(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	ctx := context.Background()
	c, tok := env.Grant(apptest.Approval{})
	oldResource := env.URL + "/mcp"
	newBase := strings.Replace(env.URL, "127.0.0.1", "localhost", 1)
	env.SetEnv("DEVSPACE_PUBLIC_BASE_URL", newBase)
	env.Restart()
	if _, err := env.App.OAuth().Verify(ctx, tok.AccessToken); !errors.Is(err, oauth.ErrWrongAudience) {
		t.Fatalf("access token for %s after the resource changed: %v, want wrong audience", oldResource, err)
	}
	tr := env.Token(c, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}})
	if tr.Status != http.StatusOK {
		t.Logf("refresh refused: %+v (good)", tr)
		return
	}
	if _, err := env.App.OAuth().Verify(ctx, tr.AccessToken); err == nil {
		t.Errorf("refresh token minted for resource %s was accepted after the resource became %s/mcp, "+
			"and its new access token verifies for the new resource", oldResource, newBase)
	}
}

// consentPost posts form to /oauth/authorize from the server's own origin.
func consentPost(t *testing.T, env *apptest.Env, form url.Values) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, env.URL+"/oauth/authorize", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", env.URL)
	resp, err := apptest.NoRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var (
	consentSelectionRE = regexp.MustCompile(`name="selection" value="([^"]+)"`)
	consentProjectRE   = regexp.MustCompile(`name="project" value="([^"]+)"`)
)

// TestConsentSelectionDiesWithEmergencyActions: someone who knew the old
// Owner password reaches step 2 (a selection token, valid 5 min). The owner
// notices and rotates the password (or runs revoke-all): "every token and
// execution dies". The selection token obtained with the old password still
// approves a brand-new grant afterwards, stamped with the new global epoch,
// and its tokens work.
func TestConsentSelectionDiesWithEmergencyActions(t *testing.T) {
	for _, action := range []string{"rotate-password", "revoke-all"} {
		t.Run(action, func(t *testing.T) {
			env := apptest.Start(t, apptest.Options{})
			ctx := context.Background()
			c := env.Register("attacker", "http://127.0.0.1:9/cb", "client_secret_basic")
			verifier, challenge := apptest.PKCE()
			authResp, err := apptest.NoRedirect.Get(env.AuthURL(c, challenge, "s", "", nil))
			if err != nil {
				t.Fatal(err)
			}
			page, _ := io.ReadAll(authResp.Body)
			authResp.Body.Close()
			req := html.UnescapeString(requestTokenRE.FindStringSubmatch(string(page))[1])
			selection, project := toStep2(t, env, req)

			switch action {
			case "rotate-password":
				if _, err := env.App.RotatePassword(ctx, []byte("the owner's brand new password")); err != nil {
					t.Fatal(err)
				}
			default:
				if _, err := env.App.RevokeAll(ctx); err != nil {
					t.Fatal(err)
				}
			}

			resp, _ := consentPost(t, env, url.Values{"selection": {selection}, "decision": {"approve"},
				"project": {project}, "scope": {"project:read", "project:write"}})
			loc, _ := url.Parse(resp.Header.Get("Location"))
			if resp.StatusCode != http.StatusFound || loc == nil || loc.Query().Get("code") == "" {
				t.Logf("approval after %s refused: %d (good)", action, resp.StatusCode)
				return
			}
			tok := env.Exchange(c, loc.Query().Get("code"), verifier)
			p, err := env.App.OAuth().Verify(ctx, tok.AccessToken)
			if err != nil {
				t.Fatalf("code issued but token does not verify: %v", err)
			}
			t.Errorf("a selection token obtained with the old password approved a new grant after %s: "+
				"access token verifies with scopes %v on %d Project(s)", action, p.Scopes, len(p.ProjectIDs))
		})
	}
}

// TestConsentSelectionNotRenewable: a step-2 selection lasts 5 minutes
// after a correct password. Posting "approve" with no Project answers
// "Choose at least one Project" with a new selection token; it used to
// come with a fresh 5 minutes, so repeating that kept the password's proof
// alive without the password, for hours (found by an attacker review). The
// new token keeps the first one's expiry.
func TestConsentSelectionNotRenewable(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	c := env.Register("attacker", "http://127.0.0.1:9/cb", "client_secret_basic")
	req := startRequest(t, env, c)
	selection, project := toStep2(t, env, req)
	renewed := 0
	for range 30 { // 30 × 2 min = 1 h
		env.Clock.Advance(2 * time.Minute)
		_, body := consentPost(t, env, url.Values{"selection": {selection}, "decision": {"approve"}})
		m := consentSelectionRE.FindStringSubmatch(body)
		if m == nil {
			break
		}
		renewed++
		selection = html.UnescapeString(m[1])
	}
	if renewed > 2 {
		t.Errorf("the selection was renewed %d times, %d minutes past its 5", renewed, renewed*2)
	}
	resp, _ := consentPost(t, env, url.Values{"selection": {selection}, "decision": {"approve"}, "project": {project}})
	if loc, _ := url.Parse(resp.Header.Get("Location")); resp.StatusCode == http.StatusFound && loc.Query().Get("code") != "" {
		t.Errorf("a selection renewed without the password past its expiry still approves a grant")
	}
}

// TestPasswordBackoffPerIPv6Prefix: with a trusted proxy the
// source address becomes a key, but one /128 at a time: an attacker holding
// an ordinary IPv6 /64 sends each guess (and each registration, which the
// per-source registration limit counts per address too) from a new address.
func TestPasswordBackoffPerIPv6Prefix(t *testing.T) {
	env := apptest.Start(t, apptest.Options{Env: map[string]string{"DEVSPACE_TRUSTED_PROXIES": "127.0.0.1"}})
	const guesses = 40
	statuses := map[int]int{}
	for i := range guesses {
		ip := fmt.Sprintf("2001:470:1f0b:1::%x", i+1) // one /64
		body := `{"client_name":"g","redirect_uris":["http://127.0.0.1:9/cb"],"token_endpoint_auth_method":"none"}`
		rr, _ := http.NewRequest(http.MethodPost, env.URL+"/oauth/register", strings.NewReader(body))
		rr.Header.Set("Content-Type", "application/json")
		rr.Header.Set(oauth.DefaultClientIPHeader, ip)
		resp, err := http.DefaultClient.Do(rr)
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			ClientID string `json:"client_id"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			statuses[resp.StatusCode]++ // registrations are limited per /64 too
			continue
		}
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("register %d: %d", i, resp.StatusCode)
		}
		req := startRequest(t, env, apptest.Client{ID: out.ClientID, RedirectURI: "http://127.0.0.1:9/cb"})
		st, _, err := postPasswordFrom(env, req, "wrong password!", ip)
		if err != nil {
			t.Fatal(err)
		}
		statuses[st]++
	}
	verified := strings.Count(env.Logs.String(), `"owner_password_failed"`)
	if verified > 4 {
		t.Errorf("%d of %d wrong passwords verified from one IPv6 /64 behind a trusted proxy (statuses %v)", verified, guesses, statuses)
	}
}

// toStep2 posts the Owner's password for the step-1 request req and
// returns the step-2 selection token and the first Project offered.
func toStep2(t *testing.T, env *apptest.Env, req string) (selection, project string) {
	t.Helper()
	resp, body := consentPost(t, env, url.Values{"request": {req}, "password": {apptest.Password}})
	m := consentSelectionRE.FindStringSubmatch(body)
	if resp.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("step 2: %d", resp.StatusCode)
	}
	return html.UnescapeString(m[1]), html.UnescapeString(consentProjectRE.FindStringSubmatch(body)[1])
}
