package process

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// The Manager: its options and metrics, New and the probes it starts in
// the background.
// Beside it: Start (start.go), the pool of idle supervisors
// (supervisorproc.go), the output spool (spooldir.go), KillGroup and
// Shutdown (shutdown.go).

// Defaults of Options.
const (
	DefaultGrace = 3 * time.Second
	// DefaultInterruptGrace is how long an interrupt's SIGINT gets before
	// what it left alive is killed.
	DefaultInterruptGrace = time.Second
	// DefaultShutdownGrace is the SIGTERM grace of trees killed at
	// shutdown.
	DefaultShutdownGrace = 500 * time.Millisecond
	DefaultMaxLive       = 32
	DefaultMaxPerGroup   = 8
	DefaultMaxSpoolBytes = 1 << 30
	DefaultStartTimeout  = 10 * time.Second
	// DefaultIdleSupervisors is how many supervisors wait pre-started.
	DefaultIdleSupervisors = 2
)

// DefaultSupervisorArgs are the arguments that make the devspace binary run
// SupervisorMain (the CLI's hidden subcommand).
var DefaultSupervisorArgs = []string{SupervisorCommand}

// SupervisorCommand is the hidden subcommand that runs SupervisorMain.
const SupervisorCommand = "__supervise"

// Metrics receives the process layer's measurements; the app adapts it to
// Prometheus (processes_running, process_kills_total{reason},
// process_orphans_killed_total, output_truncated_total{reason}).
// Implementations must be safe for concurrent use.
type Metrics interface {
	// ProcessKilled counts one tree kill with its reason.
	ProcessKilled(reason string)
	// OrphansKilled counts descendants that had been re-parented to a
	// supervisor (their parent was gone) and were killed with the tree.
	OrphansKilled(n int)
	// RunningChanged reports the number of live trees.
	RunningChanged(n int)
	// OutputTruncated counts one command whose output stopped reaching
	// its spool file, with the bound that stopped it (TruncatedCommandCap,
	// TruncatedGrantShare, TruncatedSpoolFull, TruncatedFileError).
	OutputTruncated(reason string)
}

type nopMetrics struct{}

func (nopMetrics) ProcessKilled(string)   {}
func (nopMetrics) OrphansKilled(int)      {}
func (nopMetrics) RunningChanged(int)     {}
func (nopMetrics) OutputTruncated(string) {}

var _ Metrics = nopMetrics{}

// Options configures a Manager. The zero value of every field means its
// default.
type Options struct {
	// SupervisorPath is the binary started as each command's supervisor;
	// default os.Executable().
	SupervisorPath string
	// PreferHelper starts the command helper that lies beside
	// SupervisorPath (HelperName; FindHelper) instead, when it speaks this
	// build's protocol. It is looked for in the background, before the
	// first supervisor starts, so that New does not wait for it.
	PreferHelper bool
	// SupervisorArgs are its arguments; nil means DefaultSupervisorArgs.
	SupervisorArgs []string
	// SupervisorEnv is the supervisors' environment besides GOMAXPROCS=1
	// (e.g. GOCOVERDIR in end-to-end tests); default none. It never
	// reaches commands, and the server's own environment is not inherited.
	SupervisorEnv []string
	// SpoolDir holds the output spool files (created 0700 if missing);
	// default $TMPDIR/devspace-output.
	SpoolDir string
	// Grace is how long a killed tree gets between SIGTERM and SIGKILL;
	// default DefaultGrace.
	Grace time.Duration
	// ShutdownGrace is the SIGTERM grace of the trees Shutdown kills,
	// short so that the server exits promptly; default
	// DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// InterruptGrace is how long Interrupt waits after SIGINT before it
	// kills what is left of the tree; default DefaultInterruptGrace.
	InterruptGrace time.Duration
	// MaxLive bounds live trees in all; MaxPerGroup per group (execution).
	// Defaults DefaultMaxLive and DefaultMaxPerGroup.
	MaxLive     int
	MaxPerGroup int
	// MaxSpoolBytes bounds the output all spools of this Manager retain
	// until Remove; default DefaultMaxSpoolBytes.
	MaxSpoolBytes int64
	// SpoolShareBytes bounds what the spools of one owner (Spec.Tenant: the
	// server passes the grant) retain, so that one owner's output never
	// crowds out another's; default a quarter of MaxSpoolBytes
	// (DEVSPACE_OUTPUT_GRANT_SHARE). A share past MaxSpoolBytes is
	// MaxSpoolBytes: no share. Past it, or past MaxSpoolBytes, a
	// command's output is truncated, except its first 64 KiB (the last
	// 64 KiB stay in memory, as past every bound).
	SpoolShareBytes int64
	// StartTimeout bounds the supervisor handshake; default
	// DefaultStartTimeout.
	StartTimeout time.Duration
	// IdleSupervisors is how many supervisors are kept started ahead of
	// need, so that Start does not pay for starting the (large) server
	// binary; default DefaultIdleSupervisors, negative for none. Each idle
	// supervisor is a sleeping process with a few MiB of private memory.
	IdleSupervisors int
	// WarmLater leaves the pool empty until Warm is called: a starting
	// server warms it once its listeners are bound, so that the
	// supervisors' start (a few tens of ms of CPU) does not compete with
	// its own. A command started before Warm starts its own supervisor.
	WarmLater bool
	// DisableCgroup turns off per-command cgroups even when a delegated
	// cgroup v2 is writable.
	DisableCgroup bool
	// Limits bounds each command's tree.
	Limits Limits
	// Sandbox configures command confinement; the zero value confines
	// every command and refuses commands where Landlock is unavailable.
	Sandbox SandboxOptions
	// Subreaper makes the server a child subreaper
	// (PR_SET_CHILD_SUBREAPER): the descendants of a lost supervisor
	// re-parent to it, not to PID 1, and are killed (see subreaper.go).
	// It is process-wide, so only the server sets it; default off.
	Subreaper bool
	// LogCommands allows command text in logs (DEVSPACE_LOG_SHELL_COMMANDS).
	LogCommands bool
	// Logger defaults to a logger that discards.
	Logger *slog.Logger
	// Metrics defaults to a no-op.
	Metrics Metrics
}

