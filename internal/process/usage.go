package process

import (
	"bufio"
	"os"
	"strconv"
	"strings"
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
	// Scratch is its execution's scratch directory.
	Scratch string
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
		r := Running{ID: p.id, Group: p.group, Root: p.root, WritesRoot: !p.readOnly, Scratch: m.scratchPath(p.group),
			OutputBytes: st.OutputBytes}
		for _, pid := range append([]int{p.pid}, pids(descendantsOf(p.pid))...) {
			n, ok := writtenBytes(pid)
			r.Written += n
			r.Hidden = r.Hidden || !ok
		}
		out = append(out, r)
	}
	return out
}

// ScratchBase is the directory holding the scratch directories.
func (m *Manager) ScratchBase() string { return m.opts.Sandbox.ScratchDir }

// StopGroup kills group's live commands with reason and, when empty is
// set, empties its scratch directory once they are gone. Unlike KillGroup
// the group stays open: its next command may start. It returns how many
// trees it killed.
func (m *Manager) StopGroup(group, reason string, empty bool) int {
	m.mu.Lock()
	var ps []*Process
	for _, p := range m.procs {
		if p.group == group {
			ps = append(ps, p)
		}
	}
	m.mu.Unlock()
	n := killAll(ps, reason)
	if empty {
		dir := m.scratchPath(group)
		removeTree(dir)
		_ = os.Mkdir(dir, 0o700)
	}
	return n
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
