package process

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Status values of State.Status.
const (
	// StatusRunning: the command's main process is alive.
	StatusRunning = "running"
	// StatusExited: the main process ended on its own (an Interrupt the
	// command obeyed included; see State.Interrupted).
	StatusExited = "exited"
	// StatusKilled: the main process ended after Kill, KillGroup or
	// Shutdown asked for the tree to be killed.
	StatusKilled = "killed"
	// StatusTimedOut: the main process ended after Spec.Timeout elapsed.
	StatusTimedOut = "timed_out"
)

// Kill reasons the package itself uses; callers pass their own (close,
// revoke, …). Keep the set small: it labels the process_kills_total metric.
const (
	ReasonTimeout     = "timeout"
	ReasonShutdown    = "shutdown"
	ReasonOutputLimit = "output_limit"
	// ReasonSupervisorLost marks a tree whose supervisor died unexpectedly;
	// the server then killed the command's process group (and cgroup).
	ReasonSupervisorLost = "supervisor_lost"
	// ReasonInterrupt: an interrupt's SIGINT left processes alive, so the
	// tree was killed.
	ReasonInterrupt = "interrupt"
)

// killBound is how long Kill waits beyond the grace period.
const killBound = 10 * time.Second

// State is a snapshot of a process.
type State struct {
	Status string
	// ExitCode is set when the main process exited normally; Signal (e.g.
	// "SIGTERM") when a signal ended it.
	ExitCode *int
	Signal   string

	StartedAt time.Time
	EndedAt   time.Time // when the main process ended; zero while running

	// Revision increases on every change of state, output or input.
	Revision int64

	// OutputBytes counts everything the command wrote (stdout and stderr
	// combined); RetainedBytes what the spool holds. Truncated means output
	// was dropped (OutputBytes > RetainedBytes).
	OutputBytes   int64
	RetainedBytes int64
	Truncated     bool

	// TreeAlive is true while any process of the command's tree (the main
	// process or a descendant it left behind) is alive or its output is
	// still being drained. The Project's write lease is held until it is
	// false.
	TreeAlive bool

	// KillReason is the reason of the first Kill (empty if none);
	// Interrupted is true once Interrupt was sent. InterruptKilled counts
	// the processes an interrupt had to kill because SIGINT left them
	// alive (KillReason is then "interrupt").
	KillReason      string
	Interrupted     bool
	InterruptKilled int

	StdinClosed bool
}

// Process is one command under its supervisor. It is created by
// Manager.Start and is safe for concurrent use. Its spool file stays on disk
// until Remove; the Manager forgets the process once its tree is gone.
type Process struct {
	id, group string
	tenant    string // Spec.Tenant, else group
	m         *Manager
	log       *slog.Logger
	grace     time.Duration
	startedAt time.Time
	pid       int    // main process (and process group) ID
	cgroupDir string // "" when the command has no cgroup
	// sandboxRules lists the Landlock rules enforced; "" when unconfined.
	sandboxRules string
	// root is Spec.Root, readOnly Spec.ReadOnly (the disk guard's view).
	root     string
	readOnly bool
	// tools is the command's tool home ("" when none).
	tools string

	sup      *supervisorProc
	ctlMu    sync.Mutex
	detached bool // done was received: the supervisor may serve another command
	out      *spool
	outR     *os.File // output pipe read end or pty master
	stdin    *stdinQueue
	capKill  bool // Spec.KillOnOutputLimit
	readBsy  atomic.Bool

	exited     chan struct{} // closed when the main process's end is recorded
	outputDone chan struct{} // closed when the output reader hit EOF
	done       chan struct{} // closed when the tree is gone and output drained

	mu       sync.Mutex
	st       State
	notify   chan struct{}
	killSent bool
	timer    *time.Timer
	// usage is what the tree used when its supervisor last said
	// (evUsage; only where the supervisor bounds it).
	usage treeUsage
}

// ID returns the process ID ("proc_…"), random and unique.
func (p *Process) ID() string { return p.id }

// Group returns the group (execution ID) given to Start.
func (p *Process) Group() string { return p.group }

// Cgroup reports whether the command runs in its own cgroup v2.
func (p *Process) Cgroup() bool { return p.cgroupDir != "" }

