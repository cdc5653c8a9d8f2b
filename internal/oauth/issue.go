package oauth

import (
	"context"
	"strings"
	"time"

	oauth2 "github.com/go-oauth2/oauth2/v4"

	"github.com/devspace-dev/devspace/internal/store"
)

// Issuance. Every credential is a fresh randomValue with its kind's prefix,
// and only its hash is stored. Its row is stamped with Server.now and its
// lifetime comes from Options, so the token endpoint and Verify, which read
// the same clock, compare values of that clock only.

// issueCode stores a new authorization code for the stored grant g, bound
// to req's client, redirect URI and PKCE challenge and living
// Options.CodeTTL, and returns it.
func (s *Server) issueCode(ctx context.Context, req *authRequest, g *store.Grant) (string, error) {
	code := randomValue(prefixCode)
	now := s.now()
	err := s.opts.Store.CreateToken(ctx, &store.Token{GrantID: g.ID, ClientID: req.clientID,
		Scope: strings.Join(g.Scopes, " "), RedirectURI: req.redirectURI, Resource: s.opts.Resource,
		CodeHash: hashSecret(code), CodeChallenge: req.codeChallenge, CodeChallengeMethod: oauth2.CodeChallengeS256.String(),
		CodeCreatedAt: &now, CodeExpiresAt: expiry(now, s.opts.CodeTTL)})
	if err != nil {
		return "", err
	}
	return code, nil
}

// newPair makes a fresh access/refresh pair that continues from's grant,
// client and redirect URI with scope. It returns the row to store (which
// credential it consumes is the caller's to say) and the answer that hands
// the pair to the client; nothing is stored yet.
func (s *Server) newPair(from *store.Token, scope string) (*store.Token, *tokenResponse) {
	now := s.now()
	access, refresh := randomValue(prefixAccess), randomValue(prefixRefresh)
	row := &store.Token{GrantID: from.GrantID, ClientID: from.ClientID, Scope: scope,
		RedirectURI: from.RedirectURI, Resource: s.opts.Resource,
		AccessHash: hashSecret(access), AccessCreatedAt: &now, AccessExpiresAt: expiry(now, s.opts.AccessTTL),
		RefreshHash: hashSecret(refresh), RefreshCreatedAt: &now, RefreshExpiresAt: expiry(now, s.opts.RefreshTTL)}
	return row, &tokenResponse{AccessToken: access, TokenType: "Bearer",
		ExpiresIn: int64(s.opts.AccessTTL / time.Second), RefreshToken: refresh, Scope: scope}
}

// expiry is created+ttl, or nil (no expiry) when ttl is not positive.
func expiry(created time.Time, ttl time.Duration) *time.Time {
	if ttl <= 0 {
		return nil
	}
	t := created.Add(ttl)
	return &t
}
