package process

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The cgroup tier of the limits (LimitsCgroup). Controllers can be
// enabled for the children of a cgroup that holds no process (cgroup
// v2's "no internal processes" rule), so the server leaves its own
// cgroup, P, for a leaf of it, and commands get a hierarchy of their
// own beside it:
//
//	P/devspace-server                       the server and its supervisors
//	P/devspace-commands                     what commands may use together
//	P/devspace-commands/t-<hash>            one tenant (grant): its share, cpu.weight 100
//	P/devspace-commands/t-<hash>/devspace-<hex>   one command: its limits, memory.oom.group
//
// A tenant's cgroup is made at its first command and removed after its
// last. A command's cgroup is made by its supervisor before its launcher
// starts in it (supervisorSpec.Cgroup): the supervisor writes the
// command's limits into it first (commandLimits.Cgroup), so nothing of
// the command ever runs unbounded. Warm launchers wait in a cgroup of
// the tenant their supervisor served last; the pool hands a command to a
// supervisor whose launcher waits under the command's tenant when it
// has one (takeSupervisor), and a command of another tenant starts a
// launcher of its own in its cgroup.

const (
	serverCgroupName   = "devspace-server"
	commandsCgroupName = "devspace-commands"
	tenantCgroupPrefix = "t-"
)

// cgroupOffersLimits reports, reading only, whether the delegated
// cgroup parent offers the controllers limits need (pids, memory).
func cgroupOffersLimits(parent string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(parent, "cgroup.controllers"))
	if err != nil {
		return "the delegated cgroup v2 lists no controllers", false
	}
	have := strings.Fields(string(b))
	if !slices.Contains(have, "pids") || !slices.Contains(have, "memory") {
		return "the delegated cgroup v2 has no pids and memory controllers", false
	}
	return "the delegated cgroup v2 has the pids and memory controllers", true
}

// setUpCgroupLimits makes the cgroup tier's layout under parent: it moves
// this process into parent/devspace-server, enables the controllers for
// parent's children and makes parent/devspace-commands, bounded by st's
// totals. It returns the commands' cgroup. It refuses (and moves
// nothing) when parent holds processes other than this one: those would
// keep the controllers off, and are not the server's to move.
func setUpCgroupLimits(parent string, st LimitsState) (string, error) {
	if _, ok := cgroupOffersLimits(parent); !ok {
		return "", errors.New("no pids and memory controllers")
	}
	procs, err := os.ReadFile(filepath.Join(parent, "cgroup.procs"))
	if err != nil {
		return "", err
	}
	self := strconv.Itoa(os.Getpid())
	for _, pid := range strings.Fields(string(procs)) {
		if pid != self {
			return "", errors.New("the server's cgroup holds other processes; give DevSpace a cgroup of its own (systemd: Delegate=yes)")
		}
	}
	server := filepath.Join(parent, serverCgroupName)
	if err := makeCgroup(server); err != nil {
		return "", err
	}
	if err := cgroupMove(server, os.Getpid()); err != nil {
		return "", fmt.Errorf("move the server into its own cgroup: %w", err)
	}
	controllers := enableControllers(parent)
	if !slices.Contains(controllers, "pids") || !slices.Contains(controllers, "memory") {
		return "", errors.New("the pids and memory controllers cannot be enabled")
	}
	commands := filepath.Join(parent, commandsCgroupName)
	if err := makeCgroup(commands); err != nil {
		return "", err
	}
	if err := writeLimits(commands, st.CommandsPids, st.CommandsMemory); err != nil {
		return "", err
	}
	_ = writeCgroupFile(commands, "memory.swap.max", "0")
	enableControllers(commands)
	return commands, nil
}

// enableControllers enables pids, memory and (where it can) cpu for the
// children of dir and returns those enabled.
func enableControllers(dir string) []string {
	var on []string
	for _, c := range []string{"pids", "memory", "cpu"} {
		if writeCgroupFile(dir, "cgroup.subtree_control", "+"+c) == nil {
			on = append(on, c)
		}
	}
	return on
}

// writeLimits writes pids.max and memory.max.
func writeLimits(dir string, pids int, memory int64) error {
	if err := writeCgroupFile(dir, "pids.max", strconv.Itoa(pids)); err != nil {
		return err
	}
	return writeCgroupFile(dir, "memory.max", strconv.FormatInt(memory, 10))
}

func writeCgroupFile(dir, name, value string) error {
	return os.WriteFile(filepath.Join(dir, name), []byte(value), 0)
}

// limitCommandCgroup writes one command's limits into its cgroup before
// anything runs there: pids.max, memory.max, no swap, and
// memory.oom.group, so that the OOM killer ends the command whole.
func limitCommandCgroup(dir string, c commandLimits) error {
	if err := writeLimits(dir, c.PidsMax, c.MemoryMax); err != nil {
		return err
	}
	_ = writeCgroupFile(dir, "memory.swap.max", "0") // absent without swap accounting
	return writeCgroupFile(dir, "memory.oom.group", "1")
}

// tenantCgroupName names a tenant's cgroup: a hash, never the grant ID.
func tenantCgroupName(tenant string) string {
	sum := sha256.Sum256([]byte(tenant))
	return tenantCgroupPrefix + hex.EncodeToString(sum[:12])
}

// commandCgroupParent returns the cgroup under which a command of tenant
// gets its own, creating the tenant's (with its share) under the cgroup
// tier, the server's cgroup under the kill-only one, "" without
// cgroups. The caller has reserved a slot for tenant (tenantLive), so
// the tenant's cgroup is not removed meanwhile.
func (m *Manager) commandCgroupParent(tenant string) string {
	st := m.limits() // sets commandsCgroup
	if m.commandsCgroup == "" {
		return m.cgroup()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if dir, ok := m.tenantCgroups[tenant]; ok {
		return dir
	}
	dir := filepath.Join(m.commandsCgroup, tenantCgroupName(tenant))
	if err := makeCgroup(dir); err != nil {
		m.log.Warn("cannot make a tenant's cgroup; its commands are bounded by their supervisors", "err", err)
		return ""
	}
	if err := writeLimits(dir, st.TenantPids, st.TenantMemory); err != nil {
		_ = os.Remove(dir)
		m.log.Warn("cannot bound a tenant's cgroup; its commands are bounded by their supervisors", "err", err)
		return ""
	}
	_ = writeCgroupFile(dir, "cpu.weight", "100")
	enableControllers(dir)
	m.tenantCgroups[tenant] = dir
	m.lastTenantCgroup = dir
	return dir
}

// tenantGoneLocked removes tenant's cgroup after its last command (a warm
// launcher waiting there keeps it, until a later command's end).
func (m *Manager) tenantGoneLocked(tenant string) {
	dir, ok := m.tenantCgroups[tenant]
	if !ok || os.Remove(dir) != nil {
		return
	}
	delete(m.tenantCgroups, tenant)
	if m.lastTenantCgroup == dir {
		m.lastTenantCgroup = ""
	}
}