// Sandbox lists the Landlock rules the command runs under ("" when it is
// not confined).
func (p *Process) Sandbox() string { return p.sandboxRules }

// Done is closed once no process of the tree remains and its output is
// fully retained. Release the Project's write lease then.
func (p *Process) Done() <-chan struct{} { return p.done }

// State returns a snapshot.
func (p *Process) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stateLocked()
}

func (p *Process) stateLocked() State {
	st := p.st
	st.RetainedBytes, st.OutputBytes, st.Truncated = p.out.sizes()
	if p.stdin == nil {
		st.StdinClosed = true
	} else {
		st.StdinClosed = p.stdin.isClosed()
	}
	return st
}

// changedLocked bumps the revision and wakes waiters.
func (p *Process) changedLocked() {
	p.st.Revision++
	if p.notify != nil {
		close(p.notify)
		p.notify = nil
	}
}

// Wait returns when the main process has ended (Status is no longer
// running), after maxWait, or when ctx is done (with ctx's error). A
// maxWait of zero or less returns the current state at once.
func (p *Process) Wait(ctx context.Context, maxWait time.Duration) (State, error) {
	if maxWait > 0 {
		t := time.NewTimer(maxWait)
		defer t.Stop()
		select {
		case <-p.exited:
		case <-t.C:
		case <-ctx.Done():
			return p.State(), ctx.Err()
		}
	}
	return p.State(), nil
}

// WaitChange returns as soon as the revision exceeds since (new output,
// exit, input…) or the tree is gone, after maxWait, or when ctx is done
// (with ctx's error). It serves live polling.
func (p *Process) WaitChange(ctx context.Context, since int64, maxWait time.Duration) (State, error) {
	t := time.NewTimer(max(maxWait, 0))
	defer t.Stop()
	for {
		p.mu.Lock()
		if p.st.Revision > since || !p.st.TreeAlive {
			st := p.stateLocked()
			p.mu.Unlock()
			return st, nil
		}
		if p.notify == nil {
			p.notify = make(chan struct{})
		}
		ch := p.notify
		p.mu.Unlock()
		select {
		case <-ch:
		case <-t.C:
			return p.State(), nil
		case <-ctx.Done():
			return p.State(), ctx.Err()
		}
	}
}

// WriteStdin queues data for the command's stdin and returns without
// waiting for the command to read it. With expectedRevision set, it writes
// only if the revision still equals *expectedRevision (ErrRevisionConflict
// otherwise). Errors: ErrNotRunning, ErrStdinClosed, ErrStdinFull (more
// than MaxStdinBytes at once, or the command is not reading).
func (p *Process) WriteStdin(data []byte, expectedRevision *int64) error {
	if len(data) > MaxStdinBytes {
		return ErrStdinFull
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if expectedRevision != nil && *expectedRevision != p.st.Revision {
		return ErrRevisionConflict
	}
	if p.st.Status != StatusRunning {
		return ErrNotRunning
	}
	if p.stdin == nil {
		return ErrStdinClosed
	}
	if err := p.stdin.enqueue(data); err != nil {
		return err
	}
	p.changedLocked()
	return nil
}

// CloseStdin closes the command's stdin once queued input is written (under
// a pty it sends one Ctrl-D instead, which ends input at the start of a
// line). Closing a closed stdin is a no-op.
func (p *Process) CloseStdin() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stdin == nil || p.stdin.isClosed() {
		return
	}
	p.stdin.close()
	p.changedLocked()
}

// Interrupt sends SIGINT to the whole tree (the process group and every
// descendant). Whatever is still alive after the Manager's InterruptGrace
// (background jobs of a non-interactive shell ignore SIGINT, daemons may
// too) is killed like Kill does (SIGTERM, grace, SIGKILL), setsid children
// included; State.InterruptKilled then counts them and KillReason is
// "interrupt". Done reports when the tree is gone. It returns
// ErrNotRunning when the tree is already gone.
func (p *Process) Interrupt() error {
	p.mu.Lock()
	if !p.st.TreeAlive {
		p.mu.Unlock()
		return ErrNotRunning
	}
	p.st.Interrupted = true
	p.changedLocked()
	p.mu.Unlock()
	p.send(request{Op: opInterrupt, InterruptMS: p.m.opts.InterruptGrace.Milliseconds(), GraceMS: p.grace.Milliseconds()})
	return nil
}

