package process

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devspace-dev/devspace/internal/sandbox"
)

// maxSupervisorJobs bounds how many commands one supervisor runs before it
// exits and a fresh one takes its place.
const maxSupervisorJobs = 1000

// internalStart reports whether the internal subcommand name may run: it
// takes no arguments and runs only as parent's child, with its control
// socket on fd 3. Otherwise it says so on standard error.
func internalStart(name, parent string, args []string) bool {
	if len(args) != 0 {
		fmt.Fprintf(os.Stderr, "devspace: %s is internal and takes no arguments\n", name)
		return false
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(ctlFD, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
		fmt.Fprintf(os.Stderr, "devspace: %s is internal: it runs only as a child of %s\n", name, parent)
		return false
	}
	return true
}

// closeOnExecAbove marks every descriptor above fd close-on-exec. The
// server's children inherit every descriptor the server itself inherited
// without the flag (from a shell, a test runner, a process manager), and
// those would otherwise reach every launcher and so every command.
func closeOnExecAbove(fd int) {
	if unix.CloseRange(uint(fd)+1, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	// Before Linux 5.11: one by one.
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil && n > fd {
			syscall.CloseOnExec(n)
		}
	}
}

// SupervisorMain runs a command supervisor and returns its exit status. The
// server starts it (as `devspace __supervise`, wired by the CLI) with the
// control socket on fd 3; it is not meant to be run by hand, and args must
// be empty. It waits idle until the server assigns it a command, and after
// a command's tree is gone it may wait for the next one (see protocol.go).
//
// For each command the supervisor, a child subreaper, starts the command in
// its own process group (its own session under a pty), reaps every process
// of the tree (orphans re-parent to it), reports the command's exit, and on
// a kill request, on SIGTERM/SIGINT/SIGHUP, or when the control socket
// reaches EOF because the server died, kills the whole tree: SIGTERM (and
// SIGCONT), the grace period, then SIGKILL to the process group, to every
// descendant found in /proc and through cgroup.kill when the command has a
// cgroup, repeated until no descendant remains.
func SupervisorMain(args []string) int {
	if !internalStart("__supervise", "devspace serve", args) {
		return 2
	}
	// The thread that forks a command must outlive it (Pdeathsig is tied to
	// the parent thread), and the main goroutine never exits.
	runtime.LockOSThread()
	syscall.CloseOnExec(ctlFD)
	closeOnExecAbove(ctlFD)
	const prSetChildSubreaper = 36
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		fmt.Fprintln(os.Stderr, "devspace: cannot become a child subreaper:", e)
		return 1
	}
	// Non-blocking, so that the per-command request reader can be stopped
	// with a deadline when the supervisor returns to idle.
	if err := syscall.SetNonblock(ctlFD, true); err != nil {
		return 1
	}
	s := &supervisor{self: os.Getpid(), ctl: os.NewFile(ctlFD, "devspace-control"),
		chld: make(chan os.Signal, 1), term: make(chan os.Signal, 4)}
	// Signals reach the supervisor through chld and term for its whole
	// life: enabling and disabling them for each command cost a round trip
	// to the runtime's signal thread per signal (~75 us per command back
	// to back, ~400 us after a pause). SIGCHLDs coalesce in their own
	// channel, so that a flood of them cannot crowd out a SIGTERM (a full
	// channel drops the signal). While idle, SIGTERM, SIGINT and SIGHUP end
	// the supervisor, as their default dispositions would, but in order:
	// its launcher and that launcher's cgroup go with it.
	signal.Notify(s.chld, syscall.SIGCHLD)
	signal.Notify(s.term, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	// The first launcher starts while the supervisor waits idle, in the
	// first command's cgroup when the server named one; a failure is
	// retried when a command arrives.
	first := os.Getenv(supervisorCgroupEnv)
	_ = os.Unsetenv(supervisorCgroupEnv)
	s.limits = limitsFromEnv() // left in the environment: launchers read it too
	s.launcherOpts = launcherOpts{namespaces: os.Getenv(supervisorNamespacesEnv) == "1", limits: s.limits}
	_ = os.Unsetenv(supervisorNamespacesEnv)
	s.launcher, _ = startLauncher(first, s.launcherOpts)
	defer s.dropLauncher()
	for jobs := 1; ; jobs++ {
		stdin, output, err := s.awaitCommand()
		if err != nil {
			return 0 // EOF (the server drained its pool, or died) or a signal
		}
		if !s.job(stdin, output, jobs < maxSupervisorJobs) {
			return 0
		}
	}
}

// supervisorCgroupEnv names the cgroup v2 directory of a supervisor's
// first command, where its first launcher is started (later ones:
// supervisorSpec.NextCgroup).
const supervisorCgroupEnv = "DEVSPACE_SUPERVISOR_CGROUP"

// supervisorNamespacesEnv says that launchers start in namespaces of
// their own (sandbox.NamespaceAttr; SandboxState.IPC "namespace").
const supervisorNamespacesEnv = "DEVSPACE_SUPERVISOR_NAMESPACES"

// dropLauncher kills and reaps the idle launcher, so that it does not
// outlive the supervisor (it would re-parent to the server), and removes
// the cgroup it was started in.
func (s *supervisor) dropLauncher() {
	if s.launcher == nil {
		return
	}
	s.launcher.stop()
	s.launcher = nil
}

// stop kills and reaps a launcher that was not handed a command and
// removes its cgroup.
func (l *launcherProc) stop() {
	l.conn.Close()
	_ = syscall.Kill(l.pid, syscall.SIGKILL)
	var ws syscall.WaitStatus
	for {
		if _, err := syscall.Wait4(l.pid, &ws, 0, nil); err != syscall.EINTR {
			break
		}
	}
	if l.cgroup != "" {
		_ = cgroupRemove(l.cgroup, time.Second)
	}
}

type supervisor struct {
	self int
	ctl  *os.File
	chld chan os.Signal // SIGCHLD
	term chan os.Signal // SIGTERM, SIGINT, SIGHUP
	// terminated: a SIGTERM, SIGINT or SIGHUP arrived; the supervisor
	// kills its tree and exits after it.
	terminated   bool
	wmu          sync.Mutex
	launcher     *launcherProc // started ahead of the next command; nil if none
	launcherOpts launcherOpts
	// limits are the server's (supervisorLimitsEnv); with Poll the
	// supervisor bounds its tree itself.
	limits commandLimits

	// Per command:
	spec         supervisorSpec
	mainPID      int
	cgroupDir    string        // "" when the command has no cgroup
	sandboxRules string        // Landlock rules enforced; "" when not confined
	gate         *sandbox.Gate // serves the tree's connects; nil without one
	mainExited   bool
	mainStatus   syscall.WaitStatus
	exitReported bool
	empty        bool // wait4 returned ECHILD: no process of the tree remains
	orphans      map[int]bool
	// killing: the supervisor sent SIGKILL to the tree (a kill, or a
	// limit); a SIGKILL it did not send may be the OOM killer's.
	killing bool
	// limitKill: a limit was exceeded (the reason was reported); the
	// tree is killed at once.
	limitKill bool
	// oomKills is the kernel's count of OOM kills when the command
	// started (oomKills); reported is the use last sent to the server,
	// looked the use found at the last look.
	oomKills         int64
	reported, looked treeUsage
}

func (s *supervisor) send(ev event) {
	b, _ := json.Marshal(ev)
	b = append(b, '\n')
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_ = s.ctl.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, _ = s.ctl.Write(b) // the server may be gone; the tree is killed anyway
}

// errTerminated means a signal ended an idle supervisor.
var errTerminated = errors.New("terminated while idle")

// awaitCommand waits, idle, for the next command's stdin and output
// descriptors (recvStdio). A SIGTERM, SIGINT or SIGHUP meanwhile ends the
// wait with errTerminated and refuses a command that arrived with it
// before anything ran (a spawn_error with Retry: the server tries another
// supervisor), so that a signal sent to an idle supervisor never kills a
// command assigned to it a moment later.
func (s *supervisor) awaitCommand() (stdin, output int, err error) {
	rc, err := s.ctl.SyscallConn()
	if err != nil {
		return -1, -1, err
	}
	stop := make(chan struct{})
	watched := make(chan bool, 1)
	go func() {
		select {
		case <-s.term:
			_ = s.ctl.SetReadDeadline(time.Now())
			watched <- true
		case <-stop:
			watched <- false
		}
	}()
	stdin, output, err = recvStdio(rc)
	close(stop)
	if <-watched || s.termPending() {
		if err == nil {
			syscall.Close(stdin)
			syscall.Close(output)
		}
		// An assignment may have arrived, or be under way. The server
		// reads events only after it assigned a command, so an idle
		// server never sees this refusal.
		s.refuse()
		return -1, -1, errTerminated
	}
	return stdin, output, err
}

// refuse answers an assignment that came with a SIGTERM, SIGINT or
// SIGHUP: nothing ran, the supervisor exits, another may be tried.
func (s *supervisor) refuse() {
	s.terminated = true
	s.send(event{Event: evSpawnError, Error: "the supervisor is shutting down", Retry: true})
}

// termPending reports whether a SIGTERM, SIGINT or SIGHUP is waiting:
// the runtime's signal goroutine is given the chance to deliver one
// caught a moment ago (this process runs one goroutine at a time).
func (s *supervisor) termPending() bool {
	runtime.Gosched()
	select {
	case <-s.term:
		return true
	default:
		return false
	}
}

// job runs one command to the end of its tree. It reports whether the
// supervisor may wait for another command.
func (s *supervisor) job(stdin, output int, mayReuse bool) bool {
	s.spec = supervisorSpec{}
	s.mainPID, s.cgroupDir, s.sandboxRules, s.orphans = 0, "", "", nil
	s.mainExited, s.exitReported, s.empty = false, false, false
	s.killing, s.limitKill, s.reported, s.looked = false, false, treeUsage{}, treeUsage{}

	rd := bufio.NewReaderSize(s.ctl, 16<<10)
	line, err := readLine(rd, maxSpecBytes)
	if err == nil {
		err = json.Unmarshal(line, &s.spec)
	}
	if err != nil {
		syscall.Close(stdin)
		syscall.Close(output)
		s.send(event{Event: evSpawnError, Error: "invalid supervisor request"})
		return false
	}
	if s.termPending() {
		syscall.Close(stdin)
		syscall.Close(output)
		s.refuse()
		return false
	}
	err = s.spawn(stdin, output)
	syscall.Close(stdin)
	syscall.Close(output)
	if err != nil {
		s.send(event{Event: evSpawnError, Error: spawnMessage(err), Reusable: mayReuse})
		if mayReuse && s.launcher == nil {
			s.launcher, _ = startLauncher(s.spec.NextCgroup, s.launcherOpts)
		}
		return mayReuse
	}
	s.send(event{Event: evStarted, PID: s.mainPID, Cgroup: s.cgroupDir != "", Sandbox: s.sandboxRules})
	// A tree bounded by its supervisor is first looked at once its start
	// is reported, so that looking costs the start nothing.
	var usage *time.Timer
	usageC := make(<-chan time.Time) // never fires without a poll
	if s.polls() {
		s.oomKills = oomKills()
		usage = time.NewTimer(usageFastPoll) // a command often forks as it starts
		defer usage.Stop()
		usageC = usage.C
	}

	reqs := make(chan request, 4)
	eof := make(chan struct{})      // the server closed the socket
	stopping := make(chan struct{}) // the tree is gone: drop requests
	quit := make(chan struct{})     // the reader stopped
	go func() {
		defer close(quit)
		for {
			line, err := readLine(rd, 64<<10)
			if err != nil {
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					close(eof)
				}
				return
			}
			var r request
			if json.Unmarshal(line, &r) != nil {
				continue
			}
			select {
			case reqs <- r:
			case <-stopping:
			}
		}
	}()

	grace := time.Duration(s.spec.GraceMS) * time.Millisecond
	serverGone := false
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	// escalate fires when an interrupt's grace is over.
	var escalate <-chan time.Time
	var escalateGrace time.Duration
	for {
		s.reap()
		if s.limitKill && !s.empty {
			s.killTree(0)
		}
		if s.empty {
			break
		}
		select {
		case <-usageC:
			began := time.Now()
			next, backoff := s.checkUsage()
			usage.Reset(max(next, time.Duration(backoff)*time.Since(began)))
		case <-escalate:
			escalate = nil
			// SIGINT did not end the tree (background jobs of a
			// non-interactive shell ignore it, daemons may too): nothing
			// may outlive an interrupt.
			if n := s.alive(); n > 0 {
				s.send(event{Event: evEscalated, Killed: n})
				s.killTree(escalateGrace)
			}
		case <-s.chld:
		case <-s.term:
			s.terminated = true
			s.killTree(grace)
		case r := <-reqs:
			switch r.Op {
			case opSignal:
				s.signalTree(syscall.Signal(r.Signal))
			case opKill:
				s.killTree(time.Duration(r.GraceMS) * time.Millisecond)
			case opInterrupt:
				s.signalTree(syscall.SIGINT)
				if escalate == nil {
					escalate = time.After(time.Duration(r.InterruptMS) * time.Millisecond)
					escalateGrace = time.Duration(r.GraceMS) * time.Millisecond
				}
			}
		case <-eof:
			// The server is gone: nobody may outlive it.
			serverGone = true
			s.killTree(grace)
		case <-tick.C:
		}
	}
	if s.gate != nil {
		s.gate.Close()
		s.gate = nil
	}
	if s.cgroupDir != "" {
		_ = cgroupRemove(s.cgroupDir, 2*time.Second)
	}
	// Stop the request reader before reporting, so that it cannot consume
	// the next assignment.
	close(stopping)
	_ = s.ctl.SetReadDeadline(time.Now())
	<-quit
	_ = s.ctl.SetReadDeadline(time.Time{})
	select {
	case <-eof:
		serverGone = true
	default:
	}
	reuse := mayReuse && !serverGone && !s.terminated
	s.send(event{Event: evDone, Orphans: len(s.orphans), Reusable: reuse})
	if reuse && s.launcher == nil {
		// The next command's launcher starts once this command is over
		// (not while it runs: starting it would delay the exit report):
		// a Go binary takes milliseconds to start, confining and exec'ing
		// takes microseconds. It starts in the next command's cgroup.
		s.launcher, _ = startLauncher(s.spec.NextCgroup, s.launcherOpts)
	}
	return reuse
}

