package process

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Per-command limits (docs/design.md §9 "Commands",
// docs/decisions.md "Per-command limits").
//
// Where a delegated cgroup v2 offers the pids and memory controllers
// (LimitsCgroup), the kernel bounds each command: pids.max refuses its
// forks past the limit, memory.max with memory.oom.group ends it whole
// when it runs out (ReasonOutOfMemory, read from memory.events), and
// each tenant's commands share a cgroup of their own (equal cpu.weight,
// the tenant's share of pids and memory) beneath one for all commands
// (what the server's reserve leaves).
//
// Elsewhere (a container: Docker and Kubernetes mount the cgroup
// filesystem read-only) the supervisor bounds its command
// (LimitsSupervisor): it looks at the command's tree every
// usagePoll (longer while the tree is large) and kills the whole
// command, without a grace period, once it has more tasks than PidsMax
// (ReasonPidsLimit) or more anonymous and shared memory than MemoryMax
// (ReasonOutOfMemory); it reports the tree's use to the Manager, which
// kills the largest command of a tenant over its share. The kernel
// adds what it can without privilege: RLIMIT_NPROC on commands, which
// counts every task of the user (so that commands together never take
// the tasks the server's reserve keeps; in the namespace tier it counts
// per user namespace, so per command, and the supervisor's own soft
// limit when it clones the namespace bounds all commands), and
// oom_score_adj 1000 on commands, so that the kernel's OOM killer (the
// container's memory limit) picks a command, never the server; a
// confined command cannot lower it (its /proc entries are read-only or
// outside its domain).
//
// In every tier commands run below the server's CPU priority
// (Limits.Nice, nice 10 by default): the server's own work — answering
// every grant's calls, reading their output — comes first whatever the
// commands do with the CPU. A launcher sets it on the thread that execs
// the command, so every process of the command inherits it, and the
// supervisor sets it on the command's session's autogroup: where the kernel schedules sessions as groups
// (sched_autogroup_enabled, the server outside any CPU cgroup), each
// command's session would otherwise weigh as much as the whole server.
// A command cannot raise it again (that needs CAP_SYS_NICE, and its /proc
// entries are read-only in its domain); setsid gives it a new autogroup
// at the default weight (see docs/decisions.md "CPU priority of
// commands").

// Kill reasons of the limits (State.KillReason).
const (
	// ReasonOutOfMemory: the command used more memory than
	// Limits.MemoryMax (or its tenant's share) and was ended whole, by
	// the kernel (a cgroup's memory.oom.group; the OOM killer) or by its
	// supervisor.
	ReasonOutOfMemory = "out_of_memory"
	// ReasonPidsLimit: the supervisor found more tasks in the command's
	// tree than Limits.PidsMax (or its tenant's share) and killed it.
	// Under a cgroup (and under RLIMIT_NPROC in the namespace tier) forks
	// past the limit fail instead, and the command runs on.
	ReasonPidsLimit = "pids_limit"
)

// How commands are bounded (LimitsState.Mechanism).
const (
	LimitsCgroup     = "cgroup"
	LimitsSupervisor = "supervisor"
)

// How RLIMIT_NPROC bounds commands (LimitsState.NProc).
const (
	// NProcPerCommand: each command has its own user namespace, where
	// the kernel counts its tasks alone (the namespace tier): forks past
	// PidsMax fail, and past CommandsPids for all commands together.
	NProcPerCommand = "per_command"
	// NProcAllCommands: the kernel counts every task of the server's
	// user: forks of commands fail once the user has CommandsPids tasks,
	// which leaves the server's reserve.
	NProcAllCommands = "all_commands"
	// NProcNone: RLIMIT_NPROC is not used (a cgroup bounds commands) or
	// binds nothing (the server runs as root, whom it does not bind).
	NProcNone = "none"
)

// Defaults of the reserve kept for the server and its supervisors: a
// quarter of what the server and its commands may use together, at least
// these.
const (
	minReservePids   = 256
	minReserveMemory = 512 << 20
	// Smallest limits a command may be given (config validates the
	// settings against them): a shell and a few children; an
	// interpreter's start.
	MinCommandPids   = 16
	MinCommandMemory = 64 << 20
)

// Limits bounds one command's tree (Options.Limits). The zero value of
// each field means its default, which LimitsState reports.
type Limits struct {
	// PidsMax bounds the tasks (processes and threads) of one command;
	// default (and most): its tenant's share, half of
	// LimitsState.CommandsPids.
	PidsMax int
	// MemoryMax bounds one command's memory in bytes; default (and
	// most): its tenant's share, half of LimitsState.CommandsMemory.
	MemoryMax int64
	// Nice is the CPU priority commands run at, 0 (the server's) to 19
	// (the lowest); the server's configuration defaults it to
	// DefaultNice.
	Nice int
	// Budget replaces the probe of the pids and memory the server and its
	// commands may use together (their cgroup's limits, else the
	// machine's: probeBudget); tests use it.
	Budget func() Budget
}

// Budget is what the server and its commands may use together.
type Budget struct {
	Pids   int
	Memory int64
	// FromCgroup: a limit of the server's cgroup (a container's) set it,
	// not the machine's size.
	FromCgroup bool
}

// LimitsState says how commands are bounded here; the startup log,
// doctor, diagnostic and devspace_command_limits_info report it.
type LimitsState struct {
	// Mechanism is LimitsCgroup or LimitsSupervisor; Reason says why in a
	// short sentence without paths.
	Mechanism, Reason string
	// NProc is how RLIMIT_NPROC bounds commands (NProcPerCommand,
	// NProcAllCommands, NProcNone).
	NProc string
	// BudgetPids and BudgetMemory are what the server and its commands
	// may use together; BudgetFrom is "cgroup" when a limit of the
	// server's cgroup (a container's) set them, else "machine".
	BudgetPids   int
	BudgetMemory int64
	BudgetFrom   string
	// CommandsPids and CommandsMemory are what all commands may use
	// together: the budget less the server's reserve.
	CommandsPids   int
	CommandsMemory int64
	// TenantPids and TenantMemory are one tenant's (grant's) share: half
	// of the commands' total.
	TenantPids   int
	TenantMemory int64
	// PidsMax and MemoryMax bound one command (Limits, at most its
	// tenant's share).
	PidsMax   int
	MemoryMax int64
	// Nice is the nice value commands run at (Limits.Nice).
	Nice int
}

// DefaultNice is the CPU priority the server's configuration gives
// commands (DEVSPACE_COMMAND_NICE), MaxNice the lowest there is.
const (
	DefaultNice = 10
	MaxNice     = 19
)

// Limits returns how commands are bounded, fixed at the first command
// (it waits for the cgroup probe New started).
func (m *Manager) Limits() LimitsState { return m.limits() }

// LimitsStateOf returns how a Manager with these options would bound
// commands here, without setting anything up (doctor, diagnostic): sb is
// its SandboxStateOf. Like CgroupAvailable it creates and removes a probe
// cgroup.
func LimitsStateOf(l Limits, sb SandboxState, disableCgroup bool) LimitsState {
	parent := ""
	if !disableCgroup {
		parent, _, _ = cgroupParent()
	}
	return limitsState(l, sb, disableCgroup, parent, func(st LimitsState) (string, bool) {
		return cgroupOffersLimits(parent)
	})
}

// probeLimits decides how commands are bounded; under the cgroup tier it
// sets up its cgroups (commandsCgroup) first.
func (m *Manager) probeLimits() LimitsState {
	parent := m.cgroup()
	return limitsState(m.opts.Limits, m.sandbox, m.opts.DisableCgroup, parent, func(st LimitsState) (string, bool) {
		dir, err := setUpCgroupLimits(parent, st)
		if err != nil {
			return "cgroup limits unavailable: " + err.Error(), false
		}
		m.commandsCgroup = dir
		if n := removeEmptyCgroups(dir); n > 0 {
			m.log.Info("removed empty command cgroups left by an earlier run", "count", n)
		}
		return "the delegated cgroup v2 bounds each command", true
	})
}

// limitsState derives the limits and decides their mechanism: a cgroup
// when parent (the server's delegated cgroup; "" when none) takes them
// (useCgroup), else the supervisor.
func limitsState(l Limits, sb SandboxState, disableCgroup bool, parent string, useCgroup func(LimitsState) (string, bool)) LimitsState {
	budget := l.Budget
	if budget == nil {
		budget = probeBudget
	}
	st := limitsFor(l, budget())
	switch {
	case disableCgroup:
		st.Reason = "per-command cgroups are turned off"
	case parent == "":
		st.Reason = "no writable delegated cgroup v2"
	default:
		var ok bool
		if st.Reason, ok = useCgroup(st); ok {
			st.Mechanism, st.NProc = LimitsCgroup, NProcNone
			return st
		}
	}
	st.Mechanism = LimitsSupervisor
	switch {
	case os.Geteuid() == 0:
		st.NProc = NProcNone
	case sb.IPC == IPCNamespace:
		st.NProc = NProcPerCommand
	default:
		st.NProc = NProcAllCommands
	}
	return st
}

// limitsFor derives the limits from the budget: the server keeps a
// quarter (at least minReservePids and minReserveMemory), each tenant
// may use half of the rest, each command at most its tenant's share.
func limitsFor(l Limits, b Budget) LimitsState {
	pids, memory := b.Pids, b.Memory
	st := LimitsState{BudgetPids: pids, BudgetMemory: memory, BudgetFrom: "machine", Nice: min(max(l.Nice, 0), MaxNice)}
	if b.FromCgroup {
		st.BudgetFrom = "cgroup"
	}
	st.CommandsPids = max(pids-max(minReservePids, pids/4), 2*MinCommandPids)
	st.CommandsMemory = max(memory-max(minReserveMemory, memory/4), 2*MinCommandMemory)
	st.TenantPids, st.TenantMemory = st.CommandsPids/2, st.CommandsMemory/2
	st.PidsMax, st.MemoryMax = st.TenantPids, st.TenantMemory
	if l.PidsMax > 0 {
		st.PidsMax = min(l.PidsMax, st.TenantPids)
	}
	if l.MemoryMax > 0 {
		st.MemoryMax = min(l.MemoryMax, st.TenantMemory)
	}
	return st
}

// probeBudget returns the tasks and memory the server and its commands
// may use together: the tightest pids and memory limits of the server's
// cgroup and its ancestors (a container's pids_limit and mem_limit,
// cgroup v2 or v1, readable also where the cgroup filesystem is mounted
// read-only), else the machine's (kernel.pid_max and threads-max,
// MemTotal).
func probeBudget() Budget {
	b := Budget{Pids: int(min(readInt("/proc/sys/kernel/pid_max"), readInt("/proc/sys/kernel/threads-max"))), Memory: memTotal()}
	if c := cgroupLimit("pids", "pids.max", "pids.max"); c > 0 && c < int64(b.Pids) {
		b.Pids, b.FromCgroup = int(c), true
	}
	if c := cgroupLimit("memory", "memory.max", "memory.limit_in_bytes"); c > 0 && c < b.Memory {
		b.Memory, b.FromCgroup = c, true
	}
	return b
}

// cgroupLimit returns the smallest value of a limit file among the
// server's cgroup and its ancestors up to the mount's root (0 when none
// is set): file2 on the cgroup v2 hierarchy when it has the controller,
// else file1 on the v1 hierarchy of controller.
func cgroupLimit(controller, file2, file1 string) int64 {
	mounts := cgroupMounts()
	paths := ownCgroups()
	var best int64
	for _, mt := range mounts {
		file := file1
		key := controller
		if mt.v2 {
			file, key = file2, ""
		} else if !mt.controllers[controller] {
			continue
		}
		own, ok := paths[key]
		if !ok {
			continue
		}
		rel, ok := strings.CutPrefix(own, mt.root)
		if !ok {
			continue
		}
		dir := filepath.Join(mt.point, filepath.FromSlash(rel))
		for {
			if v := readInt(filepath.Join(dir, file)); v > 0 && (best == 0 || v < best) {
				best = v
			}
			if dir == mt.point || !strings.HasPrefix(dir, mt.point) {
				break
			}
			dir = filepath.Dir(dir)
		}
	}
	return best
}

type cgroupMount struct {
	point, root string
	v2          bool
	controllers map[string]bool
}

// cgroupMounts lists the cgroup (v1) and cgroup2 mounts of mountinfo.
func cgroupMounts() []cgroupMount {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []cgroupMount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		sep := strings.Index(line, " - ")
		if sep < 0 {
			continue
		}
		pre, post := strings.Fields(line[:sep]), strings.Fields(line[sep+3:])
		if len(pre) < 5 || len(post) < 1 || (post[0] != "cgroup" && post[0] != "cgroup2") {
			continue
		}
		mt := cgroupMount{point: unescapeMount(pre[4]), root: unescapeMount(pre[3]), v2: post[0] == "cgroup2",
			controllers: map[string]bool{}}
		if !mt.v2 && len(post) >= 3 {
			for _, o := range strings.Split(post[2], ",") {
				mt.controllers[o] = true
			}
		}
		out = append(out, mt)
	}
	return out
}

