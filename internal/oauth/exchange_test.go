package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/metrics"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/store"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// exchangeRig is a Server over a real SQLite file whose statements are
// counted, with a fake clock. The clock starts at the real time: the
// manager still stamps codes with time.Now.
type exchangeRig struct {
	t          *testing.T
	srv        *Server
	st         *store.Store
	clock      *testutil.Clock
	statements atomic.Int64
	client     *store.Client
	secret     string
}

const rigRedirect = "http://127.0.0.1:9/cb"

func newExchangeRig(t *testing.T) *exchangeRig {
	t.Helper()
	ctx := context.Background()
	r := &exchangeRig{t: t, clock: testutil.NewClock(time.Now()), secret: "dss_rig"}
	st, err := store.Open(ctx, t.TempDir(), store.Options{Now: r.clock.Now,
		OnStatement: func(string) { r.statements.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	key := []byte("0123456789abcdef0123456789abcdef")
	catalog, err := project.NewCatalog(key, []project.Spec{{Label: "alpha", Path: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	r.st = st
	r.srv = New(Options{Issuer: "https://devspace.example", Resource: "https://devspace.example/mcp",
		AllowedRedirectHosts: []string{"127.0.0.1"}, Store: st, Projects: catalog, RefKey: key,
		Metrics: metrics.New(), Now: r.clock.Now})
	r.client = &store.Client{ID: "dcl_rig", SecretHash: hashSecret(r.secret), Name: "rig",
		RedirectURIs: []string{rigRedirect}, AuthMethod: "client_secret_post"}
	if err := st.CreateClient(ctx, r.client, registrationLimits); err != nil {
		t.Fatal(err)
	}
	return r
}

// code stores a grant and has the server issue a code for it, as an
// approved consent does; it returns the code, its verifier and the grant.
func (r *exchangeRig) code() (code, verifier, grantID string) {
	r.t.Helper()
	ctx := context.Background()
	verifier = randomValue("v")
	sum := sha256.Sum256([]byte(verifier))
	g := &store.Grant{ID: randomID(prefixGrant), ClientID: r.client.ID, Scopes: []string{ScopeRead},
		ProjectIDs: []string{r.srv.opts.Projects.Roots()[0].Ref}}
	if err := r.st.CreateGrant(ctx, g); err != nil {
		r.t.Fatal(err)
	}
	code, err := r.srv.issueCode(ctx, &authRequest{clientID: r.client.ID, redirectURI: rigRedirect,
		codeChallenge: base64.RawURLEncoding.EncodeToString(sum[:])}, g)
	if err != nil {
		r.t.Fatal(err)
	}
	return code, verifier, g.ID
}

// tokenResult is a token endpoint answer and the statements it ran.
type tokenResult struct {
	Status       int
	Error        string `json:"error"`
	Description  string `json:"error_description"`
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	Statements   int64  `json:"-"`
}

// token posts form (with the rig client's credentials) to the token
// endpoint.
func (r *exchangeRig) token(form url.Values) tokenResult {
	r.t.Helper()
	form.Set("client_id", r.client.ID)
	form.Set("client_secret", r.secret)
	req := httptest.NewRequest(http.MethodPost, "/oauth/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	r.statements.Store(0)
	r.srv.Token(w, req)
	res := tokenResult{Status: w.Code, Statements: r.statements.Load()}
	if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil {
		r.t.Fatalf("token response %q: %v", w.Body, err)
	}
	return res
}

func (r *exchangeRig) exchange(code, verifier string) tokenResult {
	return r.token(url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"code_verifier": {verifier}, "redirect_uri": {rigRedirect}})
}

func (r *exchangeRig) refresh(refresh string) tokenResult {
	return r.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}})
}

// TestTokenExchangeRoundTrips bounds the SQL statements of a successful
// authorization-code exchange and of a refresh (BEGIN and COMMIT not
// counted).
func TestTokenExchangeRoundTrips(t *testing.T) {
	const maxCode, maxRefresh = 8, 8
	r := newExchangeRig(t)
	code, verifier, _ := r.code()
	first := r.exchange(code, verifier)
	if first.Status != http.StatusOK {
		t.Fatalf("code exchange: %+v", first)
	}
	second := r.refresh(first.RefreshToken)
	if second.Status != http.StatusOK {
		t.Fatalf("refresh: %+v", second)
	}
	t.Logf("statements: code exchange %d, refresh %d", first.Statements, second.Statements)
	if first.Statements > maxCode {
		t.Errorf("code exchange ran %d statements, want at most %d", first.Statements, maxCode)
	}
	if second.Statements > maxRefresh {
		t.Errorf("refresh ran %d statements, want at most %d", second.Statements, maxRefresh)
	}
}
