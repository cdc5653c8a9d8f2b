package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// grantToken has the rig's server issue a pair for a new grant.
func (r *exchangeRig) grantToken() (tokenResult, string) {
	r.t.Helper()
	code, verifier, grantID := r.code()
	tok := r.exchange(code, verifier)
	if tok.Status != http.StatusOK {
		r.t.Fatalf("exchange: %+v", tok)
	}
	return tok, grantID
}

// verify runs Verify and reports the statements it ran.
func (r *exchangeRig) verify(token string) (*Principal, int64, error) {
	r.statements.Store(0)
	p, err := r.srv.Verify(context.Background(), token)
	return p, r.statements.Load(), err
}

// cached verifies token twice and fails unless the second answer came
// from memory.
func (r *exchangeRig) cached(token string) *Principal {
	r.t.Helper()
	if _, _, err := r.verify(token); err != nil {
		r.t.Fatalf("verify: %v", err)
	}
	p, n, err := r.verify(token)
	if err != nil || n != 0 {
		r.t.Fatalf("second verify: %v after %d statements, want a cache hit", err, n)
	}
	return p
}

// revokeEndpoint posts token to the revocation endpoint as the rig client.
func (r *exchangeRig) revokeEndpoint(token string) {
	r.t.Helper()
	form := url.Values{"token": {token}, "client_id": {r.client.ID}, "client_secret": {r.secret}}
	req := httptest.NewRequest(http.MethodPost, "/oauth/revoke", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	r.srv.Revoke(w, req)
	if w.Code != http.StatusOK {
		r.t.Fatalf("revoke: %d %s", w.Code, w.Body)
	}
}

// TestVerifyFromCache: a token verified once is answered without a
// statement, and every answer is the caller's own copy.
func TestVerifyFromCache(t *testing.T) {
	r := newExchangeRig(t)
	tok, _ := r.grantToken()
	first, n, err := r.verify(tok.AccessToken)
	if err != nil || n == 0 {
		t.Fatalf("first verify: %v, %d statements", err, n)
	}
	second := r.cached(tok.AccessToken)
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("cached principal (-store +cache):\n%s", diff)
	}
	second.Scopes[0] = ScopeExecute
	second.ProjectIDs[0] = "prj_other"
	second.GrantID = "grt_other"
	third, _, _ := r.verify(tok.AccessToken)
	if diff := cmp.Diff(first, third); diff != "" {
		t.Errorf("a caller changed the cached principal (-want +got):\n%s", diff)
	}
}

// TestVerifyCacheNeverServesRevoked: every way a token stops being valid
// takes effect on the very next Verify, although the token was cached.
func TestVerifyCacheNeverServesRevoked(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// revoke ends tok; it returns the token to try next (tok's access
		// token unless the action issued and ended another).
		revoke func(r *exchangeRig, tok tokenResult, grantID string) string
	}{
		{"owner revokes the grant", func(r *exchangeRig, tok tokenResult, grantID string) string {
			if err := r.srv.RevokeGrant(ctx, grantID); err != nil {
				t.Fatal(err)
			}
			return tok.AccessToken
		}},
		{"revoke-all", func(r *exchangeRig, tok tokenResult, _ string) string {
			if _, err := r.srv.RevokeAll(ctx, "revoke_all"); err != nil {
				t.Fatal(err)
			}
			return tok.AccessToken
		}},
		{"password rotation", func(r *exchangeRig, tok tokenResult, _ string) string {
			if _, err := r.srv.RevokeAll(ctx, "password_rotated"); err != nil {
				t.Fatal(err)
			}
			return tok.AccessToken
		}},
		{"revocation endpoint, access token", func(r *exchangeRig, tok tokenResult, _ string) string {
			r.revokeEndpoint(tok.AccessToken)
			return tok.AccessToken
		}},
		{"revocation endpoint, refresh token", func(r *exchangeRig, tok tokenResult, _ string) string {
			r.revokeEndpoint(tok.RefreshToken)
			return tok.AccessToken
		}},
		{"refresh rotation retires the old access token", func(r *exchangeRig, tok tokenResult, _ string) string {
			if next := r.refresh(tok.RefreshToken); next.Status != http.StatusOK {
				t.Fatalf("refresh: %+v", next)
			}
			return tok.AccessToken
		}},
		{"refresh replay revokes the grant", func(r *exchangeRig, tok tokenResult, _ string) string {
			next := r.refresh(tok.RefreshToken)
			if next.Status != http.StatusOK {
				t.Fatalf("refresh: %+v", next)
			}
			r.cached(next.AccessToken)
			// Past the retry window: a replay, not a retry.
			r.clock.Advance(RefreshRetryWindow)
			if replay := r.refresh(tok.RefreshToken); replay.Status == http.StatusOK {
				t.Fatalf("replay accepted: %+v", replay)
			}
			return next.AccessToken
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newExchangeRig(t)
			tok, grantID := r.grantToken()
			r.cached(tok.AccessToken)
			ended := tc.revoke(r, tok, grantID)
			if _, _, err := r.verify(ended); !errors.Is(err, ErrTokenRevoked) {
				t.Fatalf("verify after the revocation: %v, want ErrTokenRevoked", err)
			}
		})
	}
	t.Run("code reuse revokes the grant", func(t *testing.T) {
		r := newExchangeRig(t)
		code, verifier, _ := r.code()
		tok := r.exchange(code, verifier)
		r.cached(tok.AccessToken)
		if again := r.exchange(code, verifier); again.Status == http.StatusOK {
			t.Fatalf("code reused: %+v", again)
		}
		if _, _, err := r.verify(tok.AccessToken); !errors.Is(err, ErrTokenRevoked) {
			t.Fatalf("verify after code reuse: %v, want ErrTokenRevoked", err)
		}
	})
}