// ownCgroups maps each v1 controller of /proc/self/cgroup (and "" for
// cgroup v2) to this process's path in its hierarchy.
func ownCgroups() map[string]string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out
}

// readInt reads a file holding one integer; 0 when it cannot, or holds
// "max" or a value of 2^62 or more (cgroup v1's "no limit").
func readInt(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	v, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil || v <= 0 || v >= 1<<62 {
		return 0
	}
	return v
}

// memTotal returns MemTotal of /proc/meminfo in bytes.
func memTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// supervisorLimitsEnv carries commandLimits to supervisors, and through
// them to their launchers (never to commands: theirs is the spec's
// environment).
const supervisorLimitsEnv = "DEVSPACE_SUPERVISOR_LIMITS"

// commandLimits is what a supervisor and its launchers enforce.
type commandLimits struct {
	// Poll: the supervisor watches its tree and kills it past PidsMax
	// tasks or MemoryMax bytes (LimitsSupervisor).
	Poll bool `json:"poll,omitempty"`
	// Cgroup: the supervisor writes PidsMax and MemoryMax into each
	// command cgroup it makes (LimitsCgroup), and watches the tree of a
	// command that could not get one, as with Poll.
	Cgroup    bool  `json:"cgroup,omitempty"`
	PidsMax   int   `json:"pids_max,omitempty"`
	MemoryMax int64 `json:"memory_max,omitempty"`
	// NProc is the RLIMIT_NPROC a launcher sets before it execs its
	// command (0: none); CloneNProc the supervisor's soft limit while it
	// clones a launcher's user namespace (NProcPerCommand).
	NProc      int64 `json:"nproc,omitempty"`
	CloneNProc int64 `json:"clone_nproc,omitempty"`
	// Nice is the CPU priority a launcher gives its command
	// (commandPriority).
	Nice int `json:"nice,omitempty"`
}

