package oauth

import (
	"context"
	"errors"
	"fmt"
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
	// RedirectHost is the host its authorization code returned to ("" when
	// its token rows were pruned).
	RedirectHost string `json:"redirectHost,omitempty"`
	// LastIssuedAt is when it was last given a token (code, exchange or
	// refresh); nil when unknown.
	LastIssuedAt *time.Time `json:"lastIssuedAt,omitempty"`
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
	uses, err := s.opts.Store.GrantUses(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]GrantSummary, 0, len(grants))
	for _, g := range grants {
		gs := GrantSummary{ID: g.ID, ClientID: g.ClientID, ClientName: g.ClientName, Scopes: g.Scopes,
			CreatedAt: g.CreatedAt, ExpiresAt: g.ExpiresAt, RevokedAt: g.RevokedAt, RevokeReason: g.RevokeReason}
		if u, ok := uses[g.ID]; ok {
			gs.RedirectHost = redirectHost(u.RedirectURI)
			if !u.LastIssued.IsZero() {
				gs.LastIssuedAt = &u.LastIssued
			}
		}
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
// leaves every other grant untouched. The revocation holds in this server
// first: the grant's tokens are refused and its commands stopped (their
// scratch removed, which may be what frees a full disk), then it is
// written. A write that fails returns ErrNotRecorded (wrapped) and is
// retried until it lands.
func (s *Server) RevokeGrant(ctx context.Context, id string) error {
	g, err := s.opts.Store.Grant(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return ErrGrantNotFound
	}
	if err != nil {
		return err
	}
	err = s.revokeGrants(ctx, []string{id}, "owner_revoked")
	s.audit(ctx, "grant_revoked", id, g.ClientID, map[string]any{"by": "owner"})
	return err
}

// RevokeAll is the global emergency action: it bumps the global epoch so
// every token and execution dies. Registered clients are kept. reason is
// "revoke_all" or "password_rotated". Like RevokeGrant it holds in memory
// first (every grant of the current epoch is refused and its commands
// stopped), then writes; it counts the grants that were active.
func (s *Server) RevokeAll(ctx context.Context, reason string) (int, error) {
	epoch, err := s.opts.Store.GlobalEpoch(ctx)
	if err != nil {
		return 0, err
	}
	active, err := s.opts.Store.Grants(ctx, false)
	if err != nil {
		return 0, err
	}
	ids := make([]string, 0, len(active))
	for _, g := range active {
		ids = append(ids, g.ID)
	}
	s.dead.raiseFloor(epoch + 1)
	// Consent forms filled in under the old epoch approve nothing either
	// (consentDecision checks the epoch); drop them now.
	s.mu.Lock()
	clear(s.selections)
	s.mu.Unlock()
	s.closeExecutions(ctx, ids)
	write := func(ctx context.Context) error {
		_, _, err := s.opts.Store.BumpGlobalEpoch(ctx, reason)
		return err
	}
	if err := write(ctx); err != nil {
		s.log.ErrorContext(ctx, "record the global epoch bump", "err", err)
		s.RecordLater(reason, write)
		return len(ids), fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	s.audit(ctx, reason, "", "", map[string]any{"grants": len(ids)})
	return len(ids), nil
}

// revokeGrants revokes grants in memory, lets the execution layer close
// what they own, then records the revocation.
func (s *Server) revokeGrants(ctx context.Context, ids []string, reason string) error {
	for _, id := range ids {
		s.dead.revokeGrant(id)
	}
	s.closeExecutions(ctx, ids)
	var failed error
	for _, id := range ids {
		write := func(ctx context.Context) error {
			_, err := s.opts.Store.RevokeGrant(ctx, id, reason)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			return err
		}
		if err := write(ctx); err != nil {
			s.log.ErrorContext(ctx, "record grant revocation", "grant_ref", s.ref(id), "err", err)
			s.RecordLater("grant "+s.ref(id), write)
			failed = fmt.Errorf("%w: %w", ErrNotRecorded, err)
		}
	}
	return failed
}

// closeExecutions closes what the revoked grants had open; a failure is
// logged (the grants are revoked whatever happens here, and their tokens
// no longer verify).
func (s *Server) closeExecutions(ctx context.Context, grantIDs []string) {
	if err := s.opts.Executions.CloseGrants(ctx, grantIDs, "grant_revoked"); err != nil {
		s.log.ErrorContext(ctx, "close executions of revoked grants", "err", err)
	}
}