// TestVerifyCacheConcurrentRevoke: while verifiers hammer a cached token,
// no Verify that starts after the revocation returned succeeds.
func TestVerifyCacheConcurrentRevoke(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		revoke func(r *exchangeRig, tok tokenResult, grantID string) error
	}{
		{"grant", func(r *exchangeRig, _ tokenResult, grantID string) error { return r.srv.RevokeGrant(ctx, grantID) }},
		{"all", func(r *exchangeRig, _ tokenResult, _ string) error {
			_, err := r.srv.RevokeAll(ctx, "revoke_all")
			return err
		}},
		{"token", func(r *exchangeRig, tok tokenResult, _ string) error {
			_, err := r.st.RevokeAccessToken(ctx, r.client.ID, hashSecret(tok.AccessToken))
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newExchangeRig(t)
			tok, grantID := r.grantToken()
			r.cached(tok.AccessToken)
			var (
				revoked   atomic.Bool
				wg        sync.WaitGroup
				stop      = make(chan struct{})
				hitsAfter atomic.Int64
				okBefore  atomic.Int64
			)
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						after := revoked.Load()
						_, err := r.srv.Verify(ctx, tok.AccessToken)
						switch {
						case after && err == nil:
							hitsAfter.Add(1)
						case !after && err == nil:
							okBefore.Add(1)
						}
					}
				}()
			}
			time.Sleep(20 * time.Millisecond)
			if err := tc.revoke(r, tok, grantID); err != nil {
				t.Fatal(err)
			}
			revoked.Store(true)
			time.Sleep(20 * time.Millisecond)
			close(stop)
			wg.Wait()
			if n := hitsAfter.Load(); n != 0 {
				t.Fatalf("%d verifications started after the revocation returned succeeded", n)
			}
			if okBefore.Load() == 0 {
				t.Fatal("no verification succeeded before the revocation (the test exercised nothing)")
			}
		})
	}
}

// TestVerifyCacheExpiry: a cached token ends exactly at its access expiry
// and at its grant's expiry, on the server's clock.
func TestVerifyCacheExpiry(t *testing.T) {
	t.Run("access token", func(t *testing.T) {
		r := newExchangeRig(t)
		tok, _ := r.grantToken()
		p := r.cached(tok.AccessToken)
		if p.ExpiresAt.IsZero() {
			t.Fatal("no access expiry")
		}
		r.clock.Set(p.ExpiresAt.Add(-time.Nanosecond))
		if _, n, err := r.verify(tok.AccessToken); err != nil || n != 0 {
			t.Fatalf("a nanosecond before expiry: %v after %d statements, want a cache hit", err, n)
		}
		r.clock.Set(p.ExpiresAt)
		if _, _, err := r.verify(tok.AccessToken); !errors.Is(err, ErrTokenExpired) {
			t.Fatalf("at expiry: %v, want ErrTokenExpired", err)
		}
	})
	t.Run("grant", func(t *testing.T) {
		r := newExchangeRig(t)
		expires := r.clock.Now().Add(30 * time.Minute) // before the access token's expiry
		code, verifier, _ := r.codeExpiring(&expires)
		tok := r.exchange(code, verifier)
		if tok.Status != http.StatusOK {
			t.Fatalf("exchange: %+v", tok)
		}
		r.cached(tok.AccessToken)
		r.clock.Set(expires.Add(-time.Nanosecond))
		if _, n, err := r.verify(tok.AccessToken); err != nil || n != 0 {
			t.Fatalf("a nanosecond before the grant expires: %v after %d statements, want a cache hit", err, n)
		}
		r.clock.Set(expires)
		if _, _, err := r.verify(tok.AccessToken); !errors.Is(err, ErrTokenExpired) {
			t.Fatalf("at the grant's expiry: %v, want ErrTokenExpired", err)
		}
	})
}

// TestVerifyCacheUnit: the cache's own rules: bounded, generation-bound,
// expiry-bound, copies out.
func TestVerifyCacheUnit(t *testing.T) {
	now := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &Principal{GrantID: "g", Scopes: []string{ScopeRead}, ProjectIDs: []string{"p"}, ExpiresAt: now.Add(time.Hour)}
	c := newVerifyCache(4)
	for i := range 20 {
		c.put(fmt.Sprint(i), 1, p, time.Time{})
		if c.len() > 4 {
			t.Fatalf("%d entries after %d puts, bound 4", c.len(), i+1)
		}
	}
	c.put("k", 1, p, now.Add(time.Minute))
	if _, ok := c.get("k", 1, now); !ok {
		t.Fatal("miss on a fresh entry")
	}
	if _, ok := c.get("k", 2, now); ok {
		t.Fatal("hit under a newer generation")
	}
	if _, ok := c.get("k", 1, now.Add(time.Minute)); ok {
		t.Fatal("hit at the grant's expiry")
	}
	if _, ok := c.get("k", 1, now.Add(time.Minute-time.Nanosecond)); !ok {
		t.Fatal("miss a nanosecond before the grant's expiry")
	}
	c.put("old", 0, p, time.Time{}) // read before a write that committed since
	if _, ok := c.get("old", 0, now); ok {
		t.Fatal("an entry from an older generation was kept")
	}
	c.put("new", 2, p, time.Time{})
	if c.len() != 1 {
		t.Fatalf("%d entries after a newer generation, want 1", c.len())
	}
	got, _ := c.get("new", 2, now)
	got.Scopes[0] = ScopeExecute
	again, _ := c.get("new", 2, now)
	if again.Scopes[0] != ScopeRead {
		t.Fatal("a caller changed the cached principal")
	}
}

// len returns the number of entries.
func (c *verifyCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}