// spawn hands the command to the pre-started launcher (or a new one), in
// its own cgroup when asked and possible: the launcher was started in it.
// The launcher's PID is the command's: it execs the command in place.
func (s *supervisor) spawn(stdin, output int) error {
	for attempt := 0; ; attempt++ {
		l := s.launcher
		s.launcher = nil
		if l != nil && l.forCgroup != s.spec.Cgroup {
			// Started for another cgroup than the server named: not
			// this command's.
			l.stop()
			l = nil
		}
		if l == nil {
			var err error
			if l, err = startLauncher(s.spec.Cgroup, s.launcherOpts); err != nil {
				return err
			}
		}
		s.cgroupDir = l.cgroup
		rules, gate, err := l.launch(s.spec, stdin, output)
		if err == nil {
			s.mainPID, s.sandboxRules = l.pid, rules
			if gate >= 0 {
				p := s.spec.Sandbox
				// The command runs already: a Gate that cannot start
				// leaves its connects failing (ENOSYS), never open.
				s.gate, _ = sandbox.ServeGate(gate, append(append([]string(nil), p.ReadWrite...), p.ReadWriteNoSymlinks...), p.PrivateTmp)
			}
			return nil
		}
		// The launcher exits after a failure (or is gone): reap it and
		// remove its cgroup, so that nothing of this attempt is left.
		l.stop()
		s.cgroupDir = ""
		if !errors.Is(err, errLauncherGone) || attempt > 0 {
			return err
		}
	}
}

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

const maxSpecBytes = 8 << 20

// readLine reads one newline-terminated line of at most limit bytes.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > limit {
			return nil, errors.New("line too long")
		}
		if err == nil {
			return buf[:len(buf)-1], nil
		}
		if err != bufio.ErrBufferFull {
			if err == io.EOF && len(buf) > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}

// spawnMessage turns an exec error into a message without host paths.
func spawnMessage(err error) string {
	switch {
	case errors.Is(err, syscall.ENOENT):
		return "the program or the working directory does not exist"
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return "permission denied"
	case errors.Is(err, syscall.ENOEXEC):
		return "the program is not an executable this system can run"
	case errors.Is(err, syscall.ENOTDIR):
		return "a path component is not a directory"
	case errors.Is(err, syscall.E2BIG):
		return "the argument list and environment are too long"
	case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.ENOMEM):
		return "the system cannot create more processes now"
	}
	var le launchError
	if errors.As(err, &le) {
		return le.msg
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return "the command could not be started"
}
