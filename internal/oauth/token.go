package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	oauth2 "github.com/go-oauth2/oauth2/v4"
	oauth2errors "github.com/go-oauth2/oauth2/v4/errors"

	"github.com/devspace-dev/devspace/internal/store"
)

const maxTokenForm = 64 << 10

type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token,omitempty"`
	Scope        string `json:"scope"`
}

// grantTypes are the grant types Token serves, by go-oauth2's names: what
// the metadata advertises and a registration may ask for.
func grantTypes() []string {
	return []string{oauth2.AuthorizationCode.String(), oauth2.Refreshing.String()}
}

// Token serves POST /oauth/token for authorization_code and refresh_token.
func (s *Server) Token(w http.ResponseWriter, r *http.Request) {
	issued, oerr := s.token(w, r)
	if oerr != nil {
		writeError(w, r, oerr)
		return
	}
	writeJSON(w, http.StatusOK, issued)
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) (*tokenResponse, *oauthError) {
	form, oerr := readForm(w, r)
	if oerr != nil {
		return nil, oerr
	}
	client, oerr := s.authenticateClient(r, form)
	if oerr != nil {
		return nil, oerr
	}
	if res, ok := form["resource"]; ok && res[0] != s.opts.Resource {
		return nil, oauthErr(errInvalidTarget, "resource must be "+s.opts.Resource)
	}
	switch oauth2.GrantType(form.Get("grant_type")) {
	case oauth2.AuthorizationCode:
		return s.exchangeCode(r, form, client)
	case oauth2.Refreshing:
		return s.refresh(r, form, client)
	case "":
		return nil, oauthErr(oauth2errors.ErrInvalidRequest, "grant_type is required")
	}
	return nil, oauthErr(oauth2errors.ErrUnsupportedGrantType, "grant_type must be authorization_code or refresh_token")
}

// readForm parses a bounded urlencoded body and rejects repeated
// parameters (RFC 6749 §3.2).
func readForm(w http.ResponseWriter, r *http.Request) (url.Values, *oauthError) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(ct), "application/x-www-form-urlencoded") {
		return nil, oauthErr(oauth2errors.ErrInvalidRequest, "the body must be application/x-www-form-urlencoded")
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxTokenForm)
	if err := r.ParseForm(); err != nil {
		return nil, bodyError(err, oauthErr(oauth2errors.ErrInvalidRequest, "the body could not be parsed"))
	}
	for k, v := range r.PostForm {
		if len(v) > 1 {
			return nil, oauthErr(oauth2errors.ErrInvalidRequest, "parameter "+k+" is repeated")
		}
	}
	return r.PostForm, nil
}

// authenticateClient applies the client's registered authentication: HTTP
// Basic or client_secret_post must match the stored hash; a public client
// ("none") may omit the secret but a presented secret must still match.
func (s *Server) authenticateClient(r *http.Request, form url.Values) (*store.Client, *oauthError) {
	id, secret, basic := r.BasicAuth()
	if basic {
		if form.Has("client_secret") {
			return nil, oauthErr(oauth2errors.ErrInvalidRequest, "use one client authentication method")
		}
		var err error
		if id, err = url.QueryUnescape(id); err != nil {
			return nil, oauthErr(oauth2errors.ErrInvalidClient, "client authentication failed")
		}
		if secret, err = url.QueryUnescape(secret); err != nil {
			return nil, oauthErr(oauth2errors.ErrInvalidClient, "client authentication failed")
		}
		if fid := form.Get("client_id"); fid != "" && fid != id {
			return nil, oauthErr(oauth2errors.ErrInvalidClient, "client authentication failed")
		}
	} else {
		id, secret = form.Get("client_id"), form.Get("client_secret")
	}
	if id == "" {
		return nil, oauthErr(oauth2errors.ErrInvalidClient, "client_id is required")
	}
	c, err := s.opts.Store.Client(r.Context(), id)
	if err != nil {
		return nil, oauthErr(oauth2errors.ErrInvalidClient, "client authentication failed")
	}
	if secret == "" {
		if c.AuthMethod != "none" {
			return nil, oauthErr(oauth2errors.ErrInvalidClient, "client authentication failed")
		}
		return c, nil
	}
	if !secretMatches(secret, c.SecretHash) {
		return nil, oauthErr(oauth2errors.ErrInvalidClient, "client authentication failed")
	}
	return c, nil
}

