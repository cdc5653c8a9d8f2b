package process

import (
	"encoding/json"
	"errors"
	"fmt"
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

// The supervisor process (SupervisorMain): its life between commands (its
// idle launcher, the wait for the next command) and what it tells the
// server. One command's run is in supervisorjob.go, its tree in
// supervisortree.go, its limits in supervisorlimits.go.

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