// Manager owns every command process of the server: it starts them under
// supervisors, enforces the live limits, and kills them on request and at
// shutdown. It is safe for concurrent use.
type Manager struct {
	opts    Options
	log     *slog.Logger
	metrics Metrics
	budget  *spoolBudget
	sandbox SandboxState
	// cgroup is the parent cgroup directory, "" when cgroups are off;
	// supervisorPath is the binary supervisors run. Both are found once,
	// in the background from New on (they run a probe and a process), and
	// wait for that on first use.
	cgroup         func() string
	supervisorPath func() string
	// limits says how commands are bounded, found once (it waits for the
	// cgroup probe); supervisorLimits is what supervisors are told of it.
	// commandsCgroup is the cgroup tier's cgroup of all commands ("" when
	// another mechanism bounds them), set by limits.
	limits           func() LimitsState
	supervisorLimits func() commandLimits
	commandsCgroup   string
	// ownSID, sweepNow and sweepWaiters serve the subreaper; sweepNow is
	// nil without it. sweepMu guards sweepWaiters.
	ownSID       int
	sweepNow     chan struct{}
	sweepMu      sync.Mutex
	sweepWaiters []chan struct{}

	starting sync.WaitGroup

	mu        sync.Mutex
	closed    bool
	idle      []*supervisorProc
	refilling int
	// supervisors counts the supervisor processes started and not yet
	// reaped. supervisorsChanged is closed (and replaced) whenever it or
	// refilling goes down, waking every Shutdown waiting for both to be 0.
	supervisors        int
	supervisorsChanged chan struct{}
	live               int
	perGroup           map[string]int
	procs              map[string]*Process
	// started holds the groups whose commands started since the last
	// StartedGroups (the disk guard scans their scratch directories).
	started map[string]string // group -> tenant
	// startedTools holds the tool homes written by commands started
	// since the last StartedTools.
	startedTools map[string]bool
	// tenantLive counts each tenant's live and starting trees;
	// tenantCgroups are the cgroup tier's tenant cgroups, removed when
	// their count drops to 0; lastTenantCgroup is the one a fresh
	// supervisor's first launcher waits in.
	tenantLive       map[string]int
	tenantCgroups    map[string]string
	lastTenantCgroup string
}