// exchangeCode owns every check of an authorization-code exchange, on one
// read of the code with its grant and with Server.now, then stores a new
// pair in the transaction that consumes the code.
func (s *Server) exchangeCode(r *http.Request, form url.Values, client *store.Client) (*tokenResponse, *oauthError) {
	ctx := r.Context()
	code, verifier := form.Get("code"), form.Get("code_verifier")
	if code == "" {
		return nil, oauthErr(oauth2errors.ErrInvalidRequest, "code is required")
	}
	if verifier == "" {
		return nil, oauthErr(oauth2errors.ErrInvalidRequest, "code_verifier is required (PKCE S256)")
	}
	tg, oerr := s.readCredential(ctx, s.opts.Store.CodeGrant, code, "the authorization code is invalid")
	if oerr != nil {
		return nil, oerr
	}
	row := tg.Token
	// The client and the PKCE verifier are checked before anything else:
	// someone who only saw a code (another client, or no verifier) is
	// refused and audited and can neither consume it nor revoke what it
	// produced (RFC 9700 §4.5: only a replay by the client the code was
	// issued to, with its verifier, revokes the grant).
	if row.ClientID != client.ID {
		s.audit(ctx, "oauth_code_client_mismatch", row.GrantID, client.ID, nil)
		return nil, oauthErr(oauth2errors.ErrInvalidGrant, "the authorization code is invalid or expired")
	}
	if !pkceMatches(verifier, row.CodeChallengeMethod, row.CodeChallenge) {
		s.audit(ctx, "oauth_code_verifier_mismatch", row.GrantID, client.ID, nil)
		return nil, oauthErr(oauth2errors.ErrInvalidGrant, "the code_verifier does not match the code_challenge")
	}
	if row.CodeConsumedAt != nil {
		s.codeReused(ctx, row)
		return nil, oauthErr(oauth2errors.ErrInvalidGrant, "the authorization code was already used")
	}
	if row.RevokedAt != nil || row.CodeExpiresAt == nil || !s.now().Before(*row.CodeExpiresAt) {
		return nil, oauthErr(oauth2errors.ErrInvalidGrant, "the authorization code is invalid or expired")
	}
	if redirect := form.Get("redirect_uri"); redirect != "" && redirect != row.RedirectURI {
		return nil, oauthErr(oauth2errors.ErrInvalidGrant, "redirect_uri does not match the authorization request")
	}
	if s.grantUsable(tg.Grant, tg.GlobalEpoch) != nil {
		return nil, oauthErr(oauth2errors.ErrInvalidGrant, "the grant was revoked or expired")
	}
	if row.Resource != s.opts.Resource {
		// Issued for another resource (the public URL changed): RFC 8707
		// binds what it yields to that one.
		return nil, oauthErr(oauth2errors.ErrInvalidGrant, "the authorization code was issued for another resource")
	}
	pair, issued := s.newPair(row, row.Scope)
	switch err := s.opts.Store.ExchangeCode(ctx, row.ID, pair); {
	case errors.Is(err, store.ErrConsumed):
		// A concurrent exchange of the same code won the race.
		s.codeReused(ctx, row)
		return nil, oauthErr(oauth2errors.ErrInvalidGrant, "the authorization code was already used")
	case err != nil:
		return nil, s.tokenFailure(r, err)
	}
	s.opts.Metrics.OAuthTokensIssued.WithLabelValues(oauth2.AuthorizationCode.String()).Inc()
	return issued, nil
}

// readCredential reads a presented code or refresh token by its hash with
// read, together with its grant; unknown describes the invalid_grant of a
// credential that does not exist.
func (s *Server) readCredential(ctx context.Context, read func(context.Context, string) (*store.TokenGrant, error),
	presented, unknown string) (*store.TokenGrant, *oauthError) {
	tg, err := read(ctx, hashSecret(presented))
	if errors.Is(err, store.ErrNotFound) {
		return nil, oauthErr(oauth2errors.ErrInvalidGrant, unknown)
	}
	if err != nil {
		s.log.ErrorContext(ctx, "read credential", "err", err)
		return nil, oauthErr(oauth2errors.ErrServerError, "the token could not be issued")
	}
	return tg, nil
}

