// Package app wires DevSpace together: configuration, state, keys, the
// OAuth server, the HTTP listeners and metrics. It prints nothing: the
// Owner's command line (internal/cli) builds an App with New to serve, or
// with OpenState to act on the state directory when no server answers,
// and asks it what a server with a configuration would have (SandboxState,
// LimitsState, DiskStatus, OutputDir, ScratchDir, WorktreeDir, LastPrune).
package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/devspace-dev/devspace/internal/activity"
	"github.com/devspace-dev/devspace/internal/authstate"
	"github.com/devspace-dev/devspace/internal/clientmeta"
	"github.com/devspace-dev/devspace/internal/commands"
	"github.com/devspace-dev/devspace/internal/config"
	"github.com/devspace-dev/devspace/internal/console"
	"github.com/devspace-dev/devspace/internal/control"
	"github.com/devspace-dev/devspace/internal/cursor"
	"github.com/devspace-dev/devspace/internal/diskguard"
	"github.com/devspace-dev/devspace/internal/edits"
	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/gitrepo"
	"github.com/devspace-dev/devspace/internal/httpserver"
	"github.com/devspace-dev/devspace/internal/idempotency"
	"github.com/devspace-dev/devspace/internal/mcpserver"
	"github.com/devspace-dev/devspace/internal/metrics"
	"github.com/devspace-dev/devspace/internal/oauth"
	"github.com/devspace-dev/devspace/internal/patch"
	"github.com/devspace-dev/devspace/internal/process"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/ratelimit"
	"github.com/devspace-dev/devspace/internal/reads"
	"github.com/devspace-dev/devspace/internal/rootlock"
	"github.com/devspace-dev/devspace/internal/sandbox"
	"github.com/devspace-dev/devspace/internal/skills"
	"github.com/devspace-dev/devspace/internal/store"
	"github.com/devspace-dev/devspace/internal/tasks"
	"github.com/devspace-dev/devspace/internal/undo"
	"github.com/devspace-dev/devspace/internal/worktree"
)

// Key purposes derived from the master key. Changing one invalidates what
// it protects (projectRefs, audit references, the control key).
const (
	purposeProjectRef = "project-ref"
	purposeAuditRef   = "audit-ref"
	purposeCursor     = "cursor-hmac"
	purposeIdentity   = "identity-ref"
	purposeRootFinger = "root-fingerprint"
)

// The commands service is what executions own besides their records.
var (
	_ executions.Resources  = (*commands.Service)(nil)
	_ commands.Checkpointer = (*executions.Activity)(nil)
)

// Options are test and embedding hooks; the zero value is production.
type Options struct {
	// AllowLoopbackMetadata lets client ID metadata documents be fetched
	// from loopback (tests only).
	AllowLoopbackMetadata bool
	// MetadataHTTPClient is used with AllowLoopbackMetadata (tests only).
	MetadataHTTPClient any
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// SupervisorPath is the binary run as each command's supervisor (with
	// the hidden __supervise subcommand); empty means this executable.
	SupervisorPath string
	// SandboxProbe replaces the kernel's Landlock probe (tests force
	// "unavailable" with it); nil asks the kernel.
	SandboxProbe func() sandbox.Status
	// OnStatement is passed to the store (store.Options.OnStatement):
	// tests count a call path's SQL statements with it; nil means none.
	OnStatement func(sql string)
	// Settle is how long after Start the background work begins
	// (StartBackground); zero means Settle (250 ms). Tests lengthen it.
	Settle time.Duration
}

// App is a wired DevSpace instance.
type App struct {
	cfg         *config.Config
	log         *slog.Logger
	store       *store.Store
	auth        *authstate.State
	catalog     *project.Catalog
	metrics     *metrics.Metrics
	oauth       *oauth.Server
	bindings    *executions.Service
	procs       *process.Manager
	outputs     *commands.OutputRecords
	disk        *diskguard.Guard // nil when no command can run
	snapshots   *undo.Store
	commands    *commands.Service
	bg          context.Context    // background work: sweeps, the worktree prune
	stopBg      context.CancelFunc // ends bg
	pruneBegin  func()             // starts the startup worktree prune
	pruned      <-chan struct{}    // closed when the startup worktree prune is done
	settled     *time.Timer        // runs StartBackground after Start
	settleAfter time.Duration      // Options.Settle
	background  sync.Once          // StartBackground
	mcp         *mcpserver.Server
	worktrees   *worktree.Manager // nil without a server or a worktree directory
	console     *console.Console  // nil when DEVSPACE_ADMIN_LISTEN is off
	http        *httpserver.Server
	activity    *activity.Recorder // tool calls and commands running, for the console
	now         func() time.Time   // Options.Now, else time.Now
	statePruned chan struct{}      // closed when pruneStateLoop has returned; nil until it starts
}

