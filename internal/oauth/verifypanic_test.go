package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"html"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sync/atomic"
	"testing"

	"github.com/devspace-dev/devspace/internal/metrics"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/ratelimit"
	"github.com/devspace-dev/devspace/internal/store"
)

// panicOnce is a PasswordChecker whose first check panics; later checks
// accept "right".
type panicOnce struct{ calls atomic.Int64 }

func (p *panicOnce) VerifyPassword(_ context.Context, password []byte) (bool, error) {
	if p.calls.Add(1) == 1 {
		panic("verifier failed")
	}
	return string(password) == "right", nil
}

// TestPasswordCheckPanicReleasesAttempt: a password check that panics (the
// HTTP server recovers it) still releases the attempt it reserved, so the
// next sign-in is checked instead of being refused for as long as the
// server runs. The limiter allows one check in flight, so a leaked
// reservation would refuse every client's.
func TestPasswordCheckPanicReleasesAttempt(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	key := []byte("0123456789abcdef0123456789abcdef")
	catalog, err := project.NewCatalog(key, []project.Spec{{Label: "alpha", Path: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	limiter := ratelimit.New(ratelimit.Options{MaxInFlight: 1})
	srv := New(Options{Issuer: "https://devspace.example", Resource: "https://devspace.example/mcp",
		AllowedRedirectHosts: []string{"127.0.0.1"}, Store: st, Projects: catalog, RefKey: key,
		Password: &panicOnce{}, Limiter: limiter, Metrics: metrics.New(), Executions: &closedGrants{}})
	for _, id := range []string{"dcl_first", "dcl_second"} {
		c := &store.Client{ID: id, Name: id, RedirectURIs: []string{rigRedirect}, AuthMethod: "none"}
		if err := st.CreateClient(ctx, c, registrationLimits); err != nil {
			t.Fatal(err)
		}
	}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(srv.Authorize))
	ts.Config.ErrorLog = log.New(io.Discard, "", 0) // the recovered panic
	ts.Start()
	defer ts.Close()

	requestRE := regexp.MustCompile(`name="request" value="([^"]+)"`)
	sum := sha256.Sum256([]byte("verifier-verifier-verifier-verifier-verifier"))
	start := func(clientID string) string {
		t.Helper()
		q := url.Values{"client_id": {clientID}, "redirect_uri": {rigRedirect}, "response_type": {"code"},
			"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
		resp, err := http.Get(ts.URL + "?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		m := requestRE.FindSubmatch(body)
		if resp.StatusCode != http.StatusOK || m == nil {
			t.Fatalf("authorize: %d %s", resp.StatusCode, body)
		}
		return html.UnescapeString(string(m[1]))
	}
	post := func(request, password string) (int, error) {
		resp, err := http.PostForm(ts.URL, url.Values{"request": {request}, "password": {password}})
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}

	if _, err := post(start("dcl_first"), "right"); err == nil {
		t.Fatal("the panicking check answered; want the connection dropped")
	}
	if n := limiter.InFlight(); n != 0 {
		t.Errorf("%d checks in flight after the panic; want 0", n)
	}
	for _, c := range []string{"dcl_second", "dcl_first"} {
		if st, err := post(start(c), "right"); err != nil || st != http.StatusOK {
			t.Errorf("client %s after the panic: status %d, err %v; want 200", c, st, err)
		}
	}
}
