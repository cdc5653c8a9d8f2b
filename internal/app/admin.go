package app

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/devspace-dev/devspace/internal/authstate"
	"github.com/devspace-dev/devspace/internal/control"
	"github.com/devspace-dev/devspace/internal/diskguard"
	"github.com/devspace-dev/devspace/internal/httpserver"
	"github.com/devspace-dev/devspace/internal/oauth"
	"github.com/devspace-dev/devspace/internal/process"
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

// RevokeAll ends every grant (global epoch bump). Every console session ends with them.
func (a *App) RevokeAll(ctx context.Context) (int, error) {
	defer a.endConsoleSessions()
	return a.oauth.RevokeAll(ctx, "revoke_all")
}

// RotatePassword sets a new Owner password, then ends every grant.
// Registered clients stay, so hosts can re-authorize without registering.
// Both hold in this process first: on a full disk the password
// is written after revoke-all stopped the grants' commands and removed
// their scratch, with the store's reserve if need be, and retried until
// it lands (oauth.ErrNotRecorded).
//
// Every console session ends with them.
func (a *App) RotatePassword(ctx context.Context, password []byte) (int, error) {
	defer a.endConsoleSessions()
	perr := a.auth.SetPassword(password)
	if perr != nil && !errors.Is(perr, authstate.ErrNotWritten) {
		return 0, fmt.Errorf("set password: %w", perr)
	}
	n, err := a.oauth.RevokeAll(ctx, "password_rotated")
	if perr == nil {
		return n, err
	}
	persist := func(context.Context) error { return a.store.Emergency(a.auth.Persist) }
	if perr = persist(ctx); perr != nil {
		a.oauth.RecordLater("owner password", persist)
		return n, fmt.Errorf("%w: owner password: %w", oauth.ErrNotRecorded, perr)
	}
	return n, err
}

// ListProjects is Projects with the size of each accessible Project's
// tool home (`devspace projects list`; it walks them).
func (a *App) ListProjects(context.Context) ([]control.ProjectInfo, error) {
	out := a.Projects()
	for i, p := range out {
		if dir, ok := a.toolHome(p.Ref); ok {
			n := diskguard.Size(dir)
			out[i].ToolsBytes = &n
		}
	}
	return out, nil
}

// toolHome is the tool home of the Project ref as its root is now (the
// directory its commands get: process.ToolHome of its fingerprint); ok is
// false when the Project is unknown or not accessible.
func (a *App) toolHome(ref string) (string, bool) {
	root, ok := a.catalog.Lookup(ref)
	if !ok {
		return "", false
	}
	fp, err := root.Fingerprint(a.auth.Derive(purposeRootFinger))
	if err != nil {
		return "", false
	}
	return process.ToolHome(a.cfg.ToolsDir, fp), true
}

// ClearTools empties the tool home of the Project labelled label: the
// running server's commands that could write it are stopped first
// (tools_cleared); without a server (OpenState) it is only emptied. The
// CLI and the console both come here, and it is audited as tools_cleared
// by the owner. It returns control.ErrProjectNotFound for an unknown
// label, and an error when the Project is not accessible (its tool home
// is found through its root's fingerprint).
func (a *App) ClearTools(ctx context.Context, label string) (control.ClearToolsResult, error) {
	for _, r := range a.catalog.Roots() {
		if r.Label != label {
			continue
		}
		dir, ok := a.toolHome(r.Ref)
		if !ok {
			return control.ClearToolsResult{}, fmt.Errorf("project %s is not accessible, so its tool home cannot be found", label)
		}
		res := control.ClearToolsResult{FreedBytes: diskguard.Size(dir)}
		if a.procs != nil {
			res.Stopped = a.procs.ClearTools(dir)
		} else {
			process.EmptyToolHome(dir)
		}
		res.FreedBytes -= diskguard.Size(dir)
		a.log.Info("tool home cleared by the Owner", "project", label, "freed_bytes", res.FreedBytes, "stopped", res.Stopped)
		// The label is the Owner's own configuration, not a grant's text.
		a.oauth.AuditOwner(ctx, "tools_cleared", "", map[string]any{"project": label, "freed_bytes": res.FreedBytes, "stopped": res.Stopped})
		return res, nil
	}
	return control.ClearToolsResult{}, control.ErrProjectNotFound
}

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

// orphanTools lists the tool homes no configured Project has, and names
// the first configured Project that is not accessible (whose tool home
// would look orphaned: its fingerprint cannot be read). A tool home a
// live command holds is never an orphan (a command of an execution bound
// to a root since replaced).
func (a *App) orphanTools() (dirs []string, unsure string, err error) {
	known := map[string]bool{}
	for _, p := range a.Projects() {
		dir, ok := a.toolHome(p.Ref)
		if !ok {
			if unsure == "" {
				unsure = p.Label
			}
			continue
		}
		known[dir] = true
	}
	if a.procs != nil {
		for _, c := range a.procs.Commands() {
			// A readOnly command holds its tool home too: it runs its
			// tools from there (Tools is only the one it may write).
			known[c.ToolHome] = true
		}
	}
	all, err := process.ToolHomes(a.cfg.ToolsDir)
	if err != nil {
		return nil, "", fmt.Errorf("list tool homes: %w", err)
	}
	for _, d := range all {
		if !known[d] {
			dirs = append(dirs, d)
		}
	}
	return dirs, unsure, nil
}

// OrphanTools counts and measures the tool homes no configured Project
// has (`devspace projects list`, the console's Projects page).
func (a *App) OrphanTools(context.Context) (control.OrphanTools, error) {
	dirs, unsure, err := a.orphanTools()
	if err != nil {
		return control.OrphanTools{}, err
	}
	out := control.OrphanTools{Count: len(dirs), Unsure: unsure}
	for _, d := range dirs {
		out.Bytes += diskguard.Size(d)
	}
	return out, nil
}

// ClearOrphanTools removes the tool homes no configured Project has
// (`devspace projects clear-tools --orphans`, the console), audited as
// tools_cleared by the owner. With a configured Project not accessible it
// removes nothing: control.ErrOrphansUnsure.
func (a *App) ClearOrphanTools(ctx context.Context) (control.ClearToolsResult, error) {
	dirs, unsure, err := a.orphanTools()
	if err != nil {
		return control.ClearToolsResult{}, err
	}
	if unsure != "" && len(dirs) > 0 {
		return control.ClearToolsResult{}, fmt.Errorf("project %s: %w", unsure, control.ErrOrphansUnsure)
	}
	// With no Project configured every tool home looks orphaned, and an
	// emptied DEVSPACE_PROJECTS is likelier a mistake than the Owner's
	// wish to lose every toolchain: nothing is removed.
	if len(a.Projects()) == 0 && len(dirs) > 0 {
		return control.ClearToolsResult{}, fmt.Errorf("no Project is configured (DEVSPACE_PROJECTS): %w", control.ErrOrphansUnsure)
	}
	var res control.ClearToolsResult
	for _, d := range dirs {
		size := diskguard.Size(d)
		process.RemoveToolHome(d)
		if _, err := os.Lstat(d); err == nil {
			a.log.Warn("an orphaned tool home could not be removed whole", "dir", d)
			size -= diskguard.Size(d)
		} else {
			res.Removed++
		}
		res.FreedBytes += size
	}
	a.log.Info("orphaned tool homes removed by the Owner", "removed", res.Removed, "freed_bytes", res.FreedBytes)
	a.oauth.AuditOwner(ctx, "tools_cleared", "", map[string]any{"orphans": res.Removed, "freed_bytes": res.FreedBytes})
	return res, nil
}
