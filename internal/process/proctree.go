package process

import (
	"bytes"
	"os"
	"strconv"
	"sync"
)

// procEntry is one process as /proc/<pid>/stat describes it.
type procEntry struct {
	pid     int
	ppid    int
	state   byte // 'R', 'S', 'Z', …
	threads int  // field 20, num_threads: the thread group's size
}

// live reports whether the process still runs code. State 'Z' alone does
// not say so: it is the thread-group leader's state, and a leader that
// ended only its own thread (a raw exit(2), not exit_group) is a zombie
// while its other threads run on; wait4 cannot reap it until they end.
// Such a process must be signalled (kill(2) on the leader reaches the
// group) and waited for. The thread count tells the two apart: a zombie
// leader counts itself until it is reaped, and every other thread only
// while it runs (an exited thread that is not a leader is released at
// once, or when traced once its tracer is done with it), so a plain
// zombie has 1 and a leader with live threads more (measured on Linux
// 6.18: 1 for a plain zombie; 2 for the leader with one live thread, 1
// after SIGKILL). Field 20 of the stat file already read gives it;
// /proc/<pid>/task would say the same for one more read per process.
func (e procEntry) live() bool {
	return e.state != 'Z' || e.threads > 1
}

// readProcStat parses /proc/<pid>/stat. The command name (field 2) may
// contain spaces and parentheses, so the fields are taken after the last ')'.
func readProcStat(pid int) (procEntry, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procEntry{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+4 >= len(b) {
		return procEntry{}, false
	}
	rest := bytes.Fields(b[i+1:])
	// rest[0] is field 3 (state), rest[17] field 20 (num_threads).
	if len(rest) < 18 || len(rest[0]) != 1 {
		return procEntry{}, false
	}
	ppid, err := strconv.Atoi(string(rest[1]))
	if err != nil {
		return procEntry{}, false
	}
	threads, err := strconv.Atoi(string(rest[17]))
	if err != nil {
		return procEntry{}, false
	}
	return procEntry{pid: pid, ppid: ppid, state: rest[0][0], threads: threads}, true
}

// listProcs returns every process (thread-group leader) visible in /proc.
func listProcs() []procEntry {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	out := make([]procEntry, 0, len(names))
	for _, name := range names {
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if e, ok := readProcStat(pid); ok {
			out = append(out, e)
		}
	}
	return out
}

// descendantsOf returns every process whose parent chain leads to root,
// root itself excluded. Because the supervisor is a child subreaper, a
// descendant whose parent died (setsid daemons, double forks) is re-parented
// to the supervisor and so stays in this set.
func descendantsOf(root int) []procEntry {
	all := listProcs()
	children := make(map[int][]int, len(all))
	byPID := make(map[int]procEntry, len(all))
	for _, e := range all {
		children[e.ppid] = append(children[e.ppid], e.pid)
		byPID[e.pid] = e
	}
	var out []procEntry
	queue := append([]int(nil), children[root]...)
	seen := map[int]bool{root: true}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		out = append(out, byPID[pid])
		queue = append(queue, children[pid]...)
	}
	return out
}

// hasChildrenLists tells whether the kernel keeps children lists
// (CONFIG_PROC_CHILDREN).
var hasChildrenLists = sync.OnceValue(func() bool {
	pid := strconv.Itoa(os.Getpid())
	_, err := os.Stat("/proc/" + pid + "/task/" + pid + "/children")
	return err == nil
})

// treeBelow returns every process below root, root excluded, from the
// kernel's children lists (/proc/<pid>/task/<tid>/children): a walk as
// long as the tree, not the machine's whole process table. ok is false
// on a kernel without them; a process forked during the walk may be
// missed.
func treeBelow(root int) (pids []int, ok bool) {
	if !hasChildrenLists() {
		return nil, false
	}
	queue := []int{root}
	seen := map[int]bool{root: true}
	for len(queue) > 0 {
		for _, c := range childrenOf(queue[0], 0) {
			if !seen[c] {
				seen[c] = true
				pids = append(pids, c)
				queue = append(queue, c)
			}
		}
		queue = queue[1:]
	}
	return pids, true
}
