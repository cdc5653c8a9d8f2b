package process

import (
	"syscall"
	"time"
)

// A supervisor's view of its command's tree: reaping, walking, signalling
// and killing it.

// reap collects every exited child without blocking and records whether
// the tree is empty. It reports the main process's exit once.
func (s *supervisor) reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.ECHILD {
			s.empty = true
			break
		}
		if err != nil {
			break
		}
		if pid == 0 {
			// Children remain; the tree is empty when the only one left
			// is the next command's idle launcher.
			s.empty = s.launcher != nil && s.onlyLauncherLeft()
			break
		}
		if s.launcher != nil && pid == s.launcher.pid {
			s.launcher.conn.Close()
			s.launcher = nil // died idle; a new one is started when needed
			continue
		}
		if pid == s.mainPID {
			s.mainExited, s.mainStatus = true, ws
		}
	}
	if s.mainExited && !s.exitReported {
		s.exitReported = true
		if s.mainStatus.Signaled() && s.mainStatus.Signal() == syscall.SIGKILL && !s.killing && s.outOfMemory() {
			// The kernel's OOM killer: the command ends whole, as under
			// memory.oom.group, and says why before its exit.
			s.exceeded(ReasonOutOfMemory)
		}
		ev := event{Event: evExit, Done: s.empty}
		if s.mainStatus.Signaled() {
			ev.Signal = int(s.mainStatus.Signal())
		} else {
			code := s.mainStatus.ExitStatus()
			ev.Code = &code
		}
		s.send(ev)
	}
}

// onlyLauncherLeft reports whether the idle launcher is the supervisor's
// only remaining process (wait4 would never say ECHILD while it lives).
func (s *supervisor) onlyLauncherLeft() bool {
	for _, p := range s.tree() {
		if p.pid != s.launcher.pid {
			return false
		}
	}
	return true
}

// tree returns the command's processes: every descendant but the idle
// launcher, which belongs to the next command.
func (s *supervisor) tree() []procEntry {
	all := descendantsOf(s.self)
	if s.launcher == nil {
		return all
	}
	out := all[:0]
	for _, p := range all {
		if p.pid != s.launcher.pid {
			out = append(out, p)
		}
	}
	return out
}

// alive counts the tree's live processes (procEntry.live): a zombie
// leader whose threads run on counts.
func (s *supervisor) alive() int {
	n := 0
	for _, p := range s.tree() {
		if p.live() {
			n++
		}
	}
	return n
}

// signal sends a signal; tests record the calls.
var sendSignal = syscall.Kill

// signalTree delivers sig once to every process of the tree: to the
// command's process group, then to every descendant outside it (setsid'd
// ones have left the group but not the tree). A group member is not
// signalled again: a second SIGINT reads as a second Ctrl-C ("force quit")
// to programs that count them, a second SIGTERM can cut a cleanup short. A
// process forked between the scan and the group signal that left the
// group at once would be missed, so the tree is scanned again until no
// unsignalled descendant appears (a few rounds at most; a fork loop is
// the kill path's problem); those later finds are signalled one by one,
// as they may have been forked after the group signal.
func (s *supervisor) signalTree(sig syscall.Signal) {
	// Scan first: the group signal may turn descendants into zombies
	// before they could be counted.
	procs := s.tree()
	grouped := false
	if s.mainPID > 0 {
		// A process group ID is never reused while the group has members,
		// so this reaches only the command's group.
		grouped = sendSignal(-s.mainPID, sig) == nil
	}
	sent := make(map[int]bool, len(procs))
	for round := 0; round < 4 && len(procs) > 0; round++ {
		for _, p := range procs {
			// A plain zombie has nothing left to signal; a zombie leader
			// with live threads has (procEntry.live).
			if !p.live() || sent[p.pid] {
				continue
			}
			sent[p.pid] = true
			if (sig == syscall.SIGKILL || sig == syscall.SIGTERM) && p.ppid == s.self && p.pid != s.mainPID {
				if s.orphans == nil {
					s.orphans = make(map[int]bool)
				}
				s.orphans[p.pid] = true
			}
			if round == 0 && grouped {
				// Scanned before the group signal and in the group now:
				// it was in the group then.
				if g, err := syscall.Getpgid(p.pid); err == nil && g == s.mainPID {
					continue
				}
			}
			_ = sendSignal(p.pid, sig)
		}
		var fresh []procEntry
		for _, p := range s.tree() {
			if !sent[p.pid] && p.live() {
				fresh = append(fresh, p)
			}
		}
		procs = fresh
	}
}

// killTree terminates the whole tree: SIGTERM and SIGCONT, up to grace for
// it to exit, then SIGKILL rounds until wait4 reports no child left. A
// process with a pending SIGKILL cannot fork, so every round shrinks the
// set of processes that can still create new ones. A grace of zero (a
// limit exceeded) skips SIGTERM: SIGKILL at once.
func (s *supervisor) killTree(grace time.Duration) {
	s.reap()
	if s.empty {
		return
	}
	if grace > 0 {
		s.signalTree(syscall.SIGTERM)
		s.signalTree(syscall.SIGCONT)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		s.reap()
		if s.empty {
			return
		}
		s.pause(min(10*time.Millisecond, time.Until(deadline)))
	}
	s.killing = true
	for {
		if s.cgroupDir != "" {
			_ = cgroupKill(s.cgroupDir)
		}
		s.signalTree(syscall.SIGKILL)
		s.reap()
		if s.empty {
			return
		}
		s.pause(5 * time.Millisecond)
	}
}

// pause waits for a signal (SIGCHLD usually) or d. A SIGTERM, SIGINT
// or SIGHUP is remembered (terminated): the kill under way goes on, and
// the supervisor exits after it.
func (s *supervisor) pause(d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.chld:
	case <-s.term:
		s.terminated = true
	case <-t.C:
	}
}
