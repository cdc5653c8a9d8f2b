package process

import (
	"context"
	"os"
	"path/filepath"
	"sync"
)

// How the Manager ends trees in bulk: KillGroup for an execution, and
// Shutdown for all of them and every supervisor.

// KillGroup kills every live process of group (an execution being closed
// or revoked), concurrently, and returns how many trees it had to kill. It
// blocks until they are gone or the Kill bound passes, then removes the
// group's scratch directory. A Start for the group under way meanwhile is
// its caller's to undo (the commands service checks its execution's
// handle once the command is in its table, and calls KillGroup again).
func (m *Manager) KillGroup(group, reason string) int {
	m.mu.Lock()
	var ps []*Process
	for _, p := range m.procs {
		if p.group == group {
			ps = append(ps, p)
		}
	}
	m.mu.Unlock()
	n := killAll(ps, reason)
	m.removeScratch(group)
	return n
}

func killAll(ps []*Process, reason string) int {
	var wg sync.WaitGroup
	n := 0
	for _, p := range ps {
		if p.requestKill(reason) {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = p.Kill(reason)
		}()
	}
	wg.Wait()
	return n
}

// Shutdown refuses new processes and kills every live tree (reason
// "shutdown", with Options.ShutdownGrace between SIGTERM and SIGKILL),
// waiting until all are gone, and every supervisor with them, or ctx is
// done (returning ctx's error). It is idempotent: a second call waits for
// the same trees and supervisors.
func (m *Manager) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.drainIdle()
	m.starting.Wait() // a Start in flight registers its process first
	m.mu.Lock()
	ps := make([]*Process, 0, len(m.procs))
	for _, p := range m.procs {
		ps = append(ps, p)
	}
	m.mu.Unlock()
	for _, p := range ps {
		p.requestKillGrace(ReasonShutdown, m.opts.ShutdownGrace)
	}
	for _, p := range ps {
		select {
		case <-p.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// Every supervisor is on its way out; wait until each is reaped (its
	// launcher and cgroup gone with it), also those another Shutdown call
	// is still stopping, or a refill under way is starting: a supervisor
	// that outlived the server would keep its executable busy.
	for {
		m.mu.Lock()
		if m.supervisors == 0 && m.refilling == 0 {
			m.mu.Unlock()
			break
		}
		changed := m.supervisorsChanged
		m.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if entries, err := os.ReadDir(m.opts.Sandbox.ScratchDir); err == nil {
		for _, e := range entries {
			removeTree(filepath.Join(m.opts.Sandbox.ScratchDir, e.Name()))
		}
	}
	return nil
}
