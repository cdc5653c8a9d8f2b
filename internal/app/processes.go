package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

	"github.com/devspace-dev/devspace/internal/activity"
	"github.com/devspace-dev/devspace/internal/commands"
	"github.com/devspace-dev/devspace/internal/config"
	"github.com/devspace-dev/devspace/internal/diskguard"
	"github.com/devspace-dev/devspace/internal/metrics"
	"github.com/devspace-dev/devspace/internal/oauth"
	"github.com/devspace-dev/devspace/internal/process"
	"github.com/devspace-dev/devspace/internal/store"
	"github.com/devspace-dev/devspace/internal/undo"
)

// processMetrics adapts the metrics registry to process.Metrics, and
// tells the activity recorder how many commands run.
type processMetrics struct {
	m        *metrics.Metrics
	activity *activity.Recorder
}

func (p processMetrics) ProcessKilled(reason string) { p.m.ProcessKilled(reason) }
func (p processMetrics) OrphansKilled(n int)         { p.m.OrphansKilledAdd(n) }
func (p processMetrics) OutputTruncated(r string)    { p.m.OutputTruncated(r) }

func (p processMetrics) RunningChanged(n int) {
	p.m.RunningChanged(n)
	p.activity.SetRunning(n)
}

// OutputDir holds retained command output (spool files; their records
// are in SQLite). Commands do not survive a restart, but their output
// does, for its 24 hours (see commands.OutputRecords).
func OutputDir(cfg *config.Config) string { return filepath.Join(cfg.StateDir, "output") }

// ScratchDir holds each execution's private scratch directory (its
// commands' HOME and TMPDIR): a directory of DEVSPACE_SCRATCH_DIR named
// after the state directory, so that servers with different state share
// DEVSPACE_SCRATCH_DIR without touching each other's (a server empties its
// own at start).
func ScratchDir(cfg *config.Config) string {
	sum := sha256.Sum256([]byte(cfg.StateDir))
	return filepath.Join(cfg.ScratchDir, "s-"+hex.EncodeToString(sum[:6]))
}

// commandSandbox is the confinement configuration of commands.
func commandSandbox(cfg *config.Config, opts Options) process.SandboxOptions {
	return process.SandboxOptions{Off: cfg.CommandSandboxOff, DenyNetwork: cfg.CommandNetworkDeny,
		ReadPaths: cfg.CommandReadPaths, ScratchDir: ScratchDir(cfg), ToolsDir: cfg.ToolsDir, Probe: opts.SandboxProbe}
}

// offeredScopes drops process:execute when commands would be refused
// (no Landlock and the sandbox not turned off), so that no consent offers
// a capability the server cannot deliver safely.
func offeredScopes(scopes []string, st process.SandboxState, log *slog.Logger) []string {
	switch st.Mode {
	case process.SandboxOff:
		log.Warn("DEVSPACE_COMMAND_SANDBOX=off: commands run with the server's own rights and can read the state directory, every Project and other commands' environments",
			"landlock_abi", st.Status.ABI)
		return scopes
	case process.SandboxLandlock:
		if st.UnixSockets != process.UnixSocketsGate {
			log.Warn("pidfd_getfd is refused here, so commands get no Unix sockets but socketpair's (unix_sockets=" + st.UnixSockets +
				"); in a container, list SYS_PTRACE in cap_add (the server's user still holds no capability) or use the seccomp profile deploy/seccomp/devspace.json")
		}
		return scopes
	}
	out := make([]string, 0, len(scopes))
	for _, s := range scopes {
		if s != oauth.ScopeExecute {
			out = append(out, s)
		}
	}
	if len(out) != len(scopes) {
		log.Warn("process:execute is not offered: the kernel has no Landlock to confine commands (set DEVSPACE_COMMAND_SANDBOX=off to run them unconfined, at your own risk)",
			"reason", st.Status.Reason)
	}
	return out
}

// sandboxMetric exports devspace_command_sandbox_info.
func sandboxMetric(m *metrics.Metrics, st process.SandboxState) {
	network := "allow"
	if st.DenyNetwork {
		network = "deny"
	}
	m.Info("command_sandbox_info", "How commands are confined; always 1. mode is landlock, off or unavailable; abi the Landlock ABI (0 when none); "+
		"unix_sockets gate or socketpair_only, ipc refused (empty unless mode is landlock).",
		map[string]string{"mode": st.Mode, "abi": strconv.Itoa(st.Status.ABI), "network": network,
			"scoped":       strconv.FormatBool(st.Mode == process.SandboxLandlock && st.Status.Features().Scoped),
			"unix_sockets": st.UnixSockets, "ipc": st.IPC})
}

