// Package console is the Owner's console: a small web application on its
// own listener (DEVSPACE_ADMIN_LISTEN, loopback by default) that shows
// what DevSpace does — connections, grants, live activity, health,
// charts, Projects — and offers the Owner's actions (revoke, revoke-all,
// rotate the password, interrupt a command) through the same App methods
// the control API and the CLI use.
//
// It is plain net/http (gin stays in httpserver, which mounts it on the
// admin listener and nowhere else). Every request is first checked to be
// addressed to the console itself (guard.go: Host, Origin,
// Sec-Fetch-Site), then to carry a session (session.go: a one-time
// sign-in link from `devspace admin`, or the Owner password with the
// consent page's back-off), and every state-changing request is a POST
// with the session's CSRF token. Pages are rendered by html/template;
// everything a client, a Project or a command wrote is text, never markup.
package console

import (
	"context"
	"embed"
	"html/template"
	"log/slog"
	"net/http"
	"time"

	"github.com/devspace-dev/devspace/internal/control"
	"github.com/devspace-dev/devspace/internal/oauth"
	"github.com/devspace-dev/devspace/internal/store"
)

// static holds the console's stylesheet and script, its only assets;
// templates its pages.
//
//go:embed static
var static embed.FS

//go:embed templates
var templates embed.FS

// Admin is what the console needs of the running server for the Owner's
// actions and the pages that are not activity; app.App implements it.
// Grants, revocation and password rotation are the control API's own
// methods, so their audit events are the same.
type Admin interface {
	ListGrants(ctx context.Context, all bool) ([]oauth.GrantSummary, error)
	RevokeGrant(ctx context.Context, id string) error
	RevokeAll(ctx context.Context) (int, error)
	RotatePassword(ctx context.Context, password []byte) (int, error)
	// CheckOwnerPassword verifies the Owner password with the consent
	// page's reservation and back-off (oauth.Server.CheckOwnerPassword);
	// retryAfter > 0 means refused without checking.
	CheckOwnerPassword(ctx context.Context, password []byte) (ok bool, retryAfter time.Duration, err error)
	// SessionsByGrant counts the open MCP sessions per grant ID.
	SessionsByGrant() map[string]int
	// AuditEvents returns the n latest audit events, newest first.
	AuditEvents(ctx context.Context, n int) ([]store.AuditEvent, error)
	// RecentClients returns the n latest registered clients, newest first.
	RecentClients(ctx context.Context, n int) ([]*store.Client, error)
	// Connection says where ChatGPT reaches this server.
	Connection() Connection
	// Health reports readiness, the sandbox, limits, disk and build.
	Health(ctx context.Context) Health
	// Doctor returns the doctor's findings, as `devspace doctor` prints them.
	Doctor(ctx context.Context) []Finding
	// Diagnostic returns the redacted `devspace diagnostic` bundle (JSON).
	Diagnostic(ctx context.Context) ([]byte, error)
	// ProjectDetails lists the approved Projects with their saved Tasks,
	// managed worktrees and the size of their tool homes.
	ProjectDetails(ctx context.Context) ([]ProjectDetail, error)
	// ClearTools empties the tool home of the Project labelled label, as
	// `devspace projects clear-tools` does (control.ErrProjectNotFound for
	// an unknown label).
	ClearTools(ctx context.Context, label string) (control.ClearToolsResult, error)
	// OrphanTools measures the tool homes no configured Project has, and
	// ClearOrphanTools removes them (`devspace projects clear-tools
	// --orphans`; control.ErrOrphansUnsure, wrapped, when a Project is not
	// accessible).
	OrphanTools(ctx context.Context) (control.OrphanTools, error)
	ClearOrphanTools(ctx context.Context) (control.ClearToolsResult, error)
}

// Connection is what the Connect page shows.
type Connection struct {
	// MCPURL is the exact URL to paste into ChatGPT (public URL + /mcp).
	MCPURL string
	// PublicURL is the public origin in force.
	PublicURL string
	// QuickTunnel is set when PublicURL is a cloudflared quick tunnel's
	// (it changes whenever cloudflared restarts).
	QuickTunnel bool
}

// Health is what the Health page shows besides the doctor.
type Health struct {
	Checks  []Check
	Facts   []Fact // sandbox, limits, disk, spool, build: label → value
	Version string
}

// Check is one readiness check; Info checks do not make the server unready.
type Check struct {
	Name     string
	OK, Info bool
}

// Fact is one labelled line of state.
type Fact struct{ Label, Value string }

// Finding is one line of the doctor: Level is "ok", "warn" or "problem".
type Finding struct{ Level, Text string }

// ProjectDetail is one approved Project as the Projects page shows it.
type ProjectDetail struct {
	control.ProjectInfo
	Tasks []Task
	// Worktrees counts its managed worktrees; WorktreesKnown is false where
	// it cannot have any (not a Git top level) or they could not be read.
	Worktrees      int
	WorktreesKnown bool
	// Problem is why Tasks or Worktrees could not be read ("" when fine).
	Problem string
}

// Task is one saved Task of a Project.
type Task struct {
	Title, Status string
	Updated       time.Time
}

// Options configure a Console. Admin is required; Activity and Charts may
// be nil (their pages then say the activity source is not available).
type Options struct {
	Admin    Admin
	Activity Activity
	Charts   ChartRenderer
	// ListenAddr is the configured DEVSPACE_ADMIN_LISTEN: its host, when
	// it is a specific one, is accepted in Host besides the loopback names.
	ListenAddr string
	Logger     *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Console is the console's handler and its in-memory sign-in state. Safe
// for concurrent use.
type Console struct {
	opts  Options
	log   *slog.Logger
	now   func() time.Time
	auth  *sessions
	pages map[string]*template.Template
	mux   *http.ServeMux
}

// New builds a Console.
func New(opts Options) *Console {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Console{opts: opts, log: log.With("component", "console"), now: opts.Now}
	c.auth = newSessions(opts.Now)
	c.pages = parsePages()
	c.mux = c.routes()
	return c
}

// NewLink returns a fresh one-time sign-in token: 256 random bits, valid
// for LinkTTL and one use; only its hash is kept.
func (c *Console) NewLink() string { return c.auth.newLink() }

// EndSessions signs every console session out and forgets every sign-in
// link (password rotation and revoke-all call it).
func (c *Console) EndSessions() { c.auth.endAll() }

// ServeHTTP answers a console request: the guard, the security headers,
// then the route.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	if reason := c.refuse(r); reason != "" {
		c.log.WarnContext(r.Context(), "console request refused", "reason", reason, "method", r.Method)
		http.Error(w, "This request is not addressed to the DevSpace console.", http.StatusForbidden)
		return
	}
	c.mux.ServeHTTP(w, r)
}

// securityHeaders are on every answer: no script, style or image but the
// console's own, no framing, no referrer, nothing cached.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}
