package app_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/oauth"
)

func TestControlAPIRequiresKey(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	for _, auth := range []string{"", "Bearer wrong", "Bearer " + strings.Repeat("0", 64)} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+env.ControlAddr+"/v1/revoke-all", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("auth %q: %d", auth, resp.StatusCode)
		}
	}
}

// TestNoSecretsInLogs runs flows that handle every kind of secret and then
// searches the captured logs for any of them.
func TestNoSecretsInLogs(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	c, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read", "project:write"}})
	_, challenge := apptest.PKCE()
	env.Authorize(env.AuthURL(c, challenge, "s", "", nil), apptest.Approval{Password: "a wrong password"})
	code, verifier := authCodeFor(t, env, c)
	tr := env.Token(c, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {c.RedirectURI}, "code_verifier": {verifier}})
	env.Token(c, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {c.RedirectURI}, "code_verifier": {verifier}}) // reuse
	r2 := env.Token(c, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}})
	env.Token(c, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}}) // a retry
	env.Clock.Advance(oauth.RefreshRetryWindow)
	env.Token(c, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}}) // a replay
	env.Revoke(c, r2.AccessToken)
	authJSON, _ := os.ReadFile(filepath.Join(env.StateDir, "auth.json"))
	var af struct {
		MasterKey string `json:"masterKey"`
	}
	json.Unmarshal(authJSON, &af)
	logs := env.Logs.String()
	if !strings.Contains(logs, "oauth_refresh_token_replay_detected") {
		t.Fatal("expected audit events in the log; is logging wired?")
	}
	secrets := map[string]string{"access token": tok.AccessToken, "refresh token": tok.RefreshToken, "code": code,
		"verifier": verifier, "client secret": c.Secret, "password": apptest.Password, "wrong password": "a wrong password",
		"new access token": tr.AccessToken, "rotated refresh": r2.RefreshToken, "master key": af.MasterKey}
	for name, s := range secrets {
		if s == "" {
			t.Fatalf("%s is empty; the test would prove nothing", name)
		}
		if strings.Contains(logs, s) {
			t.Errorf("the log contains the %s", name)
		}
	}
	for _, prefix := range []string{"dsa_", "dsr_", "dsc_", "dss_", "sel_", "req_"} {
		if strings.Contains(logs, prefix) {
			t.Errorf("the log contains a %s… credential", prefix)
		}
	}
}

func authCodeFor(t *testing.T, env *apptest.Env, c apptest.Client) (string, string) {
	verifier, challenge := apptest.PKCE()
	res := env.Authorize(env.AuthURL(c, challenge, "s", "", nil), apptest.Approval{})
	if res.Location == nil {
		t.Fatalf("consent: %d", res.Status)
	}
	return res.Location.Query().Get("code"), verifier
}