// escalated records that an interrupt is killing n processes.
func (p *Process) escalated(n int) {
	p.mu.Lock()
	first := p.st.KillReason == ""
	if first {
		p.st.KillReason = ReasonInterrupt
		p.killSent = true
	}
	p.st.InterruptKilled += n
	p.changedLocked()
	p.mu.Unlock()
	if first {
		p.m.metrics.ProcessKilled(ReasonInterrupt)
	}
	p.log.Info("interrupt left processes alive; killing the tree", "processes", n)
}

// limitExceeded records that the tree exceeded a limit (reason, one of
// the package's) and is being killed, or was killed by the kernel for
// want of memory.
func (p *Process) limitExceeded(reason string) {
	if reason != ReasonOutOfMemory && reason != ReasonPidsLimit {
		return // a bounded label set (process_kills_total)
	}
	p.mu.Lock()
	first := p.st.KillReason == ""
	if first {
		p.st.KillReason = reason
	}
	p.killSent = true
	p.changedLocked()
	p.mu.Unlock()
	if first {
		p.m.metrics.ProcessKilled(reason)
	}
	p.log.Info("command exceeded its limit; killing the tree", "reason", reason)
}

// Kill terminates the whole tree: SIGTERM, the Manager's grace period, then
// SIGKILL until no process remains. It blocks until the tree is gone
// (returning nil, also when it already was) or until grace plus 10 s have
// passed (ErrKillTimeout; the supervisor keeps killing). The first reason
// is kept in State.KillReason and counted in Metrics.ProcessKilled.
func (p *Process) Kill(reason string) error {
	p.requestKill(reason)
	t := time.NewTimer(p.grace + killBound)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
		return ErrKillTimeout
	}
}

// requestKill asks the supervisor to kill the tree once. It reports
// whether this call sent the request.
func (p *Process) requestKill(reason string) bool { return p.requestKillGrace(reason, p.grace) }

// requestKillGrace is requestKill with its own SIGTERM grace.
func (p *Process) requestKillGrace(reason string, grace time.Duration) bool {
	p.mu.Lock()
	if !p.st.TreeAlive || p.killSent {
		p.mu.Unlock()
		return false
	}
	p.killSent = true
	p.st.KillReason = reason
	p.changedLocked()
	p.mu.Unlock()
	p.m.metrics.ProcessKilled(reason)
	p.log.Info("killing process tree", "reason", reason)
	p.send(request{Op: opKill, GraceMS: grace.Milliseconds()})
	return true
}

// Head returns up to the first n retained bytes of output.
func (p *Process) Head(n int) []byte {
	b, _ := p.out.readAt(0, max(n, 0))
	return b
}

// Tail returns up to the last n bytes of output. When output was truncated
// these are the latest bytes the command wrote (at most 64 KiB), not the
// end of the spool.
func (p *Process) Tail(n int) []byte { return p.out.tail(n) }

// ReadAt returns up to n retained bytes starting at off (n is the
// caller's page bound; it allocates n bytes); io.EOF (and no data) at or
// past Size.
func (p *Process) ReadAt(off int64, n int) ([]byte, error) { return p.out.readAt(off, n) }

// TruncatedTail returns the latest output bytes (at most 64 KiB) when the
// output was truncated — they are not in the spool file, so whoever keeps
// the output beyond this Process must keep them too — and nil otherwise.
func (p *Process) TruncatedTail() []byte { return p.out.tailBytes() }

// SpoolID names the output file (see Manager.Retained and RemoveOutput).
func (p *Process) SpoolID() string { return p.id }

// Size returns the number of retained output bytes.
func (p *Process) Size() int64 {
	r, _, _ := p.out.sizes()
	return r
}

// Remove kills the tree if it is still alive (reason "removed"), then
// deletes the spool file. Output accessors fail afterwards.
func (p *Process) Remove() error {
	select {
	case <-p.done:
	default:
		if err := p.Kill("removed"); err != nil {
			return err
		}
	}
	return p.out.remove()
}