// commandLimits returns what supervisors enforce for st.
func commandLimitsOf(st LimitsState) commandLimits {
	c := commandLimits{PidsMax: st.PidsMax, MemoryMax: st.MemoryMax, Nice: st.Nice}
	if st.Mechanism == LimitsCgroup {
		c.Cgroup = true
		return c
	}
	c.Poll = true
	switch st.NProc {
	case NProcPerCommand:
		c.NProc, c.CloneNProc = int64(st.PidsMax), int64(st.CommandsPids)
	case NProcAllCommands:
		c.NProc = int64(st.CommandsPids)
	}
	return c
}

// env encodes c for supervisorLimitsEnv.
func (c commandLimits) env() string {
	b, _ := json.Marshal(c)
	return supervisorLimitsEnv + "=" + string(b)
}

// limitsFromEnv decodes supervisorLimitsEnv; the zero value when unset.
func limitsFromEnv() commandLimits {
	var c commandLimits
	if v := os.Getenv(supervisorLimitsEnv); v != "" {
		_ = json.Unmarshal([]byte(v), &c)
	}
	return c
}

// enforceTenantShare kills the largest command of tenant when its
// commands together use more than its share (LimitsState.TenantPids,
// TenantMemory), one at a time: the next report of another decides
// again. Only supervisors that bound their trees report their use; under
// a cgroup the tenant's own cgroup holds the share.
func (m *Manager) enforceTenantShare(tenant string) {
	st := m.limits()
	m.mu.Lock()
	var tasks, mostTasks int
	var memory, mostMemory int64
	var byTasks, byMemory *Process
	for _, p := range m.procs {
		if p.tenant != tenant {
			continue
		}
		p.mu.Lock()
		u, killed := p.usage, p.killSent
		p.mu.Unlock()
		if killed {
			continue
		}
		tasks += u.tasks
		memory += u.memory
		if byTasks == nil || u.tasks > mostTasks {
			byTasks, mostTasks = p, u.tasks
		}
		if byMemory == nil || u.memory > mostMemory {
			byMemory, mostMemory = p, u.memory
		}
	}
	m.mu.Unlock()
	switch {
	case tasks > st.TenantPids && byTasks != nil:
		byTasks.requestKillGrace(ReasonPidsLimit, 0)
	case memory > st.TenantMemory && byMemory != nil:
		byMemory.requestKillGrace(ReasonOutOfMemory, 0)
	}
}
