package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/devspace-dev/devspace/internal/metrics"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/store"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// exchangeRig is a Server over a real SQLite file whose statements are
// counted, with a fake clock deliberately far from the real time: a time
// decision taken with time.Now instead of Options.Now shows up as a wrong
// answer.
type exchangeRig struct {
	t          *testing.T
	srv        *Server
	st         *store.Store
	clock      *testutil.Clock
	statements atomic.Int64
	client     *store.Client
	secret     string
	closed     closedGrants
}

const rigRedirect = "http://127.0.0.1:9/cb"

func newExchangeRig(t *testing.T) *exchangeRig {
	t.Helper()
	ctx := context.Background()
	r := &exchangeRig{t: t, clock: testutil.NewClock(time.Date(2031, 2, 3, 4, 5, 6, 0, time.UTC)), secret: "dss_rig"}
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
		Metrics: metrics.New(), Now: r.clock.Now, Executions: &r.closed})
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
	return r.codeExpiring(nil)
}

// codeExpiring is code for a grant that expires at expires (nil: never).
func (r *exchangeRig) codeExpiring(expires *time.Time) (code, verifier, grantID string) {
	r.t.Helper()
	ctx := context.Background()
	verifier = randomValue("v")
	sum := sha256.Sum256([]byte(verifier))
	g := &store.Grant{ID: randomID(prefixGrant), ClientID: r.client.ID, Scopes: []string{ScopeRead},
		ProjectIDs: []string{r.srv.opts.Projects.Roots()[0].Ref}, ExpiresAt: expires}
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
	CacheControl string `json:"-"`
	Error        string `json:"error"`
	Description  string `json:"error_description"`
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
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
	res := tokenResult{Status: w.Code, CacheControl: w.Header().Get("Cache-Control"), Statements: r.statements.Load()}
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
// counted). Each is: read the client, read the credential with its grant
// and the global epoch, consume the credential, insert the new pair. It
// was 8 and 8 when the handler and the manager both loaded and checked.
func TestTokenExchangeRoundTrips(t *testing.T) {
	const maxCode, maxRefresh = 4, 4
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

// TestExchangeUsesInjectedClock walks code and refresh-token lifetimes on
// the fake clock alone: every decision (code expiry, refresh expiry,
// access-token expiry at Verify) is taken with Options.Now, at the exact
// boundary.
func TestExchangeUsesInjectedClock(t *testing.T) {
	ctx := context.Background()
	t.Run("code valid until its TTL", func(t *testing.T) {
		r := newExchangeRig(t)
		code, verifier, _ := r.code()
		r.clock.Advance(r.srv.opts.CodeTTL - time.Nanosecond)
		if res := r.exchange(code, verifier); res.Status != http.StatusOK {
			t.Fatalf("just before expiry: %+v", res)
		}
	})
	t.Run("code expired at its TTL", func(t *testing.T) {
		r := newExchangeRig(t)
		code, verifier, grantID := r.code()
		r.clock.Advance(r.srv.opts.CodeTTL)
		res := r.exchange(code, verifier)
		if res.Status != http.StatusBadRequest || res.Error != "invalid_grant" ||
			res.Description != "the authorization code is invalid or expired" {
			t.Fatalf("expired code: %+v", res)
		}
		if g, err := r.st.Grant(ctx, grantID); err != nil || g.RevokedAt != nil {
			t.Fatalf("an expired code must not revoke its grant: %+v %v", g, err)
		}
	})
	t.Run("refresh token expires with the fake clock", func(t *testing.T) {
		r := newExchangeRig(t)
		code, verifier, _ := r.code()
		first := r.exchange(code, verifier)
		if first.Status != http.StatusOK {
			t.Fatalf("exchange: %+v", first)
		}
		r.clock.Advance(r.srv.opts.RefreshTTL - time.Nanosecond)
		second := r.refresh(first.RefreshToken)
		if second.Status != http.StatusOK {
			t.Fatalf("refresh just before expiry: %+v", second)
		}
		// The rotated token's lifetime starts at the rotation, on the same clock.
		r.clock.Advance(r.srv.opts.RefreshTTL)
		res := r.refresh(second.RefreshToken)
		if res.Status != http.StatusBadRequest || res.Error != "invalid_grant" ||
			res.Description != "the refresh token is expired or revoked" {
			t.Fatalf("expired refresh token: %+v", res)
		}
	})
	t.Run("access token expiry at Verify", func(t *testing.T) {
		r := newExchangeRig(t)
		code, verifier, _ := r.code()
		tok := r.exchange(code, verifier)
		r.clock.Advance(r.srv.opts.AccessTTL - time.Nanosecond)
		if _, err := r.srv.Verify(ctx, tok.AccessToken); err != nil {
			t.Fatalf("just before expiry: %v", err)
		}
		r.clock.Advance(time.Nanosecond)
		if _, err := r.srv.Verify(ctx, tok.AccessToken); !errors.Is(err, ErrTokenExpired) {
			t.Fatalf("at expiry: %v", err)
		}
	})
}

// TestIssuanceOnInjectedClock pins what DevSpace issues, on a fake clock
// far from the real time: the code's row, the pair a code exchange stores
// and answers, and the pair a rotation stores with its parent consumed.
// Every timestamp is Options.Now's, every lifetime an Options TTL, every
// stored credential a hash; the answers carry fresh credentials in their
// documented formats.
func TestIssuanceOnInjectedClock(t *testing.T) {
	ctx := context.Background()
	r := newExchangeRig(t)
	opts := r.srv.opts
	at := func(tm time.Time) *time.Time { return &tm }
	read := func(by func(context.Context, string) (*store.TokenGrant, error), secret string) *store.Token {
		t.Helper()
		tg, err := by(ctx, hashSecret(secret))
		if err != nil {
			t.Fatalf("read the row of %.4s…: %v", secret, err)
		}
		return tg.Token
	}
	ignoreID := cmpopts.IgnoreFields(store.Token{}, "ID")
	secretFormat := func(prefix string) *regexp.Regexp {
		return regexp.MustCompile(`^` + prefix + `[A-Za-z0-9_-]{43}$`)
	}
	answer := func(t *testing.T, got tokenResult) {
		t.Helper()
		want := tokenResult{Status: http.StatusOK, CacheControl: "no-store", TokenType: "Bearer",
			ExpiresIn: int64(opts.AccessTTL / time.Second), Scope: ScopeRead}
		if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(tokenResult{}, "AccessToken", "RefreshToken", "Statements")); diff != "" {
			t.Errorf("answer (-want +got):\n%s", diff)
		}
		if !secretFormat(prefixAccess).MatchString(got.AccessToken) || !secretFormat(prefixRefresh).MatchString(got.RefreshToken) {
			t.Errorf("credential formats: access %q, refresh %q", got.AccessToken, got.RefreshToken)
		}
	}

	issued := r.clock.Now()
	code, verifier, grantID := r.code()
	if !secretFormat(prefixCode).MatchString(code) {
		t.Errorf("code format: %q", code)
	}
	sum := sha256.Sum256([]byte(verifier))
	codeRow := &store.Token{GrantID: grantID, ClientID: r.client.ID, Scope: ScopeRead, RedirectURI: rigRedirect,
		Resource: opts.Resource, CodeHash: hashSecret(code), CodeChallenge: base64.RawURLEncoding.EncodeToString(sum[:]),
		CodeChallengeMethod: "S256", CodeCreatedAt: at(issued), CodeExpiresAt: at(issued.Add(opts.CodeTTL))}
	if diff := cmp.Diff(codeRow, read(r.st.CodeGrant, code), ignoreID); diff != "" {
		t.Errorf("code row (-want +got):\n%s", diff)
	}

	r.clock.Advance(time.Minute)
	exchanged := r.clock.Now()
	first := r.exchange(code, verifier)
	t.Run("code exchange answer", func(t *testing.T) { answer(t, first) })
	codeRow.CodeConsumedAt = at(exchanged)
	if diff := cmp.Diff(codeRow, read(r.st.CodeGrant, code), ignoreID); diff != "" {
		t.Errorf("code row after the exchange (-want +got):\n%s", diff)
	}
	firstRow := read(r.st.AccessTokenGrant, first.AccessToken)
	pair := &store.Token{GrantID: grantID, ClientID: r.client.ID, Scope: ScopeRead, RedirectURI: rigRedirect,
		Resource:   opts.Resource,
		AccessHash: hashSecret(first.AccessToken), AccessCreatedAt: at(exchanged), AccessExpiresAt: at(exchanged.Add(opts.AccessTTL)),
		RefreshHash: hashSecret(first.RefreshToken), RefreshCreatedAt: at(exchanged), RefreshExpiresAt: at(exchanged.Add(opts.RefreshTTL))}
	if diff := cmp.Diff(pair, firstRow, ignoreID); diff != "" {
		t.Errorf("exchanged pair (-want +got):\n%s", diff)
	}

	r.clock.Advance(2 * opts.AccessTTL)
	rotated := r.clock.Now()
	second := r.refresh(first.RefreshToken)
	t.Run("rotation answer", func(t *testing.T) { answer(t, second) })
	pair.RefreshConsumedAt, pair.RevokedAt = at(rotated), at(rotated)
	if diff := cmp.Diff(pair, read(r.st.RefreshGrant, first.RefreshToken), ignoreID); diff != "" {
		t.Errorf("rotated parent (-want +got):\n%s", diff)
	}
	next := &store.Token{GrantID: grantID, ClientID: r.client.ID, ParentID: firstRow.ID, Scope: ScopeRead,
		RedirectURI: rigRedirect, Resource: opts.Resource,
		AccessHash: hashSecret(second.AccessToken), AccessCreatedAt: at(rotated), AccessExpiresAt: at(rotated.Add(opts.AccessTTL)),
		RefreshHash: hashSecret(second.RefreshToken), RefreshCreatedAt: at(rotated), RefreshExpiresAt: at(rotated.Add(opts.RefreshTTL))}
	if diff := cmp.Diff(next, read(r.st.AccessTokenGrant, second.AccessToken), ignoreID); diff != "" {
		t.Errorf("rotated pair (-want +got):\n%s", diff)
	}
}

// TestCodeUsedTwice: the second exchange of a code by its own client, with
// its verifier, fails and revokes the grant, so the pair the first
// exchange issued dies with it.
func TestCodeUsedTwice(t *testing.T) {
	ctx := context.Background()
	r := newExchangeRig(t)
	code, verifier, grantID := r.code()
	first := r.exchange(code, verifier)
	if first.Status != http.StatusOK {
		t.Fatalf("first exchange: %+v", first)
	}
	second := r.exchange(code, verifier)
	if second.Status != http.StatusBadRequest || second.Error != "invalid_grant" ||
		second.Description != "the authorization code was already used" {
		t.Fatalf("second exchange: %+v", second)
	}
	if g, err := r.st.Grant(ctx, grantID); err != nil || g.RevokeReason != "code_reuse" {
		t.Fatalf("grant after reuse: %+v %v", g, err)
	}
	r.closed.mu.Lock()
	closed := slices.Clone(r.closed.ids)
	r.closed.mu.Unlock()
	if !slices.Equal(closed, []string{grantID}) {
		t.Fatalf("executions closed for %v, want the revoked grant %s", closed, grantID)
	}
	if _, err := r.srv.Verify(ctx, first.AccessToken); !errors.Is(err, ErrTokenRevoked) {
		t.Fatalf("access token from the reused code: %v", err)
	}
	if res := r.refresh(first.RefreshToken); res.Status != http.StatusBadRequest || res.Error != "invalid_grant" {
		t.Fatalf("refresh token from the reused code: %+v", res)
	}
}

// TestPKCEMatches pins the split of the PKCE check: the verifier's RFC 7636
// syntax is ours, whether it matches the stored challenge under the stored
// method is go-oauth2's. Verifiers whose S256 transform does match are
// refused when malformed, and nothing matches under a method that was
// never stored.
func TestPKCEMatches(t *testing.T) {
	s256 := func(v string) string {
		sum := sha256.Sum256([]byte(v))
		return base64.RawURLEncoding.EncodeToString(sum[:])
	}
	good := strings.Repeat("a1-._~", 8) // 48 unreserved characters
	tests := []struct {
		name, verifier, method, challenge string
		want                              bool
	}{
		{"S256 match", good, "S256", s256(good), true},
		{"another verifier", good + "b", "S256", s256(good), false},
		{"42 characters, its S256 matching", good[:42], "S256", s256(good[:42]), false},
		{"129 characters, its S256 matching", strings.Repeat("v", 129), "S256", s256(strings.Repeat("v", 129)), false},
		{"a reserved character, its S256 matching", good + "+", "S256", s256(good + "+"), false},
		{"no method stored", good, "", s256(good), false},
		{"an unknown method stored", good, "S512", s256(good), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pkceMatches(tt.verifier, tt.method, tt.challenge); got != tt.want {
				t.Errorf("pkceMatches = %v, want %v", got, tt.want)
			}
		})
	}
}

// closedGrants records the grants the server asked to close.
type closedGrants struct {
	mu  sync.Mutex
	ids []string
}

func (c *closedGrants) CloseGrants(_ context.Context, ids []string, _ string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids = append(c.ids, ids...)
	return nil
}