// commandLimits are the configured per-command limits (0: auto).
func commandLimits(cfg *config.Config) process.Limits {
	return process.Limits{PidsMax: cfg.CommandPidsMax, MemoryMax: cfg.CommandMemoryMax, Nice: cfg.CommandNice}
}

// SandboxState is how a server started with cfg would confine commands,
// probed now without starting one (doctor, diagnostic).
func SandboxState(cfg *config.Config) process.SandboxState {
	return process.SandboxStateOf(commandSandbox(cfg, Options{}))
}

// LimitsState is how a server started with cfg would bound each command's
// processes and memory, given its sandbox state (SandboxState), found
// without starting one (doctor, diagnostic).
func LimitsState(cfg *config.Config, sb process.SandboxState) process.LimitsState {
	return process.LimitsStateOf(commandLimits(cfg), sb, false)
}

// limitsMetric exports devspace_command_limits_info and
// devspace_command_limit{resource,scope}.
func limitsMetric(m *metrics.Metrics, st process.LimitsState) {
	m.Info("command_limits_info", "How each command's processes and memory are bounded; always 1. mechanism is cgroup (the kernel) or supervisor "+
		"(each command's supervisor looks at its tree and stops it past a limit); rlimit_nproc per_command, all_commands or none; "+
		"budget is where the totals come from: cgroup (the container's limits) or machine; nice is the CPU priority commands run at (0 the server's, 19 the lowest).",
		map[string]string{"mechanism": st.Mechanism, "rlimit_nproc": st.NProc, "budget": st.BudgetFrom, "nice": strconv.Itoa(st.Nice)})
	for _, g := range []struct {
		resource, scope string
		v               float64
	}{
		{"tasks", "command", float64(st.PidsMax)}, {"tasks", "grant", float64(st.TenantPids)}, {"tasks", "commands", float64(st.CommandsPids)},
		{"memory_bytes", "command", float64(st.MemoryMax)}, {"memory_bytes", "grant", float64(st.TenantMemory)},
		{"memory_bytes", "commands", float64(st.CommandsMemory)},
	} {
		m.Constant("command_limit", "What commands may use: resource tasks (processes and threads) or memory_bytes; scope command (one), "+
			"grant (one grant's commands together) or commands (all together, what the server's reserve leaves).",
			map[string]string{"resource": g.resource, "scope": g.scope}, g.v)
	}
}

func newProcessManager(cfg *config.Config, opts Options, sandboxOpts process.SandboxOptions, log *slog.Logger, m *metrics.Metrics,
	rec *activity.Recorder) (*process.Manager, error) {
	dir := OutputDir(cfg)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create command output dir: %w", err)
	}
	path := opts.SupervisorPath
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find own executable for command supervisors: %w", err)
		}
		path = exe
	}
	// The command helper beside the binary starts far faster than devspace
	// itself, and every command starts one (its launcher): PreferHelper.
	// The server is a child subreaper: descendants of a lost supervisor
	// re-parent to it (not PID 1) and are killed. The supervisor pool is
	// warmed once the server answers (App.StartBackground): WarmLater.
	return process.New(process.Options{SupervisorPath: path, PreferHelper: opts.SupervisorPath == "", SpoolDir: dir,
		SpoolShareBytes: cfg.OutputGrantShare, LogCommands: cfg.LogShellCommands, Sandbox: sandboxOpts, Limits: commandLimits(cfg),
		Subreaper: true, WarmLater: true,
		Logger: log.With("component", "process"), Metrics: processMetrics{m, rec}})
}

