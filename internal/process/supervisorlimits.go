package process

import "time"

// How a supervisor bounds its command's tree itself where no cgroup does
// (commandLimits.Poll; what it measures: treeusage.go).

// checkUsage looks at the tree of a command the supervisor bounds
// (commandLimits.Poll): past its limits it is killed at once, and its
// use is reported to the server when it changed by a 32nd of a limit
// (the server bounds each tenant's commands together). It returns when
// to look next, at the soonest, and how many times the look's own
// duration must pass first: soon while the tree grows or holds more than
// half a limit; with less of a pause while it grows past half a limit
// (usageUrgentBackoff).
func (s *supervisor) checkUsage() (time.Duration, int) {
	if s.limitKill || s.empty {
		return usagePoll, usageBackoff
	}
	skip := 0
	if s.launcher != nil {
		skip = s.launcher.pid
	}
	u := measureTree(s.self, skip, s.limits.PidsMax, s.limits.MemoryMax)
	switch {
	case s.limits.PidsMax > 0 && u.tasks > s.limits.PidsMax:
		s.exceeded(ReasonPidsLimit)
		return usagePoll, usageBackoff
	case s.limits.MemoryMax > 0 && u.memory > s.limits.MemoryMax:
		s.exceeded(ReasonOutOfMemory)
		return usagePoll, usageBackoff
	}
	last := s.looked
	s.looked = u
	grew := u.tasks > last.tasks || u.memory > last.memory+max(1<<20, s.limits.MemoryMax/64)
	high := 2*u.tasks > s.limits.PidsMax || 2*u.memory > s.limits.MemoryMax
	next, backoff := usagePoll, usageBackoff
	if grew || high {
		next = usageFastPoll
	}
	if grew && high {
		backoff = usageUrgentBackoff
	}
	if abs(u.tasks-s.reported.tasks) >= max(1, s.limits.PidsMax/32) ||
		abs64(u.memory-s.reported.memory) >= max(1<<20, s.limits.MemoryMax/32) {
		s.reported = u
		s.send(event{Event: evUsage, Tasks: u.tasks, Memory: u.memory})
	}
	return next, backoff
}

// exceeded reports that the tree exceeded a limit (reason) and has it
// killed at once (the job loop: limitKill).
func (s *supervisor) exceeded(reason string) {
	if s.limitKill {
		return
	}
	s.limitKill = true
	s.send(event{Event: evLimit, Reason: reason})
}

// outOfMemory reports whether the kernel ran out of memory for the
// command: its cgroup's memory.events count an OOM kill, or, without
// one, the kernel counted an OOM kill since the command started (the
// container's limit: commands have oom_score_adj 1000, so its victim is
// a command, and the biggest).
func (s *supervisor) outOfMemory() bool {
	if s.cgroupDir != "" {
		return cgroupOOMKilled(s.cgroupDir)
	}
	if !s.polls() || s.oomKills < 0 {
		return false
	}
	return oomKills() > s.oomKills
}

// polls reports whether the supervisor bounds its command's tree itself:
// no cgroup does (commandLimits.Poll), or the command could not get the
// cgroup that would have (commandLimits.Cgroup).
func (s *supervisor) polls() bool {
	return s.limits.Poll || s.limits.Cgroup && s.cgroupDir == ""
}

func abs(n int) int { return max(n, -n) }

func abs64(n int64) int64 { return max(n, -n) }
