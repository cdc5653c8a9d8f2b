package oauth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/devspace-dev/devspace/internal/store"
)

// Verification errors. Verify returns one of these (wrapped); the MCP edge
// maps every one to a 401 with a WWW-Authenticate challenge.
var (
	ErrTokenInvalid  = errors.New("invalid token")
	ErrTokenExpired  = errors.New("token expired")
	ErrTokenRevoked  = errors.New("token revoked")
	ErrWrongAudience = errors.New("token issued for another resource")
)

// Principal is what a verified bearer token authorizes.
type Principal struct {
	GrantID     string
	ClientID    string
	ClientName  string   // the client's registered name: untrusted text, for display only
	Scopes      []string // the token's scopes (never wider than the grant's)
	ProjectIDs  []string // projectRefs the grant was approved for
	Epoch       int64    // the grant's authorization epoch
	GlobalEpoch int64
	ExpiresAt   time.Time // access-token expiry
}

// HasScope reports whether the principal holds scope.
func (p *Principal) HasScope(scope string) bool {
	for _, s := range p.Scopes {
		if s == scope {
			return true
		}
	}
	return false
}

// Verify turns a bearer token into its Principal. It checks the token
// (known, not revoked, not expired, issued for our resource) and its grant
// (active, not expired, current global epoch). A token verified before is
// answered from memory (verifyCache) as long as no write that could change
// the answer has committed since; the caller owns the returned Principal.
func (s *Server) Verify(ctx context.Context, token string) (*Principal, error) {
	if !strings.HasPrefix(token, prefixAccess) || len(token) > 128 {
		return nil, ErrTokenInvalid
	}
	hash := hashSecret(token)
	// Read the generation before the rows: a write committing after this
	// load advances it, and the entry put below is then never served.
	gen := s.opts.Store.AuthGeneration()
	if p, ok := s.verified.get(hash, gen, s.now()); ok {
		s.fromCache.Inc()
		if s.dead.revoked(p.GrantID, p.GlobalEpoch) {
			return nil, ErrTokenRevoked
		}
		return p, nil
	}
	s.fromStore.Inc()
	p, grantExpires, err := s.verifyStored(ctx, hash)
	if err != nil {
		return nil, err
	}
	s.verified.put(hash, gen, p, grantExpires)
	return p, nil
}

// verifyStored is Verify reading the token's rows from the store. It
// returns the Principal and the grant's expiry (zero when none).
func (s *Server) verifyStored(ctx context.Context, hash string) (*Principal, time.Time, error) {
	ag, err := s.opts.Store.AccessTokenGrant(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return nil, time.Time{}, ErrTokenInvalid
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("verify token: %w", err)
	}
	row, g := ag.Token, ag.Grant
	if row.RevokedAt != nil || row.AccessRevokedAt != nil {
		return nil, time.Time{}, ErrTokenRevoked
	}
	if row.AccessExpiresAt != nil && !s.now().Before(*row.AccessExpiresAt) {
		return nil, time.Time{}, ErrTokenExpired
	}
	if row.Resource != s.opts.Resource {
		return nil, time.Time{}, ErrWrongAudience
	}
	if err := s.grantUsable(g, ag.GlobalEpoch); err != nil {
		return nil, time.Time{}, err
	}
	p := &Principal{GrantID: g.ID, ClientID: g.ClientID, ClientName: g.ClientName, ProjectIDs: g.ProjectIDs, Epoch: g.Epoch, GlobalEpoch: g.GlobalEpoch}
	if row.AccessExpiresAt != nil {
		p.ExpiresAt = *row.AccessExpiresAt
	}
	for _, sc := range parseScopes(row.Scope) {
		for _, gs := range g.Scopes {
			if sc == gs {
				p.Scopes = append(p.Scopes, sc)
			}
		}
	}
	var grantExpires time.Time
	if g.ExpiresAt != nil {
		grantExpires = *g.ExpiresAt
	}
	return p, grantExpires, nil
}

// grantUsable reports why a grant can no longer authorize anything.
func (s *Server) grantUsable(g *store.Grant, globalEpoch int64) error {
	switch {
	case g.RevokedAt != nil, g.GlobalEpoch != globalEpoch, s.dead.revoked(g.ID, g.GlobalEpoch):
		return ErrTokenRevoked
	case g.ExpiresAt != nil && !s.now().Before(*g.ExpiresAt):
		return ErrTokenExpired
	}
	return nil
}

// ResourceMetadataURL is the protected-resource metadata URL named in
// WWW-Authenticate challenges.
func (s *Server) ResourceMetadataURL() string {
	return s.opts.Issuer + "/.well-known/oauth-protected-resource/mcp"
}

// Challenge builds a WWW-Authenticate value (RFC 6750 §3, RFC 9728 §5.1).
// errCode is "" (no credentials), "invalid_token" or "insufficient_scope";
// scopes name what the request needs (the offered baseline when nil).
func (s *Server) Challenge(errCode, description string, scopes []string) string {
	if scopes == nil {
		scopes = s.opts.Scopes
	}
	var b strings.Builder
	fmt.Fprintf(&b, `Bearer resource_metadata="%s", scope="%s"`, s.ResourceMetadataURL(), strings.Join(scopes, " "))
	if errCode != "" {
		fmt.Fprintf(&b, `, error="%s"`, errCode)
	}
	if description != "" {
		fmt.Fprintf(&b, `, error_description="%s"`, strings.NewReplacer(`"`, `'`, `\`, `/`).Replace(description))
	}
	return b.String()
}

// ChallengeFor returns the challenge matching a Verify error.
func (s *Server) ChallengeFor(err error) string {
	switch {
	case errors.Is(err, ErrTokenExpired):
		return s.Challenge("invalid_token", "the access token expired", nil)
	case errors.Is(err, ErrTokenRevoked):
		return s.Challenge("invalid_token", "the access token was revoked", nil)
	case errors.Is(err, ErrWrongAudience):
		return s.Challenge("invalid_token", "the access token is for another resource", nil)
	default:
		return s.Challenge("invalid_token", "the access token is invalid", nil)
	}
}
