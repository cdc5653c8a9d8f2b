package process

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

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

// ptySize is the terminal size of TTY commands.
var ptySize = pty.Winsize{Cols: 120, Rows: 40}

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
		"rlimit_nproc", st.NProc)
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

// spoolPath is where spool id's output file lives.
func (m *Manager) spoolPath(id string) string { return filepath.Join(m.opts.SpoolDir, id+spoolExt) }

const spoolExt = ".out"

// SpoolFile is an output file found in the spool directory.
type SpoolFile struct {
	ID   string
	Size int64
}

// SpoolFiles lists the output files in the spool directory (those a
// previous run left included), for reconciliation at start.
func (m *Manager) SpoolFiles() ([]SpoolFile, error) {
	entries, err := os.ReadDir(m.opts.SpoolDir)
	if err != nil {
		return nil, fmt.Errorf("list output spool: %w", err)
	}
	var out []SpoolFile
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), spoolExt)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, SpoolFile{ID: id, Size: fi.Size()})
	}
	return out, nil
}

// AdoptOutput counts an output file a previous run left (size bytes)
// against the total spool budget and owner's share.
func (m *Manager) AdoptOutput(id, owner string, size int64) { m.budget.adopt(id, owner, size) }

// RemoveOutput deletes spool id's file and gives its bytes back to the
// budget. Use it for output no Process in memory owns any more (Remove
// covers the others); a second call, or one for an ID Remove already
// handled, is harmless.
func (m *Manager) RemoveOutput(id string) error {
	if strings.ContainsAny(id, `/\`) || id == "" || id == "." || id == ".." {
		return fmt.Errorf("invalid spool id %q", id)
	}
	m.budget.forget(id)
	if err := os.Remove(m.spoolPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// RetainedBytes is how many output bytes all spool files hold
// (output_bytes_retained).
func (m *Manager) RetainedBytes() int64 { return m.budget.usedBytes() }

// MaxRetainedBytes is the total spool budget (Options.MaxSpoolBytes).
func (m *Manager) MaxRetainedBytes() int64 { return m.opts.MaxSpoolBytes }

// OwnerRetainedBytes returns how many output bytes the spool files of
// each owner (Spec.Tenant) hold, running commands' included; owners
// without output are absent. The map is the caller's.
func (m *Manager) OwnerRetainedBytes() map[string]int64 { return m.budget.ownerBytes() }

// MaxOwnerRetainedBytes is one owner's share of the spool
// (Options.SpoolShareBytes).
func (m *Manager) MaxOwnerRetainedBytes() int64 { return m.opts.SpoolShareBytes }

// SpoolPressure is signalled (one pending signal at most) when a
// command's output could not be kept whole for its owner's share or the
// total budget, when its head was kept past one of them, or when it takes
// either above 90% of its bound: whoever keeps finished output (the
// retention) should retire some of it.
func (m *Manager) SpoolPressure() <-chan struct{} { return m.budget.pressure }

// CgroupEnabled reports whether commands get their own cgroup v2.
func (m *Manager) CgroupEnabled() bool { return m.cgroup() != "" }

// Running returns the number of live trees.
func (m *Manager) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live
}

// Start runs spec under a new supervisor, counted against group's limit.
// It returns once the command has started (or failed to): ErrInvalidSpec,
// ErrSpawn (nothing ran: phase not_started), ErrTooMany, ErrAllBusy, ErrClosed. ctx
// bounds only the start; the process outlives it (until it exits, its
// Timeout, Kill, KillGroup or Shutdown).
func (m *Manager) Start(ctx context.Context, group string, spec Spec) (*Process, error) {
	l, err := resolve(spec)
	if err != nil {
		return nil, err
	}
	if l.tenant == "" {
		l.tenant = group
	}
	if m.sandbox.Mode == SandboxUnavailable {
		return nil, fmt.Errorf("%w: %s", ErrSandboxUnavailable, m.sandbox.Status.Reason)
	}
	m.mu.Lock()
	switch {
	case m.closed:
		m.mu.Unlock()
		return nil, ErrClosed
	case m.live >= m.opts.MaxLive:
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: %d running (at most %d)", ErrAllBusy, m.live, m.opts.MaxLive)
	case m.perGroup[group] >= m.opts.MaxPerGroup:
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: %d running in this context (at most %d)", ErrTooMany, m.perGroup[group], m.opts.MaxPerGroup)
	}
	m.live++
	m.perGroup[group]++
	m.tenantLive[l.tenant]++
	m.starting.Add(1)
	m.mu.Unlock()
	defer m.starting.Done()

	p, err := m.start(ctx, group, l)
	m.mu.Lock()
	if err != nil {
		m.unreserveLocked(group, l.tenant)
		m.mu.Unlock()
		return nil, err
	}
	m.procs[p.id] = p
	if m.started == nil {
		m.started = map[string]string{}
	}
	m.started[group] = l.tenant
	closed, live := m.closed, m.live
	m.mu.Unlock()
	m.metrics.RunningChanged(live)
	p.startGoroutines(l)
	if closed {
		go p.Kill(ReasonShutdown)
		return nil, ErrClosed
	}
	return p, nil
}

func (m *Manager) unreserveLocked(group, tenant string) {
	m.live--
	if m.perGroup[group]--; m.perGroup[group] <= 0 {
		delete(m.perGroup, group)
	}
	if m.tenantLive[tenant]--; m.tenantLive[tenant] <= 0 {
		delete(m.tenantLive, tenant)
		m.tenantGoneLocked(tenant)
	}
}

// release forgets a process whose tree is gone.
func (m *Manager) release(p *Process) {
	m.mu.Lock()
	if _, ok := m.procs[p.id]; !ok {
		m.mu.Unlock()
		return
	}
	delete(m.procs, p.id)
	m.unreserveLocked(p.group, p.tenant)
	live := m.live
	m.mu.Unlock()
	m.metrics.RunningChanged(live)
}

// start prepares the command's stdio, assigns it to a supervisor and waits
// for its report.
func (m *Manager) start(ctx context.Context, group string, l launch) (_ *Process, err error) {
	id := newID()
	out := newSpool(id, l.tenant, m.spoolPath(id), l.maxOutput, m.budget)
	var parentEnds, childEnds []*os.File
	defer func() {
		// Only the supervisor (and then the command) may hold the child
		// ends: the output reaches EOF when the tree is gone.
		for _, f := range childEnds {
			_ = f.Close()
		}
		if err != nil {
			for _, f := range parentEnds {
				_ = f.Close()
			}
			_ = out.remove()
		}
	}()

	var stdinChild, outChild, outR, stdinW *os.File
	if l.tty {
		master, slave, err := pty.Open()
		if err != nil {
			return nil, fmt.Errorf("%w: open a pty: %v", ErrSpawn, err)
		}
		childEnds = append(childEnds, slave)
		_ = pty.Setsize(master, &ptySize)
		// pty.Open leaves the master in blocking mode; a pollable copy lets
		// Close interrupt a pending Read or Write.
		pm, err := pollable(master)
		if err != nil {
			master.Close()
			return nil, fmt.Errorf("%w: pty: %v", ErrSpawn, err)
		}
		parentEnds = append(parentEnds, pm)
		stdinChild, outChild, outR, stdinW = slave, slave, pm, pm
	} else {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("%w: output pipe: %v", ErrSpawn, err)
		}
		parentEnds, childEnds = append(parentEnds, r), append(childEnds, w)
		outR, outChild = r, w
		growPipe(w)
		if l.closeIn && len(l.stdin) == 0 {
			if stdinChild, err = os.Open(os.DevNull); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrSpawn, err)
			}
			childEnds = append(childEnds, stdinChild)
		} else {
			r, w, err := os.Pipe()
			if err != nil {
				return nil, fmt.Errorf("%w: stdin pipe: %v", ErrSpawn, err)
			}
			parentEnds, childEnds = append(parentEnds, w), append(childEnds, r)
			stdinChild, stdinW = r, w
		}
	}

	scratch, err := m.scratchDir(group)
	if err != nil {
		return nil, err
	}
	spec := supervisorSpec{
		ID: id, Path: l.path, Argv: l.argv, Dir: l.dir, Env: withScratch(l.env, scratch), TTY: l.tty,
		GraceMS: m.opts.Grace.Milliseconds(),
	}
	if m.sandbox.Mode == SandboxLandlock {
		spec.Sandbox = m.policy(l, scratch)
	}
	var sup *supervisorProc
	var ev event
	parent := m.commandCgroupParent(l.tenant)
	for attempt := 0; sup == nil; attempt++ {
		s, pooled, err := m.takeSupervisor(parent)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSpawn, err)
		}
		if parent != "" {
			// The cgroup its warm launcher was started in when that lies
			// where this command's belongs (under the kill-only tier every
			// supervisor is given one there; under the limits' tier, one
			// of the tenant it served last), else a new one, where the
			// supervisor starts a launcher for it; and the one for the
			// launcher it starts after this command, for the same tenant.
			spec.Cgroup = s.nextCgroup
			if spec.Cgroup == "" || filepath.Dir(spec.Cgroup) != parent {
				spec.Cgroup = newCgroupDir(parent)
			}
			spec.NextCgroup = newCgroupDir(parent)
			s.cgroup, s.nextCgroup = spec.Cgroup, spec.NextCgroup
		}
		ev, err = s.assign(ctx, m.opts.StartTimeout, spec, stdinChild, outChild)
		switch {
		case errors.Is(err, errStaleSupervisor) && pooled && attempt == 0,
			err == nil && ev.Event == evSpawnError && ev.Retry && attempt == 0:
			s.discard(false) // died or was ended while idle; nothing ran
		case err == nil && ev.Event == evStarted:
			sup = s
		case err == nil && ev.Event == evSpawnError:
			m.putSupervisor(s, ev.Reusable)
			return nil, fmt.Errorf("%w: %s", ErrSpawn, ev.Error)
		default:
			// Closing the control socket makes a live supervisor kill
			// whatever it may have started, and exit.
			s.discard(false)
			if err == nil {
				err = errors.New("unexpected supervisor event")
			}
			m.log.Error("supervisor handshake failed", "process_id", id, "err", err, "stderr", s.stderr.String())
			if ctx.Err() != nil {
				return nil, fmt.Errorf("start: %w", ctx.Err())
			}
			return nil, fmt.Errorf("%w: supervisor failed: %v", ErrSpawn, err)
		}
	}
	cgroupDir := spec.Cgroup
	if !ev.Cgroup {
		cgroupDir = ""
	}
	tenant := l.tenant
	if tenant == "" {
		tenant = group
	}
	p := &Process{
		id: id, group: group, tenant: tenant, m: m, grace: m.opts.Grace, sandboxRules: ev.Sandbox,
		startedAt: time.Now(), pid: ev.PID, cgroupDir: cgroupDir, root: l.root, readOnly: l.readOnly,
		sup: sup, out: out, outR: outR, capKill: l.killOnCap,
		exited: make(chan struct{}), outputDone: make(chan struct{}), done: make(chan struct{}),
	}
	p.log = m.log.With("process_id", id)
	p.st = State{Status: StatusRunning, StartedAt: p.startedAt, TreeAlive: true}
	if stdinW != nil {
		p.stdin = newStdinQueue(stdinW, l.tty)
	}
	attrs := []any{"pid", p.pid, "tty", l.tty, "cgroup", cgroupDir != "", "sandbox", ev.Sandbox != ""}
	if m.opts.LogCommands {
		attrs = append(attrs, "command", l.preview)
	}
	p.log.Info("process started", attrs...)
	return p, nil
}

// startGoroutines starts output copying, stdin feeding, the timeout and
// event handling of a started process.
func (p *Process) startGoroutines(l launch) {
	go p.readOutput()
	if p.stdin != nil {
		if len(l.stdin) > 0 {
			_ = p.stdin.enqueue(l.stdin)
		}
		if l.closeIn {
			p.stdin.close()
		}
		go p.stdin.run()
	}
	p.mu.Lock()
	p.timer = time.AfterFunc(l.timeout, func() { _ = p.Kill(ReasonTimeout) })
	p.mu.Unlock()
	go p.readControl()
}

// pollable returns a non-blocking, poller-registered duplicate of f and
// closes f.
func pollable(f *os.File) (*os.File, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var nfd int
	var derr error
	if err := rc.Control(func(fd uintptr) {
		nfd, derr = dupCloexec(int(fd))
	}); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, derr
	}
	_ = f.Close()
	if err := syscall.SetNonblock(nfd, true); err != nil {
		syscall.Close(nfd)
		return nil, err
	}
	return os.NewFile(uintptr(nfd), f.Name()), nil
}

// outputPipeSize is the output pipe's capacity: larger than the 64 KiB
// default so that a fast writer and the spool reader switch less often.
// Memory is only used while the reader lags.
const outputPipeSize = 1 << 20

// growPipe raises a pipe's capacity to outputPipeSize when the system
// allows it (fs.pipe-max-size, the user's pipe quota); the default stays
// otherwise.
func growPipe(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, outputPipeSize)
		})
	}
}

func dupCloexec(fd int) (int, error) {
	const fDupfdCloexec = 1030 // F_DUPFD_CLOEXEC
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), fDupfdCloexec, 0)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// KillGroup kills every live process of group (an execution being closed
// or revoked), concurrently, and returns how many trees it had to kill. It
// blocks until they are gone or the Kill bound passes, then removes the
// group's scratch directory. A Start for the group under way meanwhile is
// its caller's to undo (the commands service checks its execution's
// handle once the command is in its table, and calls KillGroup again).
func (m *Manager) KillGroup(group, reason string) int {
	m.mu.Lock()
	var ps []*Process
	for _, p := range m.procs {
		if p.group == group {
			ps = append(ps, p)
		}
	}
	m.mu.Unlock()
	n := killAll(ps, reason)
	m.removeScratch(group)
	return n
}

func killAll(ps []*Process, reason string) int {
	var wg sync.WaitGroup
	n := 0
	for _, p := range ps {
		if p.requestKill(reason) {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = p.Kill(reason)
		}()
	}
	wg.Wait()
	return n
}

// Shutdown refuses new processes and kills every live tree (reason
// "shutdown", with Options.ShutdownGrace between SIGTERM and SIGKILL),
// waiting until all are gone, and every supervisor with them, or ctx is
// done (returning ctx's error). It is idempotent: a second call waits for
// the same trees and supervisors.
func (m *Manager) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.drainIdle()
	m.starting.Wait() // a Start in flight registers its process first
	m.mu.Lock()
	ps := make([]*Process, 0, len(m.procs))
	for _, p := range m.procs {
		ps = append(ps, p)
	}
	m.mu.Unlock()
	for _, p := range ps {
		p.requestKillGrace(ReasonShutdown, m.opts.ShutdownGrace)
	}
	for _, p := range ps {
		select {
		case <-p.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// Every supervisor is on its way out; wait until each is reaped (its
	// launcher and cgroup gone with it), also those another Shutdown call
	// is still stopping, or a refill under way is starting: a supervisor
	// that outlived the server would keep its executable busy.
	for {
		m.mu.Lock()
		if m.supervisors == 0 && m.refilling == 0 {
			m.mu.Unlock()
			break
		}
		changed := m.supervisorsChanged
		m.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if entries, err := os.ReadDir(m.opts.Sandbox.ScratchDir); err == nil {
		for _, e := range entries {
			removeTree(filepath.Join(m.opts.Sandbox.ScratchDir, e.Name()))
		}
	}
	return nil
}

// withScratch makes scratch the command's HOME and TMPDIR.
func withScratch(env []string, scratch string) []string {
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "TMPDIR=") {
			out = append(out, kv)
		}
	}
	return append(out, "HOME="+scratch, "TMPDIR="+scratch)
}
