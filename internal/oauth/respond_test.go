package oauth

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	oauth2errors "github.com/go-oauth2/oauth2/v4/errors"
	"github.com/google/go-cmp/cmp"
)

// TestOAuthErrorShapes: one error type, written as JSON (status by code,
// no-store, the Basic challenge after failed HTTP authentication), as an
// authorization redirect, and as the error page.
func TestOAuthErrorShapes(t *testing.T) {
	type answer struct {
		Status                  int
		Body                    string
		CacheControl, WWWAuth   string
		Location, ContentType   string
		ConnectionClose, Pragma string
	}
	basic := func(r *http.Request) { r.SetBasicAuth("dcl_x", "dss_x") }
	r := newExchangeRig(t)
	req := &authRequest{clientID: r.client.ID, redirectURI: rigRedirect, state: "st"}
	tests := []struct {
		name  string
		setup func(*http.Request)
		write func(http.ResponseWriter, *http.Request)
		want  answer
	}{
		{"invalid_grant is 400", nil,
			func(w http.ResponseWriter, q *http.Request) {
				writeError(w, q, oauthErr(oauth2errors.ErrInvalidGrant, "no"))
			},
			answer{Status: 400, Body: `{"error":"invalid_grant","error_description":"no"}`, CacheControl: "no-store", Pragma: "no-cache", ContentType: "application/json"}},
		{"invalid_client is 401 without a challenge after client_secret_post", nil,
			func(w http.ResponseWriter, q *http.Request) {
				writeError(w, q, oauthErr(oauth2errors.ErrInvalidClient, "no"))
			},
			answer{Status: 401, Body: `{"error":"invalid_client","error_description":"no"}`, CacheControl: "no-store", Pragma: "no-cache", ContentType: "application/json"}},
		{"invalid_client after HTTP Basic carries the challenge", basic,
			func(w http.ResponseWriter, q *http.Request) {
				writeError(w, q, oauthErr(oauth2errors.ErrInvalidClient, "no"))
			},
			answer{Status: 401, Body: `{"error":"invalid_client","error_description":"no"}`, CacheControl: "no-store", Pragma: "no-cache",
				ContentType: "application/json", WWWAuth: `Basic realm="devspace"`}},
		{"server_error is 500", nil,
			func(w http.ResponseWriter, q *http.Request) {
				writeError(w, q, oauthErr(oauth2errors.ErrServerError, "x"))
			},
			answer{Status: 500, Body: `{"error":"server_error","error_description":"x"}`, CacheControl: "no-store", Pragma: "no-cache", ContentType: "application/json"}},
		{"temporarily_unavailable is 503, or as told", nil,
			func(w http.ResponseWriter, q *http.Request) {
				writeError(w, q, oauthErr(oauth2errors.ErrTemporarilyUnavailable, "x").withStatus(http.StatusTooManyRequests))
			},
			answer{Status: 429, Body: `{"error":"temporarily_unavailable","error_description":"x"}`, CacheControl: "no-store", Pragma: "no-cache", ContentType: "application/json"}},
		{"body timeout is 408 and closes", nil,
			func(w http.ResponseWriter, q *http.Request) { writeError(w, q, errBodyTimeout) },
			answer{Status: 408, Body: `{"error":"invalid_request","error_description":"the request body did not arrive in time"}`,
				CacheControl: "no-store", Pragma: "no-cache", ContentType: "application/json", ConnectionClose: "close"}},
		{"redirect", nil,
			func(w http.ResponseWriter, q *http.Request) {
				r.srv.authorizeError(w, q, req, oauthErr(oauth2errors.ErrInvalidScope, "scope x is not offered"))
			},
			answer{Status: 302, CacheControl: "no-store", Location: rigRedirect + "?" + url.Values{"error": {"invalid_scope"},
				"error_description": {"scope x is not offered"}, "state": {"st"}, "iss": {"https://devspace.example"}}.Encode()}},
		{"page when there is no validated redirect", nil,
			func(w http.ResponseWriter, q *http.Request) {
				r.srv.authorizeError(w, q, nil, oauthErr(oauth2errors.ErrInvalidRequest, "The authorization request has no client_id."))
			},
			answer{Status: 400, Body: "The authorization request has no client_id.", CacheControl: "no-store", Pragma: "no-cache",
				ContentType: "text/html; charset=utf-8"}},
		{"page with its own status", nil,
			func(w http.ResponseWriter, q *http.Request) {
				r.srv.renderError(w, oauthErr(oauth2errors.ErrInvalidRequest, "This form was submitted from another site.").withStatus(http.StatusForbidden))
			},
			answer{Status: 403, Body: "This form was submitted from another site.", CacheControl: "no-store", Pragma: "no-cache",
				ContentType: "text/html; charset=utf-8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := httptest.NewRequest(http.MethodPost, "/oauth/token", nil)
			if tt.setup != nil {
				tt.setup(q)
			}
			w := httptest.NewRecorder()
			tt.write(w, q)
			h := w.Result().Header
			got := answer{Status: w.Code, Body: strings.TrimSpace(w.Body.String()), CacheControl: h.Get("Cache-Control"),
				WWWAuth: h.Get("WWW-Authenticate"), Location: h.Get("Location"), ContentType: h.Get("Content-Type"),
				ConnectionClose: h.Get("Connection"), Pragma: h.Get("Pragma")}
			if strings.HasPrefix(got.ContentType, "text/html") {
				if !strings.Contains(got.Body, tt.want.Body) {
					t.Fatalf("page lacks %q:\n%s", tt.want.Body, got.Body)
				}
				got.Body = tt.want.Body
			}
			if tt.want.Status == http.StatusFound {
				got.Body = ""
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestRevokeBasicChallenge: RFC 6749 §5.2 (which RFC 7009 §2.2.1 applies
// to revocation) asks for the Basic challenge when a client failed HTTP
// Basic authentication; the revocation endpoint did not send it.
func TestRevokeBasicChallenge(t *testing.T) {
	r := newExchangeRig(t)
	q := httptest.NewRequest(http.MethodPost, "/oauth/revoke", strings.NewReader("token=dsa_x"))
	q.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	q.SetBasicAuth(r.client.ID, "dss_wrong")
	w := httptest.NewRecorder()
	r.srv.Revoke(w, q)
	if w.Code != http.StatusUnauthorized || w.Header().Get("WWW-Authenticate") != `Basic realm="devspace"` {
		t.Fatalf("got %d %q %s", w.Code, w.Header().Get("WWW-Authenticate"), w.Body)
	}
}