// pkceMatches reports whether verifier is a well-formed RFC 7636 verifier
// (§4.1: 43 to 128 unreserved characters, which go-oauth2 does not check)
// that matches challenge under method, as go-oauth2 verifies it. method is
// the one stored with the code: validateAuthorizeRequest admits only S256,
// so only S256 is ever stored, and an unknown method matches nothing.
// go-oauth2 compares in variable time, which is safe here: the challenge
// is not a secret (it travelled in the authorization URL), and what the
// timing could reveal, how much of the verifier's S256 transform matches
// it, does not bring a caller closer to a verifier (a SHA-256 preimage).
func pkceMatches(verifier, method, challenge string) bool {
	return codeChallengeRE().MatchString(verifier) && oauth2.CodeChallengeMethod(method).Validate(challenge, verifier)
}

// codeReused revokes what a replayed code produced: its whole grant.
func (s *Server) codeReused(ctx context.Context, row *store.Token) {
	s.revokeGrants(ctx, []string{row.GrantID}, "code_reuse")
	s.audit(ctx, "oauth_code_reuse_detected", row.GrantID, row.ClientID, nil)
}

// refresh owns every check of a refresh, on one read of the refresh token
// with its grant and with Server.now, then rotates: a new pair is stored in
// the transaction that consumes the presented token and retires its access
// token.
func (s *Server) refresh(r *http.Request, form url.Values, client *store.Client) (*tokenResponse, *oauthError) {
	ctx := r.Context()
	rt := form.Get("refresh_token")
	if rt == "" {
		return nil, oauthErr(oauth2errors.ErrInvalidRequest, "refresh_token is required")
	}
	tg, oerr := s.readCredential(ctx, s.opts.Store.RefreshGrant, rt, "the refresh token is invalid")
	if oerr != nil {
		return nil, oerr
	}
	row := tg.Token
	if row.ClientID != client.ID {
		s.audit(ctx, "oauth_refresh_client_mismatch", row.GrantID, client.ID, nil)
		if row.RefreshConsumedAt != nil {
			// A used token replayed by anyone else: the reuse detection of
			// RFC 9700 holds, whatever the retry window.
			s.refreshReplayed(ctx, row)
			return nil, oauthErr(oauth2errors.ErrInvalidGrant, "the refresh token was already used; the grant is revoked")
		}
		return nil, oauthErr(oauth2errors.ErrInvalidGrant, "the refresh token was not issued to this client")
	}
	if row.RefreshConsumedAt != nil {
		return nil, s.refreshReused(ctx, row)
	}
	if row.RevokedAt != nil || (row.RefreshExpiresAt != nil && !s.now().Before(*row.RefreshExpiresAt)) {
		return nil, oauthErr(oauth2errors.ErrInvalidGrant, "the refresh token is expired or revoked")
	}
	if s.grantUsable(tg.Grant, tg.GlobalEpoch) != nil {
		return nil, oauthErr(oauth2errors.ErrInvalidGrant, "the grant was revoked or expired")
	}
	if row.Resource != s.opts.Resource {
		// Issued for another resource (the public URL changed): its access
		// token is refused there, and so is it.
		return nil, oauthErr(oauth2errors.ErrInvalidGrant, "the refresh token was issued for another resource")
	}
	// A refresh may narrow scope, never widen it; no scope keeps the
	// token's.
	scope := row.Scope
	if requested := parseScopes(form.Get("scope")); len(requested) > 0 {
		have := parseScopes(row.Scope)
		for _, sc := range requested {
			if !slices.Contains(have, sc) {
				return nil, oauthErr(oauth2errors.ErrInvalidScope, "a refresh cannot add scope "+sc)
			}
		}
		scope = strings.Join(requested, " ")
	}
	pair, issued := s.newPair(row, scope)
	pair.ParentID = row.ID
	switch err := s.opts.Store.CreateToken(ctx, pair); {
	case errors.Is(err, store.ErrConsumed):
		// Lost a race with a concurrent use of the same token: a client
		// retrying, or a replay.
		now := s.now()
		row.RefreshConsumedAt = &now
		return nil, s.refreshReused(ctx, row)
	case err != nil:
		return nil, s.tokenFailure(r, err)
	}
	s.opts.Metrics.OAuthTokensIssued.WithLabelValues(oauth2.Refreshing.String()).Inc()
	return issued, nil
}

