package process

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"time"
)

// Kill reasons of the disk guard (internal/diskguard).
const (
	// ReasonDiskLow: a filesystem the command wrote to fell below the
	// disk reserve, and this command wrote the most there.
	ReasonDiskLow = "disk_low"
	// ReasonScratchQuota: the command's scratch directory passed its
	// quota; it was emptied.
	ReasonScratchQuota = "scratch_quota"
)

// Running is a live command as the disk guard sees it.
type Running struct {
	ID, Group string
	// Root is the Project (or worktree) directory the command runs in;
	// WritesRoot is false for a readOnly command.
	Root       string
	WritesRoot bool
	// Scratch is its execution's scratch directory; Tenant whose command
	// it is (Spec.Tenant, the grant).
	Scratch, Tenant string
	// Tools is the tool home the command may write ("" when it has none
	// or is readOnly).
	Tools string
	// ToolHome is the tool home it runs with, readOnly or not ("" when
	// it has none): a readOnly command reads and executes its tools there.
	ToolHome string
	// OutputBytes is what it wrote to its output (the spool, in the state
	// directory).
	OutputBytes int64
	// Written is what its processes passed to write calls (wchar of
	// /proc/<pid>/io over its tree: files on any filesystem, tmpfs
	// included, pipes and sockets), as far as they can be read; Hidden is
	// set when a process of the tree could not be read (gone meanwhile,
	// or made undumpable).
	Written int64
	Hidden  bool
}

// Commands lists the live commands. Written walks /proc: call it when it
// is needed, not on a fast path.
func (m *Manager) Commands() []Running {
	m.mu.Lock()
	ps := make([]*Process, 0, len(m.procs))
	for _, p := range m.procs {
		ps = append(ps, p)
	}
	m.mu.Unlock()
	out := make([]Running, 0, len(ps))
	for _, p := range ps {
		st := p.State()
		if !st.TreeAlive {
			continue
		}
		r := Running{ID: p.id, Group: p.group, Root: p.root, WritesRoot: !p.readOnly, Scratch: m.scratchPath(p.group), Tenant: p.tenant,
			ToolHome: p.tools, OutputBytes: st.OutputBytes}
		if !p.readOnly {
			r.Tools = p.tools
		}
		for _, pid := range p.treePIDs() {
			n, ok := writtenBytes(pid)
			r.Written += n
			r.Hidden = r.Hidden || !ok
		}
		out = append(out, r)
	}
	return out
}

// GroupScratch is a group's scratch directory and whose it is.
type GroupScratch struct{ Dir, Tenant string }

// StartedGroups returns the scratch directories of the groups whose
// commands started since the last call, by group: a command quicker than
// the disk guard's look still has its scratch directory measured.
func (m *Manager) StartedGroups() map[string]GroupScratch {
	m.mu.Lock()
	started := m.started
	m.started = nil
	m.mu.Unlock()
	out := make(map[string]GroupScratch, len(started))
	for g, tenant := range started {
		out[g] = GroupScratch{Dir: m.scratchPath(g), Tenant: tenant}
	}
	return out
}

// StartedTools returns the tool homes written by commands that started
// since the last call: a command quicker than the disk guard's look still
// has its tool home measured.
func (m *Manager) StartedTools() []string {
	m.mu.Lock()
	started := m.startedTools
	m.startedTools = nil
	m.mu.Unlock()
	out := make([]string, 0, len(started))
	for dir := range started {
		out = append(out, dir)
	}
	return out
}

// StopTools kills, with reason and at once (like StopGroup), every live
// command that may write the tool home dir, whatever its execution, and
// leaves dir as it is. It returns how many trees it killed.
func (m *Manager) StopTools(dir, reason string) int {
	m.mu.Lock()
	var ps []*Process
	for _, p := range m.procs {
		if p.tools == dir && !p.readOnly {
			ps = append(ps, p)
		}
	}
	m.mu.Unlock()
	n := 0
	for _, p := range ps {
		if p.requestKillGrace(reason, 0) {
			n++
		}
	}
	bound := time.NewTimer(killBound)
	defer bound.Stop()
	for _, p := range ps {
		select {
		case <-p.done:
		case <-bound.C:
		}
	}
	return n
}

// ScratchBase is the directory holding the scratch directories.
func (m *Manager) ScratchBase() string { return m.opts.Sandbox.ScratchDir }

// StopGroup kills group's live commands with reason at once (SIGKILL, no
// grace: a writer filling a disk gets no time to write more) and, when
// empty is set, empties its scratch directory once they are gone. Unlike
// KillGroup the group stays open: its next command may start. It returns
// how many trees it killed.
func (m *Manager) StopGroup(group, reason string, empty bool) int {
	m.mu.Lock()
	var ps []*Process
	for _, p := range m.procs {
		if p.group == group {
			ps = append(ps, p)
		}
	}
	m.mu.Unlock()
	n := 0
	for _, p := range ps {
		if p.requestKillGrace(reason, 0) {
			n++
		}
	}
	bound := time.NewTimer(killBound)
	defer bound.Stop()
	for _, p := range ps {
		select {
		case <-p.done:
		case <-bound.C:
		}
	}
	if empty {
		emptyDir(m.scratchPath(group))
	}
	return n
}

// treePIDs lists the command's processes: those below its supervisor
// (a child subreaper, so daemons that left the main process are there
// too), else the main process and its descendants.
func (p *Process) treePIDs() []int {
	if p.sup != nil && p.sup.cmd != nil && p.sup.cmd.Process != nil {
		if below, ok := treeBelow(p.sup.cmd.Process.Pid); ok {
			return below
		}
	}
	return append([]int{p.pid}, pids(descendantsOf(p.pid))...)
}

func pids(es []procEntry) []int {
	out := make([]int, len(es))
	for i, e := range es {
		out[i] = e.pid
	}
	return out
}

// writtenBytes is wchar of /proc/<pid>/io: what the process passed to
// write calls. ok is false when it cannot be read (gone, or made
// undumpable).
func writtenBytes(pid int) (n int64, ok bool) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/io")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, found := strings.CutPrefix(sc.Text(), "wchar: "); found {
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
