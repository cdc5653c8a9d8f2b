package oauth

import (
	"context"
	"errors"
	"time"

	"github.com/devspace-dev/devspace/internal/store"
)

// ErrGrantNotFound is returned by RevokeGrant for an unknown grant ID.
var ErrGrantNotFound = errors.New("grant not found")

// GrantSummary describes a grant for `devspace grants list`.
type GrantSummary struct {
	ID           string         `json:"id"`
	ClientID     string         `json:"clientId"`
	ClientName   string         `json:"clientName"`
	Scopes       []string       `json:"scopes"`
	Projects     []GrantProject `json:"projects"`
	CreatedAt    time.Time      `json:"createdAt"`
	ExpiresAt    *time.Time     `json:"expiresAt,omitempty"`
	RevokedAt    *time.Time     `json:"revokedAt,omitempty"`
	RevokeReason string         `json:"revokeReason,omitempty"`
}

// GrantProject names one Project of a grant.
type GrantProject struct {
	Ref   string `json:"projectRef"`
	Label string `json:"label"` // "" when the Project is no longer configured
}

// ListGrants returns active grants (all grants when all is true), newest
// first.
func (s *Server) ListGrants(ctx context.Context, all bool) ([]GrantSummary, error) {
	grants, err := s.opts.Store.Grants(ctx, all)
	if err != nil {
		return nil, err
	}
	out := make([]GrantSummary, 0, len(grants))
	for _, g := range grants {
		gs := GrantSummary{ID: g.ID, ClientID: g.ClientID, ClientName: g.ClientName, Scopes: g.Scopes,
			CreatedAt: g.CreatedAt, ExpiresAt: g.ExpiresAt, RevokedAt: g.RevokedAt, RevokeReason: g.RevokeReason}
		for _, ref := range g.ProjectIDs {
			p := GrantProject{Ref: ref}
			if root, ok := s.opts.Projects.Lookup(ref); ok {
				p.Label = root.Label
			}
			gs.Projects = append(gs.Projects, p)
		}
		out = append(out, gs)
	}
	return out, nil
}

// RevokeGrant revokes one grant (its tokens, executions and processes) and
// leaves every other grant untouched.
func (s *Server) RevokeGrant(ctx context.Context, id string) error {
	g, err := s.opts.Store.Grant(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return ErrGrantNotFound
	}
	if err != nil {
		return err
	}
	if err := s.revokeGrants(ctx, []string{id}, "owner_revoked"); err != nil {
		return err
	}
	s.audit(ctx, "grant_revoked", id, g.ClientID, map[string]any{"by": "owner"})
	return nil
}

// RevokeAll is the global emergency action: it bumps the global epoch so
// every token and execution dies. Registered clients are kept. reason is
// "revoke_all" or "password_rotated".
func (s *Server) RevokeAll(ctx context.Context, reason string) (int, error) {
	_, ids, err := s.opts.Store.BumpGlobalEpoch(ctx, reason)
	if err != nil {
		return 0, err
	}
	// Consent forms filled in under the old epoch approve nothing either
	// (consentDecision checks the epoch); drop them now.
	s.mu.Lock()
	clear(s.selections)
	s.mu.Unlock()
	s.closeExecutions(ctx, ids)
	s.audit(ctx, reason, "", "", map[string]any{"grants": len(ids)})
	return len(ids), nil
}

// revokeGrants revokes grants in the store, then lets the execution layer
// close what they own.
func (s *Server) revokeGrants(ctx context.Context, ids []string, reason string) error {
	var revoked []string
	for _, id := range ids {
		changed, err := s.opts.Store.RevokeGrant(ctx, id, reason)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			s.log.ErrorContext(ctx, "revoke grant", "grant_ref", s.ref(id), "err", err)
			return err
		}
		if changed {
			revoked = append(revoked, id)
		}
	}
	if len(revoked) > 0 {
		s.closeExecutions(ctx, revoked)
	}
	return nil
}

// closeExecutions closes what the revoked grants had open; a failure is
// logged (the grants are revoked whatever happens here, and their tokens
// no longer verify).
func (s *Server) closeExecutions(ctx context.Context, grantIDs []string) {
	if err := s.opts.Executions.CloseGrants(ctx, grantIDs, "grant_revoked"); err != nil {
		s.log.ErrorContext(ctx, "close executions of revoked grants", "err", err)
	}
}
