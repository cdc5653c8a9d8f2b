package process

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// supervisorProc is the server's handle on one supervisor process, idle
// (in the pool) or assigned to a command.
type supervisorProc struct {
	cmd    *exec.Cmd
	conn   *net.UnixConn
	rd     *bufio.Reader
	stderr *limitedBuffer
	// cgroup is the cgroup of its last command, nextCgroup the one its
	// warm launcher is started in (supervisorSpec.NextCgroup); "" without
	// cgroups. The supervisor creates and removes them; discard removes
	// what a supervisor that died may have left.
	cgroup, nextCgroup string
	// reaped tells the Manager that the process is reaped.
	reaped func()
}

// launchSupervisor starts a supervisor that waits for its command.
func (m *Manager) launchSupervisor() (*supervisorProc, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	srv := os.NewFile(uintptr(fds[0]), "devspace-control")
	child := os.NewFile(uintptr(fds[1]), "devspace-control-child")
	defer child.Close()
	conn, err := net.FileConn(srv) // dups the descriptor
	srv.Close()
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	stderr := &limitedBuffer{max: 8 << 10}
	cmd := exec.Command(m.supervisorPath(), m.opts.SupervisorArgs...)
	// The supervisor needs nothing from the server's environment (which
	// may hold secrets); the command's environment travels in the spec.
	cmd.Env = append([]string{"GOMAXPROCS=1"}, m.opts.SupervisorEnv...)
	if m.sandbox.IPC == IPCNamespace {
		cmd.Env = append(cmd.Env, supervisorNamespacesEnv+"=1")
	}
	cmd.Env = append(cmd.Env, m.supervisorLimits().env())
	// Its first launcher waits in a cgroup of its own: under the server's
	// cgroup, or under the limits' tier in the tenant's that ran a
	// command last (none before the first command).
	parent := m.cgroup()
	if m.commandsCgroup != "" {
		m.mu.Lock()
		parent = m.lastTenantCgroup
		m.mu.Unlock()
	}
	var first string
	if parent != "" {
		first = newCgroupDir(parent)
		cmd.Env = append(cmd.Env, supervisorCgroupEnv+"="+first)
	}
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{child}
	cmd.Stderr = stderr
	// Its own process group: a terminal's Ctrl-C reaches the server, which
	// shuts down in order, not every supervisor at once.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("start the supervisor: %w", err)
	}
	m.mu.Lock()
	m.supervisors++
	m.mu.Unlock()
	uc := conn.(*net.UnixConn)
	return &supervisorProc{cmd: cmd, conn: uc, rd: bufio.NewReaderSize(uc, 4<<10), stderr: stderr,
		nextCgroup: first, reaped: m.supervisorGone}, nil
}

// supervisorGone counts a supervisor reaped (discard).
func (m *Manager) supervisorGone() {
	m.mu.Lock()
	m.supervisors--
	m.supervisorsChangedLocked()
	m.mu.Unlock()
}

// supervisorsChangedLocked wakes whoever waits for the count of
// supervisors or refills to change (Shutdown).
func (m *Manager) supervisorsChangedLocked() {
	close(m.supervisorsChanged)
	m.supervisorsChanged = make(chan struct{})
}

// newCgroupDir names a fresh cgroup for a command under parent.
func newCgroupDir(parent string) string { return filepath.Join(parent, "devspace-"+randomToken(12)) }

// discard closes the socket of a supervisor that has no tree (an idle one
// exits on EOF; an assigned one kills its tree first) and reaps it. A
// supervisor removes its cgroups itself; those a killed one left are
// removed here (what they still hold is killed).
func (s *supervisorProc) discard(wait bool) {
	_ = s.conn.Close()
	reap := func() {
		_ = s.cmd.Wait()
		for _, dir := range []string{s.cgroup, s.nextCgroup} {
			if dir != "" {
				_ = cgroupRemove(dir, time.Second)
			}
		}
		s.reaped()
	}
	if wait {
		reap()
		return
	}
	go reap()
}

// refillDelay is how long an empty pool waits before starting supervisors.
const refillDelay = 50 * time.Millisecond

// errStaleSupervisor means an idle supervisor was gone before it received
// its command; a fresh one may be tried, nothing ran.
var errStaleSupervisor = errors.New("idle supervisor is gone")

