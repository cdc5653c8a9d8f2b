package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/devspace-dev/devspace/internal/buildinfo"
	"github.com/devspace-dev/devspace/internal/console"
	"github.com/devspace-dev/devspace/internal/control"
	"github.com/devspace-dev/devspace/internal/process"
	"github.com/devspace-dev/devspace/internal/store"
)

var _ console.Admin = (*App)(nil)

// passwordKey is the back-off key of console sign-ins by password: one
// attempt at a time, and the consent page's back-off after failures. A
// per-source key would mean nothing on a loopback listener.
const passwordKey = "console"

// ConsoleLink returns a one-time sign-in URL of the Owner's console
// (console.LinkTTL, one use), on the console's own address (a wildcard
// bind is reached through 127.0.0.1). control.ErrConsoleOff when the
// console is off.
func (a *App) ConsoleLink(context.Context) (string, error) {
	if a.console == nil {
		return "", control.ErrConsoleOff
	}
	host, port, err := net.SplitHostPort(a.cfg.AdminListen)
	if err != nil {
		return "", fmt.Errorf("DEVSPACE_ADMIN_LISTEN: %w", err)
	}
	if addrs := a.http.Addrs(); len(addrs) > 3 {
		_, port, _ = net.SplitHostPort(addrs[3].String())
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/signin?token=" + url.QueryEscape(a.console.NewLink()), nil
}

// ConsoleHandler exposes the console engine for in-process tests; nil when
// the console is off.
func (a *App) ConsoleHandler() http.Handler { return a.http.ConsoleHandler() }

// endConsoleSessions signs every console session out: password rotation
// and revoke-all end them with the grants.
func (a *App) endConsoleSessions() {
	if a.console != nil {
		a.console.EndSessions()
	}
}

// CheckOwnerPassword checks a console sign-in's password with the consent
// page's reservation and back-off.
func (a *App) CheckOwnerPassword(ctx context.Context, password []byte) (bool, time.Duration, error) {
	return a.oauth.CheckOwnerPassword(ctx, password, "console", passwordKey)
}

// SessionsByGrant counts the open MCP sessions per grant.
func (a *App) SessionsByGrant() map[string]int { return a.mcp.SessionsByGrant() }

// AuditEvents returns the n latest audit events, newest first.
func (a *App) AuditEvents(ctx context.Context, n int) ([]store.AuditEvent, error) {
	return a.store.RecentAudit(ctx, n)
}

// RecentClients returns the n latest registered clients, newest first.
func (a *App) RecentClients(ctx context.Context, n int) ([]*store.Client, error) {
	return a.store.RecentClients(ctx, n)
}

// Connection says where ChatGPT reaches this server.
func (a *App) Connection() console.Connection {
	c := console.Connection{MCPURL: a.cfg.Resource(), PublicURL: a.cfg.Issuer()}
	if u, err := url.Parse(a.cfg.Issuer()); err == nil {
		c.QuickTunnel = strings.HasSuffix(strings.ToLower(u.Hostname()), ".trycloudflare.com")
	}
	return c
}

// Health reports the readiness checks and the state of the sandbox, the
// limits, the disk and the output spool, as /readyz and doctor see them.
func (a *App) Health(ctx context.Context) console.Health {
	var h console.Health
	for _, rc := range a.readiness() {
		h.Checks = append(h.Checks, console.Check{Name: rc.Name, OK: rc.Check(ctx), Info: rc.Info})
	}
	fact := func(label, format string, args ...any) {
		h.Facts = append(h.Facts, console.Fact{Label: label, Value: fmt.Sprintf(format, args...)})
	}
	bi := buildinfo.Get()
	h.Version = bi.Version
	fact("Version", "%s (commit %s, %s)", bi.Version, orDash(bi.Commit), bi.GoVersion)
	if a.procs != nil {
		sb := a.procs.Sandbox()
		switch sb.Mode {
		case process.SandboxLandlock:
			fact("Command sandbox", "Landlock ABI %d; unix sockets %s; ipc %s; network %s", sb.Status.ABI, sb.UnixSockets, sb.IPC,
				map[bool]string{true: "denied", false: "allowed"}[sb.DenyNetwork])
		default:
			fact("Command sandbox", "%s (%s)", sb.Mode, sb.Status.Reason)
		}
		li := a.procs.Limits()
		fact("Command limits", "%s: %d tasks and %d MiB per command; a grant's commands %d and %d MiB; all commands %d and %d MiB",
			li.Mechanism, li.PidsMax, li.MemoryMax>>20, li.TenantPids, li.TenantMemory>>20, li.CommandsPids, li.CommandsMemory>>20)
		fact("Per-command cgroups", "%t", a.procs.CgroupEnabled())
	}
	if a.disk != nil {
		for _, fs := range a.disk.Status() {
			label := "Disk (" + fs.Role + ")"
			if fs.Role == "project" {
				label = "Disk (Project " + fs.Label + ")"
			}
			state := "fine"
			switch {
			case fs.Refusing:
				state = "under a quarter of the reserve: commands and patches refused"
			case fs.Low:
				state = "under the reserve: writers are stopped"
			}
			fact(label, "%d MiB free of %d MiB (reserve %d MiB): %s", fs.Free>>20, fs.Total>>20, a.cfg.DiskReserve>>20, state)
		}
	}
	if n, bytes, err := a.store.ProcessOutputTotals(ctx); err == nil {
		fact("Retained output", "%d record(s), %.1f MiB (kept 24 h after each command)", n, float64(bytes)/(1<<20))
	}
	if n, err := a.store.CountRunningProcessOutputs(ctx); err == nil {
		fact("Commands running", "%d", n)
	}
	return h
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// ProjectDetails lists the approved Projects with their resumable Tasks,
// managed worktrees and tool homes' sizes.
func (a *App) ProjectDetails(ctx context.Context) ([]console.ProjectDetail, error) {
	ps, err := a.ListProjects(ctx)
	if err != nil {
		return nil, err
	}
	var out []console.ProjectDetail
	for _, p := range ps {
		d := console.ProjectDetail{ProjectInfo: p}
		tasks, err := a.store.ResumableTasks(ctx, p.Ref, 20)
		if err != nil {
			return nil, fmt.Errorf("tasks of %s: %w", p.Label, err)
		}
		for _, t := range tasks {
			d.Tasks = append(d.Tasks, console.Task{Title: t.Title, Status: t.Status, Updated: t.UpdatedAt})
		}
		if a.worktrees != nil && p.Accessible && a.worktrees.Eligible(ctx, p.Path) == nil {
			r, err := a.worktrees.Check(ctx, p.Path)
			if err != nil {
				d.Problem = "Its worktrees could not be inspected; see the server log."
				a.log.WarnContext(ctx, "console: inspect worktrees", "project", p.Label, "err", err)
			} else {
				d.Worktrees, d.WorktreesKnown = r.Managed, true
			}
		}
		out = append(out, d)
	}
	return out, nil
}

// Doctor returns the doctor's findings for this server's configuration
// (the package function Doctor, as `devspace doctor` prints them).
func (a *App) Doctor(ctx context.Context) []console.Finding {
	fs := Doctor(ctx, a.cfg)
	out := make([]console.Finding, len(fs))
	for i, f := range fs {
		out[i] = console.Finding{Level: f.Level, Text: f.Text}
	}
	return out
}

// Diagnostic returns the redacted diagnostic bundle for this server's
// configuration (the package function Diagnostic, with the server's home
// directory).
func (a *App) Diagnostic(ctx context.Context) ([]byte, error) {
	home, _ := os.UserHomeDir()
	return Diagnostic(ctx, a.cfg, home)
}
