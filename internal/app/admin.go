package app

import (
	"context"
	"fmt"

	"github.com/devspace-dev/devspace/internal/control"
	"github.com/devspace-dev/devspace/internal/httpserver"
	"github.com/devspace-dev/devspace/internal/oauth"
)

var _ httpserver.Admin = (*App)(nil)

// ListGrants lists grants for the control API and the CLI.
func (a *App) ListGrants(ctx context.Context, all bool) ([]oauth.GrantSummary, error) {
	return a.oauth.ListGrants(ctx, all)
}

// RevokeGrant revokes one grant.
func (a *App) RevokeGrant(ctx context.Context, id string) error {
	return a.oauth.RevokeGrant(ctx, id)
}

// RevokeAll ends every grant (global epoch bump).
func (a *App) RevokeAll(ctx context.Context) (int, error) {
	return a.oauth.RevokeAll(ctx, "revoke_all")
}

// RotatePassword sets a new Owner password, then ends every grant.
// Registered clients stay, so hosts can re-authorize without registering.
func (a *App) RotatePassword(ctx context.Context, password []byte) (int, error) {
	if err := a.auth.SetPassword(password); err != nil {
		return 0, fmt.Errorf("set password: %w", err)
	}
	return a.oauth.RevokeAll(ctx, "password_rotated")
}

// ListProjects is Projects for the CLI's adminAPI.
func (a *App) ListProjects(context.Context) ([]control.ProjectInfo, error) { return a.Projects(), nil }

// Projects lists configured Projects with their accessibility.
func (a *App) Projects() []control.ProjectInfo {
	ok := a.catalog.CheckAccessible()
	var out []control.ProjectInfo
	for _, r := range a.catalog.Roots() {
		out = append(out, control.ProjectInfo{Ref: r.Ref, Label: r.Label, Path: r.Path, Accessible: ok[r.Ref]})
	}
	return out
}

// RecentAudit returns the kinds of the latest audit events, newest first
// (diagnostics and tests).
func (a *App) RecentAudit(ctx context.Context) ([]string, error) {
	events, err := a.store.RecentAudit(ctx, 100)
	if err != nil {
		return nil, err
	}
	kinds := make([]string, len(events))
	for i, e := range events {
		kinds[i] = e.Kind
	}
	return kinds, nil
}

// OpenExecutions counts executions that are not closed (diagnostics, tests).
func (a *App) OpenExecutions(ctx context.Context) (int64, error) {
	return a.store.CountOpenExecutions(ctx)
}
