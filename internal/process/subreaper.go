package process

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The server as a child subreaper (Options.Subreaper). A supervisor
// cannot be killed by its command (Landlock scopes signals), but it may
// still be lost (the OOM killer, an operator's kill). Its command's main
// process dies with it (parent-death signal); the command's descendants
// then re-parent to the nearest subreaper, the server, instead of PID 1.
// They are recognised by two facts: the server is their parent, and they
// live in a session other than the server's (every command gets its own
// session, and setsid only makes new ones). The server's other children
// (supervisors, git run by review) keep the server's session, so their
// exit statuses stay with os/exec. An orphan is killed with SIGKILL and
// reaped; it must be seen in two consecutive sweeps, so that a process
// in the middle of being started is never mistaken for one. A sweep
// that finds no orphan left (none killed, no candidate) is clean;
// orphansGone waits for one, so that a lost supervisor's Process is Done
// (and its Project lease released) only once its orphans are gone.

// orphanSweep is how often the subreaper looks for orphans.
const orphanSweep = 500 * time.Millisecond

// becomeSubreaper makes the server a child subreaper and starts the sweep.
func (m *Manager) becomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return err
	}
	sid, err := unix.Getsid(0)
	if err != nil {
		return err
	}
	m.ownSID = sid
	m.sweepNow = make(chan struct{}, 1)
	go m.sweepLoop()
	return nil
}

func (m *Manager) sweepLoop() {
	t := time.NewTicker(orphanSweep)
	defer t.Stop()
	seen := map[int]bool{}
	for {
		select {
		case <-t.C:
		case <-m.sweepNow:
			// Re-parenting follows the supervisor's death by a moment.
			time.Sleep(20 * time.Millisecond)
		}
		// Only a sweep that starts after a waiter arrived may answer it.
		m.sweepMu.Lock()
		waiting := m.sweepWaiters
		m.sweepWaiters = nil
		m.sweepMu.Unlock()
		var clean bool
		seen, clean = m.sweepOrphans(seen)
		if clean {
			for _, ch := range waiting {
				close(ch)
			}
			continue
		}
		if len(waiting) > 0 {
			m.sweepMu.Lock()
			m.sweepWaiters = append(m.sweepWaiters, waiting...)
			m.sweepMu.Unlock()
			m.triggerSweep()
		}
	}
}

// orphansGone returns a channel closed by the first clean sweep that
// starts after the call: no process re-parented to the server from a
// command's tree remains. Call it once the lost supervisor is reaped (its
// children have re-parented by then). It returns nil when the server is
// not a subreaper: orphans then re-parent to PID 1 and cannot be found.
func (m *Manager) orphansGone() <-chan struct{} {
	if m.sweepNow == nil {
		return nil
	}
	ch := make(chan struct{})
	m.sweepMu.Lock()
	m.sweepWaiters = append(m.sweepWaiters, ch)
	m.sweepMu.Unlock()
	m.triggerSweep()
	return ch
}

// sweepOrphans kills and reaps the orphans found now that were already
// candidates at the previous sweep (prev); it returns this sweep's
// candidates, and whether the sweep was clean (it found no live orphan).
func (m *Manager) sweepOrphans(prev map[int]bool) (map[int]bool, bool) {
	self := syscall.Getpid()
	now := map[int]bool{}
	killed := 0
	for _, p := range listProcs() {
		if p.ppid != self {
			continue
		}
		sid, err := unix.Getsid(p.pid)
		if err != nil || sid == m.ownSID {
			continue
		}
		if !p.live() {
			// Exited on its own: reap it (it is not an os/exec child). A
			// zombie leader with live threads cannot be reaped yet: it is
			// an orphan like any other (procEntry.live).
			var ws unix.WaitStatus
			_, _ = unix.Wait4(p.pid, &ws, unix.WNOHANG, nil)
			continue
		}
		if !prev[p.pid] {
			now[p.pid] = true
			continue
		}
		_ = unix.Kill(p.pid, unix.SIGKILL)
		killed++
		var ws unix.WaitStatus
		_, _ = unix.Wait4(p.pid, &ws, 0, nil)
	}
	if killed > 0 {
		m.metrics.OrphansKilled(killed)
		m.log.Warn("killed processes left by a lost supervisor", "processes", killed)
	}
	if len(now) > 0 {
		// Candidates are confirmed at the next sweep; do not wait long.
		m.triggerSweep()
	}
	// A killed orphan's children re-parent as it dies: the next sweep
	// looks for them.
	return now, len(now) == 0 && killed == 0
}

// triggerSweep asks for a sweep now (a supervisor was lost).
func (m *Manager) triggerSweep() {
	if m.sweepNow == nil {
		return
	}
	select {
	case m.sweepNow <- struct{}{}:
	default:
	}
}