// RefreshRetryWindow is how long after a refresh token was used its own
// client may present it again without losing the grant (docs/design.md
// §4): a client retrying a refresh whose answer it lost, or two
// refreshes sent at once.
const RefreshRetryWindow = 30 * time.Second

// refreshReused answers a refresh token that was used already, by its own
// client (the caller checked). Within RefreshRetryWindow of that use, and
// while the pair it was exchanged for has not refreshed in turn, it is a
// retry: a plain invalid_grant, the grant and the pair already issued
// stay (RFC 9700 §4.14.2 lets a server tolerate such retries; a thief
// presenting it in that window gains nothing either). Otherwise it is a
// replay: the grant ends.
func (s *Server) refreshReused(ctx context.Context, row *store.Token) *oauthError {
	if s.now().Sub(*row.RefreshConsumedAt) < RefreshRetryWindow {
		if used, err := s.opts.Store.SuccessorUsed(ctx, row.ID); err == nil && !used {
			s.audit(ctx, "oauth_refresh_retry", row.GrantID, row.ClientID, nil)
			return oauthErr(oauth2errors.ErrInvalidGrant, "the refresh token was used moments ago; use the tokens that refresh returned")
		}
	}
	s.refreshReplayed(ctx, row)
	return oauthErr(oauth2errors.ErrInvalidGrant, "the refresh token was already used; the grant is revoked")
}

// refreshReplayed revokes the grant a consumed refresh token belongs to,
// and only that grant.
func (s *Server) refreshReplayed(ctx context.Context, row *store.Token) {
	s.opts.Metrics.OAuthRefreshReplays.Inc()
	s.revokeGrants(ctx, []string{row.GrantID}, "refresh_replay")
	s.audit(ctx, "oauth_refresh_token_replay_detected", row.GrantID, row.ClientID, nil)
}

// tokenFailure answers a pair that could not be stored (other than a lost
// race for the credential it consumes): logged, server_error.
func (s *Server) tokenFailure(r *http.Request, err error) *oauthError {
	s.log.ErrorContext(r.Context(), "token endpoint", "err", err)
	return oauthErr(oauth2errors.ErrServerError, "the token could not be issued")
}

// Revoke implements RFC 7009 for the calling client's own tokens: an access
// token ends alone, a refresh token ends its whole grant. Unknown tokens and
// other clients' tokens get 200 with no effect.
func (s *Server) Revoke(w http.ResponseWriter, r *http.Request) {
	if oerr := s.revoke(w, r); oerr != nil {
		writeError(w, r, oerr)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

func (s *Server) revoke(w http.ResponseWriter, r *http.Request) *oauthError {
	form, oerr := readForm(w, r)
	if oerr != nil {
		return oerr
	}
	client, oerr := s.authenticateClient(r, form)
	if oerr != nil {
		return oerr
	}
	tok := form.Get("token")
	if tok == "" {
		return oauthErr(oauth2errors.ErrInvalidRequest, "token is required")
	}
	ctx := r.Context()
	h := hashSecret(tok)
	if row, err := s.opts.Store.TokenByAccessHash(ctx, h); err == nil && row.ClientID == client.ID {
		if _, err := s.opts.Store.RevokeAccessToken(ctx, client.ID, h); err != nil {
			s.log.ErrorContext(ctx, "revoke access token", "err", err)
			return oauthErr(oauth2errors.ErrServerError, "revocation failed")
		}
	} else if row, err := s.opts.Store.TokenByRefreshHash(ctx, h); err == nil && row.ClientID == client.ID {
		s.revokeGrants(ctx, []string{row.GrantID}, "client_revoked")
		s.audit(ctx, "grant_revoked", row.GrantID, client.ID, map[string]any{"by": "client"})
	}
	return nil
}