// newOutputRecords reconciles the output a previous run left and exports
// output_bytes_retained, what the grant holding the most holds of it, and
// a grant's share.
func newOutputRecords(ctx context.Context, st *store.Store, procs *process.Manager, log *slog.Logger, m *metrics.Metrics) (*commands.OutputRecords, error) {
	r, err := commands.NewOutputRecords(ctx, commands.OutputRecordsOptions{Store: st, Spool: procs, Logger: log, Metrics: m})
	if err != nil {
		return nil, err
	}
	m.GaugeFunc("output_bytes_retained", "Bytes of command output kept in spool files.", func() float64 {
		return float64(procs.RetainedBytes())
	})
	m.GaugeFunc("output_bytes_retained_grant_max", "Bytes of command output the grant holding the most keeps in spool files, its running commands' included.", func() float64 {
		var most int64
		for _, n := range procs.OwnerRetainedBytes() {
			most = max(most, n)
		}
		return float64(most)
	})
	m.GaugeFunc("output_grant_share_bytes", "One grant's share of the command output spool (DEVSPACE_OUTPUT_GRANT_SHARE).", func() float64 {
		return float64(procs.MaxOwnerRetainedBytes())
	})
	return r, nil
}

// openCommands starts what running commands needs: the process manager,
// the retention of their output (reconciling what a previous run left,
// then sweeping in the background) and the undo snapshots, which close
// with the executions too. On error nothing is left running.
func (a *App) openCommands(ctx context.Context, cfg *config.Config, opts Options, sandboxOpts process.SandboxOptions) error {
	procs, err := newProcessManager(cfg, opts, sandboxOpts, a.log, a.metrics, a.activity)
	if err != nil {
		return err
	}
	outputs, err := newOutputRecords(ctx, a.store, procs, a.log, a.metrics)
	if err != nil {
		_ = procs.Shutdown(ctx)
		return err
	}
	// Indexed from StartBackground on, or when a patch needs them first.
	snapshots, err := undo.NewStore(undo.Options{Dir: filepath.Join(cfg.StateDir, "snapshots"), IndexLater: true})
	if err != nil {
		_ = procs.Shutdown(ctx)
		return fmt.Errorf("open undo snapshots: %w", err)
	}
	a.procs, a.outputs, a.snapshots = procs, outputs, snapshots
	dopts := diskWatch(cfg)
	dopts.Commands, dopts.Log, dopts.Metrics, dopts.RestoreReserve = procs, a.log, diskMetrics{a.metrics}, a.store.RestoreReserve
	a.disk = diskguard.New(dopts)
	logDisk(a.log, a.disk.Status(), cfg)
	limitsMetric(a.metrics, procs.Limits())
	go a.outputs.Run(a.bg)
	go a.disk.Run(a.bg)
	go a.sampleRunning(a.bg)
	return nil
}

// diskWatch is what the disk guard watches and the bounds it keeps; the
// server adds what it acts on.
func diskWatch(cfg *config.Config) diskguard.Options {
	return diskguard.Options{Reserve: cfg.DiskReserve, ScratchMax: cfg.ScratchMax, ToolsBase: cfg.ToolsDir, ToolsMax: cfg.ToolsMax,
		StateDir: cfg.StateDir, ScratchBase: ScratchDir(cfg), Projects: func() []string {
			var roots []string
			for _, p := range cfg.Projects {
				roots = append(roots, p.Path)
			}
			return roots
		}}
}

// DiskStatus is the free space of each filesystem a server started with
// cfg would watch, against its reserve, read now (doctor, diagnostic).
func DiskStatus(cfg *config.Config) []diskguard.FS {
	return diskguard.New(diskWatch(cfg)).Status()
}

// logDisk is the startup log's line about disk space.
func logDisk(log *slog.Logger, fss []diskguard.FS, cfg *config.Config) {
	attrs := []any{"reserve_mib", cfg.DiskReserve >> 20, "scratch_max_mib", cfg.ScratchMax >> 20, "tools_max_mib", cfg.ToolsMax >> 20,
		"scratch_on_state_fs", ScratchOnState(fss)}
	for _, fs := range fss {
		attrs = append(attrs, fs.Role+"_free_mib", fs.Free>>20)
	}
	log.Info("disk guard", attrs...)
}

// ScratchOnState reports whether the scratch directories share the state
// directory's filesystem (Status names a filesystem once, by its first
// role: the state's).
func ScratchOnState(fss []diskguard.FS) bool {
	for _, fs := range fss {
		if fs.Role == "scratch" {
			return false
		}
	}
	return len(fss) > 0
}

// diskMetrics implements diskguard.Metrics.
type diskMetrics struct{ m *metrics.Metrics }

func (d diskMetrics) DiskFree(role string, free int64) {
	d.m.DiskFree.WithLabelValues(role).Set(float64(free))
}
func (d diskMetrics) ScratchLargest(bytes int64) { d.m.ScratchLargest.Set(float64(bytes)) }
