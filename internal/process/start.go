package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// Manager.Start: a command's reservation against the live limits, its
// stdio, its assignment to a supervisor and the handshake.

// ptySize is the terminal size of TTY commands.
var ptySize = pty.Winsize{Cols: 120, Rows: 40}

// Start runs spec under a new supervisor, counted against group's limit.
// It returns once the command has started (or failed to): ErrInvalidSpec,
// ErrSpawn (nothing ran: phase not_started), ErrTooMany, ErrAllBusy, ErrClosed. ctx
// bounds only the start; the process outlives it (until it exits, its
// Timeout, Kill, KillGroup or Shutdown).
func (m *Manager) Start(ctx context.Context, group string, spec Spec) (*Process, error) {
	// The homes come before resolve: a direct-mode program is looked up
	// on the PATH the command gets, the tool home's bin directories first.
	var tools string
	if m.opts.Sandbox.ToolsDir != "" && spec.Tools != "" {
		tools = ToolHome(m.opts.Sandbox.ToolsDir, spec.Tools)
	}
	if spec.Env == nil {
		spec.Env = BaseEnv(os.Environ())
	}
	spec.Env = commandEnv(spec.Env, m.scratchPath(group), tools, spec.ReadOnly)
	l, err := resolve(spec)
	if err != nil {
		return nil, err
	}
	l.tools = tools
	if l.tenant == "" {
		l.tenant = group
	}
	if m.sandbox.Mode == SandboxUnavailable {
		return nil, fmt.Errorf("%w: %s", ErrSandboxUnavailable, m.sandbox.Status.Reason)
	}
	m.mu.Lock()
	switch {
	case m.closed:
		m.mu.Unlock()
		return nil, ErrClosed
	case m.live >= m.opts.MaxLive:
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: %d running (at most %d)", ErrAllBusy, m.live, m.opts.MaxLive)
	case m.perGroup[group] >= m.opts.MaxPerGroup:
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: %d running in this context (at most %d)", ErrTooMany, m.perGroup[group], m.opts.MaxPerGroup)
	}
	m.live++
	m.perGroup[group]++
	m.tenantLive[l.tenant]++
	m.starting.Add(1)
	m.mu.Unlock()
	defer m.starting.Done()

	p, err := m.start(ctx, group, l)
	m.mu.Lock()
	if err != nil {
		m.unreserveLocked(group, l.tenant)
		m.mu.Unlock()
		return nil, err
	}
	m.procs[p.id] = p
	if m.started == nil {
		m.started = map[string]string{}
	}
	m.started[group] = l.tenant
	if l.tools != "" && !l.readOnly {
		if m.startedTools == nil {
			m.startedTools = map[string]bool{}
		}
		m.startedTools[l.tools] = true
	}
	closed, live := m.closed, m.live
	m.mu.Unlock()
	m.metrics.RunningChanged(live)
	p.startGoroutines(l)
	if closed {
		go p.Kill(ReasonShutdown)
		return nil, ErrClosed
	}
	return p, nil
}

func (m *Manager) unreserveLocked(group, tenant string) {
	m.live--
	if m.perGroup[group]--; m.perGroup[group] <= 0 {
		delete(m.perGroup, group)
	}
	if m.tenantLive[tenant]--; m.tenantLive[tenant] <= 0 {
		delete(m.tenantLive, tenant)
		m.tenantGoneLocked(tenant)
	}
}

// release forgets a process whose tree is gone.
func (m *Manager) release(p *Process) {
	m.mu.Lock()
	if _, ok := m.procs[p.id]; !ok {
		m.mu.Unlock()
		return
	}
	delete(m.procs, p.id)
	m.unreserveLocked(p.group, p.tenant)
	live := m.live
	m.mu.Unlock()
	m.metrics.RunningChanged(live)
}