// New returns a Manager. It creates SpoolDir; it probes cgroup v2
// delegation (unless disabled), looks for the command helper (with
// PreferHelper) and starts the idle supervisors in the background.
func New(opts Options) (*Manager, error) {
	if opts.SupervisorPath == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the supervisor binary: %w", err)
		}
		opts.SupervisorPath = exe
	}
	if opts.SupervisorArgs == nil {
		opts.SupervisorArgs = DefaultSupervisorArgs
	}
	if opts.SpoolDir == "" {
		opts.SpoolDir = filepath.Join(os.TempDir(), "devspace-output")
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = min(DefaultShutdownGrace, opts.Grace)
	}
	if opts.InterruptGrace <= 0 {
		opts.InterruptGrace = DefaultInterruptGrace
	}
	if opts.MaxLive <= 0 {
		opts.MaxLive = DefaultMaxLive
	}
	if opts.MaxPerGroup <= 0 {
		opts.MaxPerGroup = DefaultMaxPerGroup
	}
	if opts.MaxSpoolBytes <= 0 {
		opts.MaxSpoolBytes = DefaultMaxSpoolBytes
	}
	if opts.SpoolShareBytes <= 0 {
		opts.SpoolShareBytes = opts.MaxSpoolBytes / 4
	}
	opts.SpoolShareBytes = min(opts.SpoolShareBytes, opts.MaxSpoolBytes)
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.IdleSupervisors == 0 {
		opts.IdleSupervisors = DefaultIdleSupervisors
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Metrics == nil {
		opts.Metrics = nopMetrics{}
	}
	if opts.Sandbox.ScratchDir == "" {
		opts.Sandbox.ScratchDir = filepath.Join(os.TempDir(), "devspace-scratch")
	}
	if err := os.MkdirAll(opts.SpoolDir, 0o700); err != nil {
		return nil, fmt.Errorf("create the output spool directory: %w", err)
	}
	if err := os.MkdirAll(opts.Sandbox.ScratchDir, 0o700); err != nil {
		return nil, fmt.Errorf("create the scratch directory: %w", err)
	}
	if opts.Sandbox.ToolsDir != "" {
		if err := os.MkdirAll(opts.Sandbox.ToolsDir, 0o700); err != nil {
			return nil, fmt.Errorf("create the tools directory: %w", err)
		}
	}
	// Scratch directories of a previous run belong to executions that no
	// longer run anything.
	if entries, err := os.ReadDir(opts.Sandbox.ScratchDir); err == nil {
		for _, e := range entries {
			removeTree(filepath.Join(opts.Sandbox.ScratchDir, e.Name()))
		}
	}
	m := &Manager{
		opts:               opts,
		log:                opts.Logger.With("component", "process"),
		metrics:            opts.Metrics,
		budget:             newSpoolBudget(opts.MaxSpoolBytes, opts.SpoolShareBytes),
		perGroup:           make(map[string]int),
		tenantLive:         make(map[string]int),
		tenantCgroups:      make(map[string]string),
		procs:              make(map[string]*Process),
		sandbox:            SandboxStateOf(opts.Sandbox),
		supervisorsChanged: make(chan struct{}),
	}
	m.log.Info("command sandbox", "mode", m.sandbox.Mode, "landlock_abi", m.sandbox.Status.ABI,
		"rules", m.sandbox.Rules, "deny_network", m.sandbox.DenyNetwork, "unix_sockets", m.sandbox.UnixSockets,
		"ipc", m.sandbox.IPC, "reason", m.sandbox.Status.Reason)
	m.cgroup = sync.OnceValue(m.probeCgroup)
	m.supervisorPath = sync.OnceValue(m.findSupervisor)
	m.limits = sync.OnceValue(m.probeLimits)
	m.supervisorLimits = sync.OnceValue(func() commandLimits { return commandLimitsOf(m.limits()) })
	if opts.Subreaper {
		if err := m.becomeSubreaper(); err != nil {
			m.log.Warn("cannot become a child subreaper; orphans of a lost supervisor re-parent to PID 1", "err", err)
		}
	}
	go m.logLimits()
	if !opts.WarmLater {
		m.Warm()
	}
	return m, nil
}

// Warm starts filling the supervisor pool in the background; a full pool
// (or a second call) makes it a no-op.
func (m *Manager) Warm() { go m.refill() }

// probeCgroup returns the parent cgroup of the commands' cgroups, "" when
// they are disabled or unavailable.
func (m *Manager) probeCgroup() string {
	if m.opts.DisableCgroup {
		return ""
	}
	dir, reason, err := cgroupParent()
	m.log.Info("process isolation", "cgroup", err == nil, "reason", reason)
	if err != nil {
		return ""
	}
	if n := removeEmptyCgroups(dir); n > 0 {
		m.log.Info("removed empty command cgroups left by an earlier run", "count", n)
	}
	return dir
}

// logLimits finds how commands are bounded and says so.
func (m *Manager) logLimits() {
	st := m.limits()
	m.log.Info("command limits", "mechanism", st.Mechanism, "reason", st.Reason, "pids_max", st.PidsMax,
		"memory_max", st.MemoryMax, "tenant_pids", st.TenantPids, "tenant_memory", st.TenantMemory,
		"commands_pids", st.CommandsPids, "commands_memory", st.CommandsMemory, "budget_from", st.BudgetFrom,
		"rlimit_nproc", st.NProc, "nice", st.Nice)
}

// findSupervisor returns the binary supervisors run: the command helper
// beside SupervisorPath when PreferHelper and it can be used, else
// SupervisorPath.
func (m *Manager) findSupervisor() string {
	if !m.opts.PreferHelper {
		return m.opts.SupervisorPath
	}
	path, err := FindHelper(context.Background(), m.opts.SupervisorPath) // bounded by FindHelper
	switch {
	case errors.Is(err, ErrNoHelper):
		m.log.Info("commands start through devspace itself: no " + HelperName + " beside it (slower)")
		return m.opts.SupervisorPath
	case err != nil:
		m.log.Warn("commands start through devspace itself (slower)", "err", err)
		return m.opts.SupervisorPath
	}
	return path
}

// CgroupEnabled reports whether commands get their own cgroup v2.
func (m *Manager) CgroupEnabled() bool { return m.cgroup() != "" }

// Running returns the number of live trees.
func (m *Manager) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live
}