func (p *Process) send(r request) {
	b, _ := json.Marshal(r)
	b = append(b, '\n')
	p.ctlMu.Lock()
	defer p.ctlMu.Unlock()
	if p.detached {
		return // the tree is gone; never disturb the supervisor's next command
	}
	_ = p.sup.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, _ = p.sup.conn.Write(b) // a dead supervisor is handled by readControl
}

// readOutput copies the command's output into the spool until EOF (EIO on
// a pty master once every slave is closed).
func (p *Process) readOutput() {
	defer close(p.outputDone)
	buf := make([]byte, 64<<10)
	for {
		n, err := p.outR.Read(buf)
		if n > 0 {
			p.readBsy.Store(true)
			truncation := p.out.append(buf[:n])
			p.mu.Lock()
			p.changedLocked()
			p.mu.Unlock()
			p.readBsy.Store(false)
			if truncation != "" {
				p.log.Info("output truncated", "reason", truncation)
				p.m.metrics.OutputTruncated(truncation)
				if p.capKill {
					go p.Kill(ReasonOutputLimit)
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// readControl handles the supervisor's events until it exits, then
// finishes the process.
func (p *Process) readControl() {
	doneSeen, reusable := false, false
	orphans := 0
	for !doneSeen {
		line, err := readLine(p.sup.rd, 64<<10)
		if err != nil {
			break
		}
		var ev event
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		switch ev.Event {
		case evExit:
			p.drainAfterExit(ev.Done)
			p.recordExit(ev.Code, ev.Signal, "")
		case evEscalated:
			p.escalated(ev.Killed)
		case evLimit:
			p.limitExceeded(ev.Reason)
		case evUsage:
			p.mu.Lock()
			p.usage = treeUsage{tasks: ev.Tasks, memory: ev.Memory}
			p.mu.Unlock()
			p.m.enforceTenantShare(p.tenant)
		case evDone:
			doneSeen, orphans, reusable = true, ev.Orphans, ev.Reusable
			p.ctlMu.Lock()
			p.detached = true
			p.ctlMu.Unlock()
		}
	}
	p.finish(doneSeen, reusable, orphans)
}

// drainAfterExit makes sure the output the main process wrote before it
// exited is in the spool before its exit is reported. When the tree is
// already empty the output pipe reaches EOF; otherwise (descendants hold
// it open) it waits until the pipe is empty and the reader idle.
func (p *Process) drainAfterExit(treeEmpty bool) {
	if treeEmpty {
		t := time.NewTimer(time.Second)
		defer t.Stop()
		select {
		case <-p.outputDone:
		case <-t.C:
		}
		return
	}
	deadline := time.Now().Add(200 * time.Millisecond)
	quiet := 0
	for quiet < 2 && time.Now().Before(deadline) {
		select {
		case <-p.outputDone:
			return
		default:
		}
		if n, ok := pendingBytes(p.outR); ok && n == 0 && !p.readBsy.Load() {
			quiet++
		} else {
			quiet = 0
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// recordExit records the main process's end once.
func (p *Process) recordExit(code *int, sig int, forcedReason string) {
	p.mu.Lock()
	if p.st.Status != StatusRunning {
		p.mu.Unlock()
		return
	}
	if forcedReason != "" && p.st.KillReason == "" {
		p.st.KillReason = forcedReason
	}
	switch {
	case p.st.KillReason == ReasonTimeout:
		p.st.Status = StatusTimedOut
	case p.st.KillReason != "":
		p.st.Status = StatusKilled
	default:
		p.st.Status = StatusExited
	}
	p.st.ExitCode = code
	if sig != 0 {
		p.st.Signal = signalName(syscall.Signal(sig))
	}
	p.st.EndedAt = time.Now()
	p.changedLocked()
	st := p.st
	p.mu.Unlock()
	close(p.exited)
	attrs := []any{"status", st.Status, "duration_ms", st.EndedAt.Sub(st.StartedAt).Milliseconds()}
	if code != nil {
		attrs = append(attrs, "exit_code", *code)
	}
	if st.Signal != "" {
		attrs = append(attrs, "signal", st.Signal)
	}
	p.log.Info("process exited", attrs...)
}

// finish runs once the supervisor reported the tree gone (doneSeen) or
// its control socket closed: it releases or reaps the supervisor, cleans up
// after an unexpected supervisor death, waits for the output to drain, and
// releases the process.
func (p *Process) finish(doneSeen, reusable bool, orphans int) {
	if doneSeen {
		p.m.putSupervisor(p.sup, reusable)
	} else {
		p.ctlMu.Lock()
		p.detached = true
		p.ctlMu.Unlock()
		p.sup.discard(true)
		// The supervisor died (it was SIGKILLed, or crashed) before the
		// tree was gone. Kill what we can still reach: the command's
		// process group and its cgroup; with Options.Subreaper, the
		// orphans that re-parented to the server too.
		p.log.Error("supervisor died before its process tree", "stderr", p.sup.stderr.String())
		if p.pid > 0 {
			_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		}
		p.recordExit(nil, 0, ReasonSupervisorLost)
		p.awaitLostTree()
	}
	if orphans > 0 {
		p.m.metrics.OrphansKilled(orphans)
	}
	t := time.NewTimer(2 * time.Second)
	select {
	case <-p.outputDone:
	case <-t.C:
		p.log.Warn("output still open after the tree ended; closing it")
	}
	t.Stop()
	if p.stdin != nil {
		p.stdin.abort()
	}
	_ = p.outR.Close()
	<-p.outputDone
	p.out.seal()
	p.recordExit(nil, 0, ReasonSupervisorLost) // no-op when the exit was reported
	p.mu.Lock()
	if p.timer != nil {
		p.timer.Stop()
	}
	p.st.TreeAlive = false
	p.changedLocked()
	p.mu.Unlock()
	// Release the live slot before done is closed: a caller whose Kill
	// returned may start the next command at once.
	p.m.release(p)
	close(p.done)
}

// lostTreeBound is how long finish waits for a lost supervisor's tree
// before it logs that processes cannot be killed (and keeps waiting).
const lostTreeBound = 10 * time.Second

// awaitLostTree returns once no process of a lost supervisor's tree
// remains: its cgroup is removed (cgroup.kill), and, with the subreaper,
// a sweep found no orphan left (descendants that left the process group
// re-parent to the server, which kills them; the supervisor is reaped by
// now, so they have re-parented). The output pipe says nothing here:
// a daemon may have let go of it. A process that cannot be killed (stuck
// in the kernel) keeps the Process live, its slot and the Project lease
// held; that is logged once past lostTreeBound. Without a cgroup and a
// subreaper, orphans re-parent to PID 1 and cannot be found.
func (p *Process) awaitLostTree() {
	deadline := time.Now().Add(lostTreeBound)
	warned := false
	stuck := func(what string) {
		if !warned && time.Now().After(deadline) {
			warned = true
			p.log.Error("processes of a lost supervisor's tree cannot be killed; the command stays live and its Project busy",
				"waiting_for", what)
		}
	}
	for p.cgroupDir != "" && cgroupRemove(p.cgroupDir, time.Second) != nil {
		stuck("cgroup")
	}
	gone := p.m.orphansGone()
	if gone == nil {
		if p.cgroupDir == "" {
			p.log.Warn("no cgroup and no subreaper: descendants that left the command's process group may survive")
		}
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-gone:
			return
		case <-t.C:
			stuck("orphans")
		}
	}
}

// pendingBytes returns how many bytes wait unread in a pipe or pty.
func pendingBytes(f *os.File) (int, bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, false
	}
	var n int32
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
	}); err != nil || errno != 0 {
		return 0, false
	}
	return int(n), true
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGILL: "SIGILL", syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT",
	syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
	syscall.SIGXCPU: "SIGXCPU", syscall.SIGXFSZ: "SIGXFSZ", syscall.SIGSYS: "SIGSYS",
}

func signalName(s syscall.Signal) string {
	if n, ok := signalNames[s]; ok {
		return n
	}
	return "SIG" + strconv.Itoa(int(s))
}

// limitedBuffer keeps the first max bytes written to it (supervisor stderr).
type limitedBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.max - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

var _ io.Writer = (*limitedBuffer)(nil)