// ErrNotInitialized means the configured state directory holds no
// DevSpace state (no auth.json). New and the owner commands return an
// error wrapping it that names the directory and says what to do: point
// DEVSPACE_STATE_DIR at the state a server already uses, or run
// `devspace init`.
var ErrNotInitialized = errors.New("no DevSpace state")

// NotInitialized returns the error for cfg's missing state: New and
// OpenState return it, and the owner commands and doctor say the same. It
// wraps ErrNotInitialized and explains without sending the owner to create
// a second state when a server already runs with another: it names the
// directory and, first, the state-directory choice.
func NotInitialized(ctx context.Context, cfg *config.Config) error {
	return fmt.Errorf("%w in %s: %s", ErrNotInitialized, cfg.StateDir, stateDirHint(ctx, cfg))
}

// stateDirHint is what to do about a missing state: the error of the
// owner commands and serve, and doctor's line, say the same. A DevSpace
// server answering on the control address serves another state (this one
// does not exist), so the hint then names that server.
func stateDirHint(ctx context.Context, cfg *config.Config) string {
	if control.ServesOtherState(ctx, cfg.ControlListen, nil) {
		return fmt.Sprintf("a DevSpace server answers on %s with another state; set DEVSPACE_STATE_DIR (or --state-dir) "+
			"to the directory it serves (`make run` uses .data/state in its checkout)", cfg.ControlListen)
	}
	return "if a server runs with another DEVSPACE_STATE_DIR (`make run` uses .data/state in its checkout), set it " +
		"(or --state-dir); otherwise run `devspace init`"
}

// New opens state and keys and builds every component. Nothing listens
// until Run.
func New(ctx context.Context, cfg *config.Config, log *slog.Logger, opts Options) (*App, error) {
	core, err := openCore(ctx, cfg, log, opts, true)
	if err != nil {
		return nil, err
	}
	a := core
	var consoleHandler http.Handler
	if cfg.AdminListen != "" {
		a.console = console.New(a.consoleOptions(log, opts.Now))
		consoleHandler = a.console
	}
	a.http = httpserver.New(httpserver.Options{
		PublicAddr: cfg.Listen, ControlAddr: cfg.ControlListen, MetricsAddr: cfg.MetricsListen,
		ConsoleAddr: cfg.AdminListen, Console: consoleHandler,
		AllowedHosts: cfg.AllowedHosts, MaxBodyBytes: cfg.MaxRequestBody,
		Limits: httpserver.Limits{MaxConnections: cfg.Edge.MaxConnections, ReadHeaderTimeout: cfg.Edge.ReadHeaderTimeout,
			BodyIdleTimeout: cfg.Edge.BodyIdleTimeout, BodyTimeout: cfg.Edge.BodyTimeout, IdleTimeout: cfg.Edge.IdleTimeout},
		Routes:     a.publicRoutes(),
		Readiness:  a.readiness(),
		Admin:      a,
		ControlKey: a.auth.Derive(control.KeyPurpose),
		Metrics:    a.metrics,
		Logger:     log,
	})
	return a, nil
}

// OpenState builds the components over cfg's state directory without
// listeners and without a command manager, logging nothing: what the
// owner commands act on when no server answers. A running server's
// commands and output are left alone. It returns an error wrapping
// ErrNotInitialized for a missing state, and store.ErrLocked when a
// server (or another command) holds it. The caller owns the App and
// calls Close.
func OpenState(ctx context.Context, cfg *config.Config) (*App, error) {
	return openCore(ctx, cfg, discardLogger(), Options{}, false)
}