// assign hands the command's stdio and spec to the supervisor and returns
// its first event (started or spawn_error).
func (s *supervisorProc) assign(ctx context.Context, bound time.Duration, spec supervisorSpec, stdin, output *os.File) (event, error) {
	deadline := time.Now().Add(bound)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = s.conn.SetDeadline(deadline)
	defer s.conn.SetDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { _ = s.conn.SetDeadline(time.Now()) })
	defer stop()

	// The spec is encoded first, so that it follows the descriptors at
	// once and the supervisor finds both when it wakes.
	b, err := json.Marshal(spec)
	if err != nil {
		return event{}, err
	}
	// Fd puts the descriptors in blocking mode, which is what the command
	// expects of its stdio.
	rights := syscall.UnixRights(int(stdin.Fd()), int(output.Fd()))
	if _, _, err := s.conn.WriteMsgUnix([]byte{'F'}, rights, nil); err != nil {
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
			return event{}, errStaleSupervisor
		}
		return event{}, err
	}
	if _, err := s.conn.Write(append(b, '\n')); err != nil {
		// A supervisor gone before the whole spec line reached it cannot
		// have run the command: it needs the line's end.
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
			return event{}, errStaleSupervisor
		}
		return event{}, fmt.Errorf("send spec: %w", err)
	}
	line, err := readLine(s.rd, 64<<10)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return event{}, errors.New("supervisor exited during start")
		}
		return event{}, err
	}
	var ev event
	if err := json.Unmarshal(line, &ev); err != nil {
		return event{}, err
	}
	return ev, nil
}

// takeSupervisor returns an idle supervisor, or a new one when the pool is
// empty. Supervisors come back to the pool when their command's tree is
// gone (putSupervisor), so the pool is refilled in the background only
// once it runs dry. One whose warm launcher waits under cgroupParent
// (where the command's cgroup belongs) is preferred.
func (m *Manager) takeSupervisor(cgroupParent string) (*supervisorProc, bool, error) {
	m.mu.Lock()
	var s *supervisorProc
	if n := len(m.idle); n > 0 {
		// The one idle longest: a supervisor comes back to the pool when
		// its command's tree is gone and only then starts its next
		// launcher, so the most recently returned one is the least likely
		// to have it ready (commands back to back: ~20% faster).
		i := 0
		for j, c := range m.idle {
			if c.nextCgroup != "" && filepath.Dir(c.nextCgroup) == cgroupParent {
				i = j
				break
			}
		}
		s = m.idle[i]
		m.idle = append(m.idle[:i:i], m.idle[i+1:]...)
	}
	empty := len(m.idle) == 0
	m.mu.Unlock()
	if empty {
		// A supervisor whose command just ended usually comes back first;
		// only a pool still empty a moment later needs a new one.
		time.AfterFunc(refillDelay, m.refill)
	}
	if s != nil {
		return s, true, nil
	}
	s, err := m.launchSupervisor()
	return s, false, err
}

// putSupervisor returns a supervisor whose command is over to the pool, or
// stops it when it may not be reused or the pool is full.
func (m *Manager) putSupervisor(s *supervisorProc, reusable bool) {
	m.mu.Lock()
	if reusable && !m.closed && len(m.idle) < m.opts.IdleSupervisors {
		m.idle = append(m.idle, s)
		m.mu.Unlock()
		return
	}
	m.mu.Unlock()
	s.discard(true)
}

// refill starts supervisors until the pool holds Options.IdleSupervisors.
func (m *Manager) refill() {
	for {
		m.mu.Lock()
		if m.closed || len(m.idle)+m.refilling >= m.opts.IdleSupervisors {
			m.mu.Unlock()
			return
		}
		m.refilling++
		m.mu.Unlock()
		s, err := m.launchSupervisor()
		m.mu.Lock()
		m.refilling--
		m.supervisorsChangedLocked()
		if err != nil {
			m.mu.Unlock()
			m.log.Warn("cannot pre-start a supervisor", "err", err)
			return
		}
		// A supervisor returned meanwhile (putSupervisor) may have filled
		// the pool: never hold more than Options.IdleSupervisors.
		if m.closed || len(m.idle) >= m.opts.IdleSupervisors {
			m.mu.Unlock()
			s.discard(true)
			return
		}
		m.idle = append(m.idle, s)
		m.mu.Unlock()
	}
}

// drainIdle stops every idle supervisor.
func (m *Manager) drainIdle() {
	m.mu.Lock()
	idle := m.idle
	m.idle = nil
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range idle {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.discard(true)
		}()
	}
	wg.Wait()
}
