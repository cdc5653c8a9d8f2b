package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/devspace-dev/devspace/internal/authstate"
	"github.com/devspace-dev/devspace/internal/config"
	"github.com/devspace-dev/devspace/internal/control"
	"github.com/devspace-dev/devspace/internal/diskguard"
	"github.com/devspace-dev/devspace/internal/oauth"
	"github.com/devspace-dev/devspace/internal/process"
	"github.com/devspace-dev/devspace/internal/store"
	"github.com/devspace-dev/devspace/internal/worktree"
)

// Finding levels of the doctor.
const (
	FindingOK      = "ok"
	FindingWarn    = "warn"
	FindingProblem = "problem"
)

// Finding is one line of the doctor: Level is FindingOK, FindingWarn or
// FindingProblem.
type Finding struct{ Level, Text string }

// String is the line as `devspace doctor` prints it: ✓ fine, ! warning,
// ✗ problem.
func (f Finding) String() string {
	mark := map[string]string{FindingOK: "✓ ", FindingWarn: "! ", FindingProblem: "✗ "}[f.Level]
	return mark + f.Text
}

// Doctor checks a valid configuration and its state and returns one
// finding per check, in order; `devspace doctor` prints them and the
// Owner's console shows them. It only reads: nothing is created, migrated
// or changed (the database is opened read-only), and cfg is not changed.
func Doctor(ctx context.Context, cfg *config.Config) []Finding {
	copied := *cfg
	cfg = &copied
	var out []Finding
	add := func(level, format string, a ...any) { out = append(out, Finding{level, fmt.Sprintf(format, a...)}) }
	ok := func(format string, a ...any) { add(FindingOK, format, a...) }
	bad := func(format string, a ...any) { add(FindingProblem, format, a...) }
	warn := func(format string, a ...any) { add(FindingWarn, format, a...) }
	ok("configuration is valid (DEVSPACE_PROJECTS names %d Project(s))", len(cfg.Projects))
	// doctor only looks: it creates, migrates and changes nothing.
	fi, err := os.Stat(cfg.StateDir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && fi.IsDir() && !stateStarted(cfg.StateDir)) {
		// Missing, or a directory made by hand (or by a volume mount)
		// holding neither auth.json nor a database: one line, with the
		// same advice as the owner commands, not a ✗ per missing file.
		bad("%v", NotInitialized(ctx, cfg))
		return out
	}
	if err != nil {
		bad("state directory %s: %v", cfg.StateDir, err)
	} else if fi.Mode().Perm()&0o077 != 0 {
		bad("state directory %s is accessible to other users (chmod 700)", cfg.StateDir)
	} else {
		ok("state directory %s", cfg.StateDir)
	}
	// Landlock has no right for chmod: a command may have changed the
	// modes of these (docs/decisions.md, "Contained commands").
	for _, d := range []string{OutputDir(cfg), ScratchDir(cfg), cfg.ToolsDir} {
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm() != 0o700 {
			bad("%s has mode %v, not 700: commands may fail to start or be readable by others (chmod 700 %s)", d, fi.Mode().Perm(), d)
		}
	}
	if auth, err := authstate.Load(cfg.StateDir, cfg.MasterKeyFile); err != nil {
		bad("auth.json: %v", err)
	} else {
		ok("auth.json loads; master key present")
		// Ask the running server first: only one that holds this state
		// derives the same control key.
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		served, err := control.NewClient(cfg.ControlListen, auth.Derive(control.KeyPurpose)).Projects(cctx)
		cancel()
		switch {
		case err == nil:
			ok("a DevSpace server answers on %s and serves this state", cfg.ControlListen)
			if len(cfg.Projects) == 0 && len(served) > 0 {
				// The owner's shell often lacks the server's DEVSPACE_PROJECTS
				// (make run sets it for the server alone): check the
				// Projects the server serves, not an empty list.
				var labels []string
				for _, p := range served {
					cfg.Projects = append(cfg.Projects, config.Project{Label: p.Label, Path: p.Path})
					labels = append(labels, p.Label)
				}
				ok("the server serves %d Project(s): %s (this shell sets no DEVSPACE_PROJECTS; checked below as the server's)",
					len(served), strings.Join(labels, ", "))
			}
		case control.IsUnavailable(err):
			ok("no server answers on %s: this state is not being served", cfg.ControlListen)
		case errors.Is(err, control.ErrKeyRejected):
			warn("a DevSpace server answers on %s but serves another state, not %s: to manage that server, set DEVSPACE_STATE_DIR "+
				"(or --state-dir) to the directory it serves (`make run` uses .data/state in its checkout)", cfg.ControlListen, cfg.StateDir)
		default:
			warn("something answers on %s but not as a DevSpace server: %v", cfg.ControlListen, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(cfg.StateDir, store.FileName)); err == nil && fi.Mode().Perm()&0o077 != 0 {
		bad("%s is accessible to other users (chmod 600)", store.FileName)
	}
	st, err := store.OpenReadOnly(ctx, cfg.StateDir)
	if err != nil {
		bad("database: %v", err)
		st = nil
	} else {
		defer st.Close()
		v, _ := st.SchemaVersion(ctx)
		ok("database opens (schema version %d; opened read-only)", v)
	}
	if !cfg.ControlIsLoopback() {
		bad("control listener %s is not loopback", cfg.ControlListen)
	} else {
		ok("control listener %s is loopback-only", cfg.ControlListen)
	}
	doctorWorktrees(ctx, cfg, st, ok, warn)
	if st != nil {
		if n, bytes, err := st.ProcessOutputTotals(ctx); err == nil {
			ok("retained command output: %d record(s), %.1f MiB (kept 24 h after each command, 1 GiB at most)", n, float64(bytes)/(1<<20))
		}
	}
	if available, reason := process.CgroupAvailable(); available {
		ok("per-command cgroups available (commands are killed with cgroup.kill)")
	} else {
		warn("no delegated cgroup v2 (%s); commands are stopped through process groups and a subreaper", reason)
	}
	sandbox := SandboxState(cfg)
	doctorSandbox(sandbox, cfg.ScopeEnabled(oauth.ScopeExecute), ok, warn, bad)
	doctorLimits(LimitsState(cfg, sandbox), ok, warn)
	doctorDisk(DiskStatus(cfg), cfg, ok, warn)
	if !cfg.MetricsIsLoopback() {
		warn("metrics listener %s is not loopback; keep it off the tunnel and the internet", cfg.MetricsListen)
	}
	for _, w := range cfg.Warnings() {
		warn("%s", w)
	}
	return out
}

// stateStarted reports whether dir holds any of DevSpace's state files
// (auth.json or the database); doctor calls a directory without either
// not initialized.
func stateStarted(dir string) bool {
	for _, name := range []string{authstate.FileName, store.FileName} {
		if _, err := os.Lstat(filepath.Join(dir, name)); !errors.Is(err, fs.ErrNotExist) {
			return true
		}
	}
	return false
}

// doctorSandbox reports how commands are confined: st is the state a
// server with this configuration would have, execute whether
// process:execute is enabled.
func doctorSandbox(st process.SandboxState, execute bool, ok, warn, bad func(string, ...any)) {
	switch {
	case st.Mode == process.SandboxOff && execute:
		warn("DEVSPACE_COMMAND_SANDBOX=off: RISK, commands run with the server's own rights and can read auth.json, the database, every Project and other commands' environments (Landlock ABI %d is available)", st.Status.ABI)
	case st.Mode == process.SandboxOff:
		ok("DEVSPACE_COMMAND_SANDBOX=off, but process:execute is not offered")
	case st.Mode == process.SandboxUnavailable && execute:
		bad("no Landlock (%s): process:execute is not offered and commands are refused; enable Landlock in the kernel (and allow its system calls in the seccomp profile) or set DEVSPACE_COMMAND_SANDBOX=off at your own risk", st.Status.Reason)
	case st.Mode == process.SandboxUnavailable:
		warn("no Landlock (%s); commands would be refused if process:execute were offered", st.Status.Reason)
	default:
		ok("commands are confined by Landlock ABI %d and a system call policy (rules: %s)", st.Status.ABI, st.Rules)
		if st.UnixSockets == process.UnixSocketsGate {
			ok("commands connect only to Unix sockets inside their own Project or scratch directory (unix_sockets=gate)")
		} else {
			warn("pidfd_getfd is refused here: commands get no Unix sockets but socketpair's (unix_sockets=%s); in a container, list SYS_PTRACE in cap_add (the server's user still holds no capability) or use the seccomp profile deploy/seccomp/devspace.json", st.UnixSockets)
		}
		if st.IPC == process.IPCNamespace {
			ok("each command has user, mount and IPC namespaces of its own: private /tmp and /dev/shm, SysV IPC and POSIX message queues of its own; keyrings, further namespaces and io_uring are refused (ipc=namespace)")
		} else {
			ok("SysV IPC, POSIX message queues, keyrings, namespaces and io_uring are refused to commands, and /dev/shm is outside their domain (ipc=%s: no unprivileged user namespaces here; a container gets them with the seccomp profile deploy/seccomp/devspace.json, see compose.namespaces.yaml)", st.IPC)
		}
		if st.DenyNetwork {
			ok("commands may not create IPv4 or IPv6 sockets: no TCP, UDP, ping or MPTCP (DEVSPACE_COMMAND_NETWORK=deny)")
		} else {
			ok("commands may use TCP, UDP and ping sockets; MPTCP, SCTP, raw and packet sockets are refused")
		}
	}
}

// doctorLimits reports how commands' processes and memory are bounded:
// st is the state a server with this configuration would have.
func doctorLimits(st process.LimitsState, ok, warn func(string, ...any)) {
	mib := func(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }
	totals := fmt.Sprintf("each grant's commands together %d and %s; all commands %d and %s, of %d and %s (%s) less the server's reserve",
		st.TenantPids, mib(st.TenantMemory), st.CommandsPids, mib(st.CommandsMemory), st.BudgetPids, mib(st.BudgetMemory), st.BudgetFrom)
	if st.Mechanism == process.LimitsCgroup {
		ok("each command is bounded by its own cgroup: %d processes and threads (forks past it fail), %s of memory (past it the whole command ends, killReason out_of_memory); %s; an equal share of the CPU per grant; %s (mechanism=cgroup)",
			st.PidsMax, mib(st.MemoryMax), totals, commandPriority(st.Nice))
		return
	}
	line := fmt.Sprintf("each command is bounded by its supervisor (%s), which looks at its tree every 50 ms and stops the whole command past %d processes and threads (killReason pids_limit) or %s of memory (out_of_memory); %s; commands are the kernel's first choice when memory runs out (oom_score_adj 1000); no CPU share per grant, and %s (mechanism=supervisor)",
		st.Reason, st.PidsMax, mib(st.MemoryMax), totals, commandPriority(st.Nice))
	switch st.NProc {
	case process.NProcPerCommand:
		ok("%s; RLIMIT_NPROC refuses a command's forks past its limit, and all commands' past theirs (rlimit_nproc=per_command)", line)
	case process.NProcAllCommands:
		ok("%s; RLIMIT_NPROC refuses commands' forks once the server's user has %d tasks, which keeps the reserve (rlimit_nproc=all_commands; it counts every process of this user on the host: give each DevSpace its own user)", line, st.CommandsPids)
	default:
		warn("%s; the server runs as root, whom RLIMIT_NPROC does not bind: a fork loop grows until its supervisor looks (rlimit_nproc=none); run it as another user, or give it a delegated cgroup", line)
	}
}

// commandPriority says at what CPU priority commands run (DEVSPACE_COMMAND_NICE).
func commandPriority(nice int) string {
	if nice == 0 {
		return "commands run at the server's CPU priority (DEVSPACE_COMMAND_NICE=0): busy commands slow every grant's calls"
	}
	return fmt.Sprintf("commands run at nice %d, below the server, which keeps answering however busy they keep the CPU", nice)
}

// doctorDisk reports the free space of each watched filesystem against
// the reserve.
func doctorDisk(fss []diskguard.FS, cfg *config.Config, ok, warn func(string, ...any)) {
	for _, fs := range fss {
		what := fs.Role + " filesystem"
		if fs.Role == "project" {
			what = "filesystem of Project " + fs.Label
		}
		switch {
		case fs.Refusing:
			warn("%s: %d MiB free of %d MiB, under a quarter of the %d MiB reserve: commands and patches there are refused (disk_low)",
				what, fs.Free>>20, fs.Total>>20, cfg.DiskReserve>>20)
		case fs.Low:
			warn("%s: %d MiB free of %d MiB, under the %d MiB reserve (DEVSPACE_DISK_RESERVE): the commands writing there are stopped",
				what, fs.Free>>20, fs.Total>>20, cfg.DiskReserve>>20)
		default:
			ok("%s: %d MiB free of %d MiB (reserve %d MiB)", what, fs.Free>>20, fs.Total>>20, cfg.DiskReserve>>20)
		}
	}
	if ScratchOnState(fss) {
		ok("the commands' scratch directories (%s) share the state directory's filesystem: the disk guard keeps the reserve free there "+
			"(a volume of their own, DEVSPACE_SCRATCH_DIR, keeps them apart altogether)", cfg.ScratchDir)
	}
}

// doctorWorktrees reports, per Project that can host worktrees, its
// managed worktrees and anything a crash left half-created (without
// changing it), and the last startup prune.
func doctorWorktrees(ctx context.Context, cfg *config.Config, st *store.Store, ok, warn func(string, ...any)) {
	dir := WorktreeDir(cfg)
	if _, err := os.Stat(dir); err != nil {
		ok("no managed worktrees yet")
		return
	}
	m, err := worktree.New(worktree.Options{Dir: dir})
	if err != nil {
		warn("managed worktrees: %v", err)
		return
	}
	for _, p := range cfg.Projects {
		if m.Eligible(ctx, p.Path) != nil {
			continue
		}
		r, err := m.Check(ctx, p.Path)
		switch {
		case err != nil:
			warn("Project %s: cannot inspect its worktrees: %v", p.Label, err)
		case len(r.Unfinished) > 0:
			warn("Project %s: %d managed worktree(s); %d half-created item(s) left by a crash, removed at the next start: %s",
				p.Label, r.Managed, len(r.Unfinished), strings.Join(r.Unfinished, ", "))
		default:
			ok("Project %s: %d managed worktree(s), none half-created", p.Label, r.Managed)
		}
	}
	if st == nil {
		return
	}
	sum, recorded := LastPrune(ctx, st)
	if !recorded {
		return
	}
	if len(sum.Failed) > 0 {
		warn("last start (%s) could not prune the worktrees of: %s", sum.At.Format(time.RFC3339), strings.Join(sum.Failed, ", "))
	} else {
		ok("last start (%s) pruned %d half-created worktree item(s) in %d Project(s)", sum.At.Format(time.RFC3339), sum.Removed, sum.Projects)
	}
}