// openCore builds everything but the listeners. With serving false
// (OpenState) no command manager is started: a running server's commands
// and output are left alone.
func openCore(ctx context.Context, cfg *config.Config, log *slog.Logger, opts Options, serving bool) (*App, error) {
	if serving && cfg.PublicURLIsAuto() {
		// A server must know its issuer; the CLI acting on the state
		// directory never uses it.
		return nil, errors.New("DEVSPACE_PUBLIC_BASE_URL=auto must be resolved (ResolvePublicURL) before the server is built")
	}
	if serving {
		// The tool schemas take most of mcpserver.New's time in a fresh
		// process; they are built while the state opens.
		go mcpserver.Prepare()
	}
	auth, err := authstate.Load(cfg.StateDir, cfg.MasterKeyFile)
	if errors.Is(err, authstate.ErrNotInitialized) {
		return nil, NotInitialized(ctx, cfg)
	}
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, cfg.StateDir, store.Options{Now: opts.Now, OnStatement: opts.OnStatement})
	if err != nil {
		return nil, err
	}
	specs := make([]project.Spec, 0, len(cfg.Projects))
	for _, p := range cfg.Projects {
		specs = append(specs, project.Spec{Label: p.Label, Path: p.Path})
	}
	catalog, err := project.NewCatalog(auth.Derive(purposeProjectRef), specs)
	if err != nil {
		st.Close()
		return nil, err
	}
	m := metrics.New()
	a := &App{cfg: cfg, log: log, store: st, auth: auth, catalog: catalog, metrics: m, settleAfter: cmp.Or(opts.Settle, Settle),
		activity: activity.New(activity.Options{Now: opts.Now}), now: opts.Now}
	if a.now == nil {
		a.now = time.Now
	}
	sandboxOpts := commandSandbox(cfg, opts)
	sandboxState := process.SandboxStateOf(sandboxOpts)
	scopes := cfg.OAuthScopes
	if serving {
		scopes = offeredScopes(cfg.OAuthScopes, sandboxState, log)
		sandboxMetric(m, sandboxState)
	}
	fetcher := metadataFetcher{clientmeta.New(clientmeta.Options{AllowLoopback: opts.AllowLoopbackMetadata,
		HTTPClient: httpClient(opts.MetadataHTTPClient), Now: opts.Now})}
	ops := idempotency.New(st, idempotency.Options{Now: opts.Now})
	cursors := cursor.New(auth.Derive(purposeCursor), cursor.Options{Now: opts.Now})
	locks := rootlock.New()
	// Commands, their output and undo snapshots exist before binding, which
	// closes them with their executions (also for Projects removed from
	// the configuration, just below). DevSpace's own Git runs confined
	// like a command (process.Manager.Confine): the worktrees' Git, and
	// show_changes' below.
	var worktrees *worktree.Manager
	var gitConfine gitrepo.Confiner
	if serving {
		a.bg, a.stopBg = context.WithCancel(context.WithoutCancel(ctx))
		if err := a.openCommands(ctx, cfg, opts, sandboxOpts); err != nil {
			a.Close()
			return nil, err
		}
		gitConfine = a.procs.Confine
		if worktrees, a.pruneBegin, a.pruned, err = newWorktrees(a.bg, cfg, catalog, st, gitConfine, log); err != nil {
			a.Close()
			return nil, err
		}
		a.worktrees = worktrees
	}
	activity := executions.NewActivity(st, log)
	copts := commands.Options{Processes: a.procs, Outputs: a.outputs, Undo: a.snapshots,
		Locks: locks, Operations: ops, Cursors: cursors, Checkpoints: activity, HostEnv: os.Environ(), Logger: log}
	if a.disk != nil {
		copts.Disk = a.disk
	}
	a.commands = commands.New(copts)
	m.GaugeFunc("command_slots_grant_max", fmt.Sprintf("Command slots the grant holding the most holds with live commands (a grant's share: %d).", commands.MaxPerGrant), func() float64 {
		return float64(a.commands.SlotsGrantMax())
	})
	a.bindings = executions.New(executions.Options{Store: st, Catalog: catalog, Operations: ops, Cursors: cursors,
		FingerKey: auth.Derive(purposeRootFinger), Fallbacks: cfg.InstructionFallbacks, Logger: log, Worktrees: worktrees,
		Resources: a.commands, Activity: activity})
	if err := a.bindings.CloseRemovedProjects(ctx); err != nil {
		a.Close()
		return nil, fmt.Errorf("close executions of removed projects: %w", err)
	}
	// The authorization server comes after binding: revoking a grant
	// closes its executions (executions.CloseGrants) on one explicit path.
	a.oauth = oauth.New(oauth.Options{
		Issuer: cfg.Issuer(), Resource: cfg.Resource(), Scopes: scopes,
		AllowedRedirectHosts: cfg.OAuthAllowedRedirectHosts,
		AccessTTL:            cfg.AccessTTL, RefreshTTL: cfg.RefreshTTL, GrantMaxLifetime: cfg.GrantMaxLifetime,
		Store: st, Password: auth, Projects: catalog,
		Limiter:        ratelimit.New(ratelimit.Options{MaxInFlight: cfg.Edge.PasswordConcurrency, Now: opts.Now}),
		TrustedProxies: cfg.Edge.TrustedProxies, ClientIPHeader: cfg.Edge.ClientIPHeader,
		RegistrationsPerSource: cfg.Edge.RegistrationsPerSource,
		Metadata:               fetcher,
		RefKey:                 auth.Derive(purposeAuditRef),
		Metrics:                m, Logger: log, Now: opts.Now,
		Executions: a.bindings,
	})
	skillCatalog, err := skills.New(cfg.SkillPaths)
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("DEVSPACE_SKILL_PATHS: %w", err)
	}
	var intents *patch.Intents
	if serving {
		if intents, err = openPatchIntents(ctx, cfg, catalog, log); err != nil {
			a.Close()
			return nil, err
		}
	}
	eopts := edits.Options{Operations: ops, Locks: locks, Journal: st, Instructions: a.bindings, Checkpoints: activity,
		Metrics: m, Snapshots: a.snapshots, Intents: intents, Logger: log}
	if a.disk != nil {
		eopts.Disk = a.disk
	}
	patches := edits.New(eopts)
	readService := reads.New(reads.Options{Locks: locks, Instructions: a.bindings, Journal: st, Closes: a.bindings,
		Cursors: cursors, Skills: skillCatalog, GitConfine: gitConfine, Metrics: m})
	a.mcp = mcpserver.New(mcpserver.Options{Widgets: cfg.Widgets, Reads: readService,
		Commands: a.commands, OAuth: a.oauth, Bindings: a.bindings,
		Tasks:       tasks.New(st, ops, activity),
		IdentityKey: auth.Derive(purposeIdentity), AllowedOrigins: []string{cfg.Issuer(), "https://chatgpt.com"},
		MaxBodyBytes: cfg.MaxRequestBody, BodyBudget: cfg.Edge.MCPBodyBudget, BodyGrantShare: cfg.GrantShare(),
		SessionIdleTimeout: cfg.Edge.MCPSessionIdleTimeout, SessionsPerGrant: cfg.Edge.MCPSessionsPerGrant, Metrics: m, Logger: log, Edits: patches,
		Calls: a.activity})
	m.GaugeFunc("executions_active", "Executions not closed.", func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		n, err := st.CountOpenExecutions(ctx)
		if err != nil {
			return 0
		}
		return float64(n)
	})
	m.GaugeFunc("grants_active", "Grants that are neither revoked nor expired.", func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		g, err := st.Grants(ctx, false)
		if err != nil {
			return 0
		}
		return float64(len(g))
	})
	return a, nil
}

