package process

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// What a supervisor measures of its command's tree where no cgroup does
// (LimitsSupervisor; limits.go).

// How often a supervisor looks at its tree. Between two looks a fork loop
// or an allocation runs unchecked (the overshoot: docs/design.md §9
// "Commands"), so a tree that grew since the last look, or holds more
// than half a limit, is looked at every usageFastPoll, a quiet one every
// usagePoll (a look at a small tree costs about 0.3 ms: 0.6% of a CPU
// per idle command). A larger tree is looked at less often
// (usageBackoff), so that watching costs at most about an eighth of a
// CPU however large the tree; a tree growing past half a limit at most a
// third (usageUrgentBackoff), until it is stopped or stops growing: a
// look at hundreds of processes takes tens of milliseconds, and eight
// times that is long enough for a fork loop to double.
const (
	usagePoll          = 50 * time.Millisecond
	usageFastPoll      = 5 * time.Millisecond
	usageBackoff       = 8
	usageUrgentBackoff = 2
)

// treeUsage is what a command's tree uses.
type treeUsage struct {
	// tasks counts the threads of every process of the tree (what
	// pids.max and RLIMIT_NPROC count), zombies included: they hold
	// their PID until reaped.
	tasks int
	// memory is the tree's resident memory: the sum of each process's
	// RSS while that stays within the limit it is checked against, else
	// the sum of proportional anonymous and shared memory (Pss_Anon +
	// Pss_Shmem): pages shared between the tree's processes (after a
	// fork) count once, and file pages (the page cache a cgroup would
	// reclaim, the programs' own text) not at all.
	memory int64
}

// measureTree measures the descendants of root (the supervisor), found
// through each thread's children file (not the whole of /proc: a look
// costs in proportion to the tree), except skip (its idle launcher) and
// that one's descendants. memLimit decides whether the RSS sum is enough
// (treeUsage.memory). It stops counting once the tree has more than
// tasksLimit tasks (when positive): the tree is over its limit, and a
// fork loop's tree grows while it is walked.
func measureTree(root, skip, tasksLimit int, memLimit int64) treeUsage {
	var u treeUsage
	var pids []int
	queue := childrenOf(root, 0)
	seen := map[int]bool{root: true, skip: true}
	for len(queue) > 0 {
		pid := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		threads, rss, ok := statThreadsRSS(pid)
		if !ok {
			continue // gone meanwhile
		}
		u.tasks += threads
		u.memory += rss
		if tasksLimit > 0 && u.tasks > tasksLimit {
			return u
		}
		pids = append(pids, pid)
		queue = append(queue, childrenOf(pid, threads)...)
	}
	if memLimit > 0 && u.memory > memLimit {
		u.memory = 0
		for _, pid := range pids {
			u.memory += privateMemory(pid)
		}
	}
	return u
}

// childrenOf lists the children of every thread of pid (a single-threaded
// process's only thread is pid itself).
func childrenOf(pid, threads int) []int {
	base := "/proc/" + strconv.Itoa(pid) + "/task/"
	tids := []string{strconv.Itoa(pid)}
	if threads != 1 {
		d, err := os.Open(base)
		if err != nil {
			return nil
		}
		tids, _ = d.Readdirnames(-1)
		d.Close()
	}
	var out []int
	for _, tid := range tids {
		b, err := os.ReadFile(base + tid + "/children")
		if err != nil {
			continue
		}
		for _, f := range bytes.Fields(b) {
			if c, err := strconv.Atoi(string(f)); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// statThreadsRSS reads num_threads (field 20) and rss (field 24, pages)
// of /proc/<pid>/stat.
func statThreadsRSS(pid int) (threads int, rss int64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	rest := bytes.Fields(b[i+1:])
	// rest[0] is field 3: field n is rest[n-3].
	if len(rest) < 22 {
		return 0, 0, false
	}
	threads, err = strconv.Atoi(string(rest[17]))
	if err != nil {
		return 0, 0, false
	}
	pages, _ := strconv.ParseInt(string(rest[21]), 10, 64)
	return threads, pages * int64(os.Getpagesize()), true
}

// privateMemory returns a process's Pss_Anon + Pss_Shmem
// (smaps_rollup), or where that is not readable (a process that made
// itself non-dumpable) its RssAnon + RssShmem (status), which is at
// least as much.
func privateMemory(pid int) int64 {
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	if b, err := os.ReadFile(dir + "smaps_rollup"); err == nil {
		return sumKB(b, "Pss_Anon:", "Pss_Shmem:")
	}
	if b, err := os.ReadFile(dir + "status"); err == nil {
		return sumKB(b, "RssAnon:", "RssShmem:")
	}
	return 0
}

// sumKB adds the "kB" values of the lines starting with keys.
func sumKB(b []byte, keys ...string) int64 {
	var total int64
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		for _, k := range keys {
			if rest, ok := bytes.CutPrefix(line, []byte(k)); ok {
				if f := bytes.Fields(rest); len(f) > 0 {
					kb, _ := strconv.ParseInt(string(f[0]), 10, 64)
					total += kb << 10
				}
			}
		}
	}
	return total
}

// oomKills returns the kernel's count of OOM kills (/proc/vmstat
// oom_kill), -1 when unknown.
func oomKills() int64 {
	b, err := os.ReadFile("/proc/vmstat")
	if err != nil {
		return -1
	}
	i := bytes.Index(b, []byte("\noom_kill "))
	if i < 0 {
		return -1
	}
	rest := b[i+len("\noom_kill "):]
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	v, err := strconv.ParseInt(string(rest), 10, 64)
	if err != nil {
		return -1
	}
	return v
}