// start prepares the command's stdio, assigns it to a supervisor and waits
// for its report.
func (m *Manager) start(ctx context.Context, group string, l launch) (_ *Process, err error) {
	id := newID()
	out := newSpool(id, l.tenant, m.spoolPath(id), l.maxOutput, m.budget)
	var parentEnds, childEnds []*os.File
	defer func() {
		// Only the supervisor (and then the command) may hold the child
		// ends: the output reaches EOF when the tree is gone.
		for _, f := range childEnds {
			_ = f.Close()
		}
		if err != nil {
			for _, f := range parentEnds {
				_ = f.Close()
			}
			_ = out.remove()
		}
	}()

	var stdinChild, outChild, outR, stdinW *os.File
	if l.tty {
		master, slave, err := pty.Open()
		if err != nil {
			return nil, fmt.Errorf("%w: open a pty: %v", ErrSpawn, err)
		}
		childEnds = append(childEnds, slave)
		_ = pty.Setsize(master, &ptySize)
		// pty.Open leaves the master in blocking mode; a pollable copy lets
		// Close interrupt a pending Read or Write.
		pm, err := pollable(master)
		if err != nil {
			master.Close()
			return nil, fmt.Errorf("%w: pty: %v", ErrSpawn, err)
		}
		parentEnds = append(parentEnds, pm)
		stdinChild, outChild, outR, stdinW = slave, slave, pm, pm
	} else {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("%w: output pipe: %v", ErrSpawn, err)
		}
		parentEnds, childEnds = append(parentEnds, r), append(childEnds, w)
		outR, outChild = r, w
		growPipe(w)
		if l.closeIn && len(l.stdin) == 0 {
			if stdinChild, err = os.Open(os.DevNull); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrSpawn, err)
			}
			childEnds = append(childEnds, stdinChild)
		} else {
			r, w, err := os.Pipe()
			if err != nil {
				return nil, fmt.Errorf("%w: stdin pipe: %v", ErrSpawn, err)
			}
			parentEnds, childEnds = append(parentEnds, w), append(childEnds, r)
			stdinChild, stdinW = r, w
		}
	}

	scratch, err := m.scratchDir(group)
	if err != nil {
		return nil, err
	}
	if l.tools != "" {
		if err := m.makeToolHome(l.tools); err != nil {
			return nil, err
		}
	}
	spec := supervisorSpec{
		ID: id, Path: l.path, Argv: l.argv, Dir: l.dir, Env: l.env, TTY: l.tty,
		GraceMS: m.opts.Grace.Milliseconds(),
	}
	if m.sandbox.Mode == SandboxLandlock {
		spec.Sandbox = m.policy(l, scratch)
	}
	var sup *supervisorProc
	var ev event
	parent := m.commandCgroupParent(l.tenant)
	for attempt := 0; sup == nil; attempt++ {
		s, pooled, err := m.takeSupervisor(parent)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSpawn, err)
		}
		if parent != "" {
			// The cgroup its warm launcher was started in when that lies
			// where this command's belongs (under the kill-only tier every
			// supervisor is given one there; under the limits' tier, one
			// of the tenant it served last), else a new one, where the
			// supervisor starts a launcher for it; and the one for the
			// launcher it starts after this command, for the same tenant.
			spec.Cgroup = s.nextCgroup
			if spec.Cgroup == "" || filepath.Dir(spec.Cgroup) != parent {
				spec.Cgroup = newCgroupDir(parent)
			}
			spec.NextCgroup = newCgroupDir(parent)
			s.cgroup, s.nextCgroup = spec.Cgroup, spec.NextCgroup
		}
		ev, err = s.assign(ctx, m.opts.StartTimeout, spec, stdinChild, outChild)
		switch {
		case errors.Is(err, errStaleSupervisor) && pooled && attempt == 0,
			err == nil && ev.Event == evSpawnError && ev.Retry && attempt == 0:
			s.discard(false) // died or was ended while idle; nothing ran
		case err == nil && ev.Event == evStarted:
			sup = s
		case err == nil && ev.Event == evSpawnError:
			m.putSupervisor(s, ev.Reusable)
			return nil, fmt.Errorf("%w: %s", ErrSpawn, ev.Error)
		default:
			// Closing the control socket makes a live supervisor kill
			// whatever it may have started, and exit.
			s.discard(false)
			if err == nil {
				err = errors.New("unexpected supervisor event")
			}
			m.log.Error("supervisor handshake failed", "process_id", id, "err", err, "stderr", s.stderr.String())
			if ctx.Err() != nil {
				return nil, fmt.Errorf("start: %w", ctx.Err())
			}
			return nil, fmt.Errorf("%w: supervisor failed: %v", ErrSpawn, err)
		}
	}
	cgroupDir := spec.Cgroup
	if !ev.Cgroup {
		cgroupDir = ""
	}
	tenant := l.tenant
	if tenant == "" {
		tenant = group
	}
	p := &Process{
		id: id, group: group, tenant: tenant, m: m, grace: m.opts.Grace, sandboxRules: ev.Sandbox,
		startedAt: time.Now(), pid: ev.PID, cgroupDir: cgroupDir, root: l.root, readOnly: l.readOnly, tools: l.tools,
		sup: sup, out: out, outR: outR, capKill: l.killOnCap,
		exited: make(chan struct{}), outputDone: make(chan struct{}), done: make(chan struct{}),
	}
	p.log = m.log.With("process_id", id)
	p.st = State{Status: StatusRunning, StartedAt: p.startedAt, TreeAlive: true}
	if stdinW != nil {
		p.stdin = newStdinQueue(stdinW, l.tty)
	}
	attrs := []any{"pid", p.pid, "tty", l.tty, "cgroup", cgroupDir != "", "sandbox", ev.Sandbox != ""}
	if m.opts.LogCommands {
		attrs = append(attrs, "command", l.preview)
	}
	p.log.Info("process started", attrs...)
	return p, nil
}

// startGoroutines starts output copying, stdin feeding, the timeout and
// event handling of a started process.
func (p *Process) startGoroutines(l launch) {
	go p.readOutput()
	if p.stdin != nil {
		if len(l.stdin) > 0 {
			_ = p.stdin.enqueue(l.stdin)
		}
		if l.closeIn {
			p.stdin.close()
		}
		go p.stdin.run()
	}
	p.mu.Lock()
	p.timer = time.AfterFunc(l.timeout, func() { _ = p.Kill(ReasonTimeout) })
	p.mu.Unlock()
	go p.readControl()
}

// pollable returns a non-blocking, poller-registered duplicate of f and
// closes f.
func pollable(f *os.File) (*os.File, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var nfd int
	var derr error
	if err := rc.Control(func(fd uintptr) {
		nfd, derr = dupCloexec(int(fd))
	}); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, derr
	}
	_ = f.Close()
	if err := syscall.SetNonblock(nfd, true); err != nil {
		syscall.Close(nfd)
		return nil, err
	}
	return os.NewFile(uintptr(nfd), f.Name()), nil
}

// outputPipeSize is the output pipe's capacity: larger than the 64 KiB
// default so that a fast writer and the spool reader switch less often.
// Memory is only used while the reader lags.
const outputPipeSize = 1 << 20

// growPipe raises a pipe's capacity to outputPipeSize when the system
// allows it (fs.pipe-max-size, the user's pipe quota); the default stays
// otherwise.
func growPipe(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, outputPipeSize)
		})
	}
}

func dupCloexec(fd int) (int, error) {
	const fDupfdCloexec = 1030 // F_DUPFD_CLOEXEC
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), fDupfdCloexec, 0)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}