func (a *App) publicRoutes() []httpserver.Route {
	var routes []httpserver.Route
	for _, r := range a.oauth.Routes() {
		routes = append(routes, httpserver.Route{Method: r.Method, Path: r.Path, Handler: r.Handler})
	}
	for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		routes = append(routes, httpserver.Route{Method: method, Path: "/mcp", Handler: a.mcp})
	}
	return routes
}

func (a *App) readiness() []httpserver.ReadinessCheck {
	return []httpserver.ReadinessCheck{
		{Name: "database", Check: func(ctx context.Context) bool { return a.store.Ping(ctx) == nil }},
		{Name: "keys", Check: func(context.Context) bool { return a.auth != nil }},
		// Worktree operations wait until the startup prune of half-created
		// worktrees is over; it begins a moment after the bind.
		{Name: "worktree_prune", Info: true, Check: func(context.Context) bool {
			select {
			case <-a.pruned:
				return true
			default:
				return a.pruned == nil
			}
		}},
		// The undo snapshots are indexed (crash leftovers swept); the patch
		// tools wait for it. It begins a moment after the bind.
		{Name: "undo_index", Info: true, Check: func(context.Context) bool {
			return a.snapshots == nil || a.snapshots.Indexed()
		}},
		// Per-command cgroups (cgroup.kill) when a delegated cgroup v2 is
		// writable; without them process-group and subreaper kills are used.
		{Name: "process_cgroup", Info: true, Check: func(context.Context) bool { return a.procs != nil && a.procs.CgroupEnabled() }},
		// Commands run in Landlock domains. False when the owner turned the
		// sandbox off or the kernel has none (then commands are refused).
		{Name: "command_sandbox", Info: true, Check: func(context.Context) bool {
			return a.procs != nil && a.procs.Sandbox().Mode == process.SandboxLandlock
		}},
		// Confined commands reach path-named Unix sockets only inside
		// their own domain (the Gate); false where pidfd_getfd is refused
		// (they then have socketpair's only) or commands are not confined.
		{Name: "command_unix_gate", Info: true, Check: func(context.Context) bool {
			return a.procs != nil && a.procs.Sandbox().UnixSockets == process.UnixSocketsGate
		}},
		// Every watched filesystem (state, scratch, Projects) has the disk
		// reserve free; below it the guard stops writers, and below a
		// quarter of it exec_command and apply_patch there answer disk_low.
		{Name: "disk_space", Info: true, Check: func(context.Context) bool {
			if a.disk == nil {
				return true
			}
			for _, fs := range a.disk.Status() {
				if fs.Low {
					return false
				}
			}
			return true
		}},
		{Name: "projects", Check: func(context.Context) bool {
			for _, ok := range a.catalog.CheckAccessible() {
				if !ok {
					return false
				}
			}
			return true
		}},
	}
}

// Settle is how long after the listeners are bound the work that can wait
// begins (StartBackground) and the collector resumes (`devspace serve`,
// internal/cli): the first /readyz probes are then answered without
// competing with them for the CPU (docs/performance.md, "Start to ready").
const Settle = 250 * time.Millisecond

// Start binds the listeners and serves in the background; the background
// work (StartBackground) begins a moment later (Settle).
func (a *App) Start() error {
	if err := a.http.Start(); err != nil {
		return err
	}
	a.settled = time.AfterFunc(a.settleAfter, a.StartBackground)
	return nil
}

// StartBackground starts what waits until the server answers: the prune of
// half-created worktrees (a few Git commands per Git Project; worktree
// operations wait for it, and begin it if need be), the index of the undo
// snapshots (every manifest is read; the patch tools wait for it, and
// begin it if need be) and the warm-up of the command supervisor pool.
// Each costs CPU that would otherwise compete with the start itself
// (docs/performance.md, "Start to ready"). Start schedules it Settle after
// the bind; an embedding that serves the handlers itself calls it once
// they are served. Idempotent; after Close it does nothing.
func (a *App) StartBackground() {
	a.background.Do(func() {
		if a.pruneBegin != nil {
			a.pruneBegin()
		}
		if a.snapshots != nil {
			a.snapshots.Index()
			go func() {
				if err := a.snapshots.Wait(); err != nil {
					a.log.Error("undo snapshots unavailable: undo_patch and new snapshots fail until the next start", "err", err)
				}
			}()
		}
		if a.procs != nil {
			a.procs.Warm()
		}
		if a.bg != nil {
			a.statePruned = make(chan struct{})
			go func() {
				defer close(a.statePruned)
				a.pruneStateLoop(a.bg)
			}()
		}
	})
}

// Addrs returns the bound public, control and metrics addresses.
func (a *App) Addrs() []net.Addr { return a.http.Addrs() }

// Shutdown kills every command tree (first: nothing the server started
// may outlive it) while it drains requests, ends open event streams, and
// closes state. It aims to finish within 2 s (process.Options.ShutdownGrace
// bounds the commands' SIGTERM grace) and gives up draining after 10 s.
// Idempotent.
func (a *App) Shutdown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if a.procs != nil {
		go func() { _ = a.procs.Shutdown(ctx) }() // Close waits for the same trees
	}
	err := a.http.Shutdown(ctx)
	return errors.Join(err, a.Close())
}

// Close stops every command (their whole trees) and releases state,
// without touching listeners. Idempotent.
func (a *App) Close() error {
	if a.store == nil {
		return nil
	}
	// Waits for a StartBackground already running; none starts after.
	a.background.Do(func() {})
	var errs []error
	if a.settled != nil {
		a.settled.Stop()
	}
	if a.stopBg != nil {
		a.stopBg()
	}
	if a.statePruned != nil {
		<-a.statePruned // it writes to the store
	}
	if a.pruned != nil {
		a.pruneBegin() // ends at once if it had not begun: bg is done
		<-a.pruned     // it writes to the store
	}
	if a.procs != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		errs = append(errs, a.procs.Shutdown(ctx))
		// Let the killed commands' final states reach the store.
		a.commands.WaitRecorded(ctx)
		cancel()
	}
	if a.snapshots != nil {
		errs = append(errs, a.snapshots.Close()) // waits for an index under way
	}
	errs = append(errs, a.store.Close())
	a.store = nil
	return errors.Join(errs...)
}

// OAuth exposes the authorization server (token verification for /mcp).
func (a *App) OAuth() *oauth.Server { return a.oauth }

// PublicHandler, ControlHandler and MetricsHandler expose the engines for
// in-process tests.
func (a *App) PublicHandler() http.Handler { return a.http.PublicHandler() }

// ControlHandler exposes the control engine for in-process tests.
func (a *App) ControlHandler() http.Handler { return a.http.ControlHandler() }

// MetricsHandler exposes the metrics engine for in-process tests.
func (a *App) MetricsHandler() http.Handler { return a.http.MetricsHandler() }

// NewLogger builds the slog logger cfg asks for (level, text or JSON),
// writing to w.
func NewLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
