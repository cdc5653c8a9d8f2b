package process

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devspace-dev/devspace/internal/sandbox"
)

// LauncherCommand is the hidden subcommand that runs LauncherMain.
const LauncherCommand = "__launch"

// InternalMain runs the hidden subcommands the process layer re-executes
// the binary with (SupervisorCommand, LauncherCommand, ConfineCommand,
// ProtocolCommand):
// call it first in main (and in the TestMain of packages that start
// commands) with os.Args[1:]. ok is false for any other command line.
func InternalMain(args []string) (code int, ok bool) {
	if len(args) == 0 {
		return 0, false
	}
	switch args[0] {
	case SupervisorCommand:
		return SupervisorMain(args[1:]), true
	case LauncherCommand:
		return LauncherMain(args[1:]), true
	case ConfineCommand:
		return ConfineMain(args[1:]), true
	case ProtocolCommand:
		fmt.Println(Protocol())
		return 0, true
	}
	return 0, false
}

// A launcher is the command's main process before it execs the command:
// a re-exec of the devspace binary. Starting it is the expensive part (the
// Go runtime and the package init of the whole binary: milliseconds),
// confining and exec'ing is cheap (microseconds), so it is started warm,
// ahead of need: a supervisor starts one when it starts, and again right
// after each command's tree is gone when it is kept for the next command.
// A warm launcher holds nothing of any command: the only descriptors it
// would pass on through an exec are /dev/null, the supervisor's stderr and
// its own socket (fd 3, close-on-exec itself; everything else is marked
// close-on-exec: closeOnExecAbove), its working directory is /, its
// environment the supervisor's; it blocks in
// recvmsg on the socket until it is assigned. It dies with its supervisor
// (parent-death signal, and parentIsSupervisor before it waits and before
// it execs) and exits on EOF when the supervisor drops it.
//
// When assigned, it receives the command's stdio (SCM_RIGHTS) and spec
// over the socket, makes the stdio its fds 0-2 (and the pty its
// controlling terminal), changes directory, enters the command's Landlock
// domain (and no_new_privs) on its locked thread, reports "exec" and execs
// the command with the spec's environment. It waits in the cgroup of the
// command it will become (startLauncher), and it is already its own
// session (setsid at start). The socket is close-on-exec, so the
// supervisor reads EOF after "exec" when the exec succeeded and an error
// line otherwise. One launcher runs one command: it becomes the command.
// Because the launcher confines itself, the supervisor and the server stay
// outside the domain: the command cannot signal them, nor read their /proc
// entries.

// launcherReply is one line a launcher writes before it execs (Exec) or
// instead (Error).
type launcherReply struct {
	Exec  bool   `json:"exec,omitempty"`
	Error string `json:"error,omitempty"`
	// Errno classifies the failure for spawnMessage.
	Errno int `json:"errno,omitempty"`
	// Sandbox is the set of rules enforced, when confined.
	Sandbox string `json:"sandbox,omitempty"`
}

// LauncherMain runs a launcher and returns its exit status only when it
// could not exec the command. The supervisor starts it (as `devspace
// __launch`, wired by the CLI) with its socket on fd 3; it is not meant to
// be run by hand, and args must be empty.
func LauncherMain(args []string) int {
	if !internalStart("__launch", "a supervisor", args) {
		return 2
	}
	// A warm launcher waits for its command while its supervisor lives,
	// and not a moment longer: the parent-death signal (set at fork, which
	// also checks that the parent did not die before) kills it with its
	// supervisor; this check refuses to wait when the supervisor died
	// while it started, and the one before the exec refuses to run a
	// command for a supervisor that is gone.
	if !parentIsSupervisor() {
		return 1
	}
	// Landlock and no_new_privs apply to the calling thread; the exec
	// must come from that same thread.
	runtime.LockOSThread()
	syscall.CloseOnExec(ctlFD)
	// Only the stdio it is handed reaches the command (its supervisor
	// did the same; this is the last process before the command).
	closeOnExecAbove(ctlFD)
	// Its own session (and so process group) from the start: no terminal
	// of the server's reaches the command, and the command's processes —
	// this launcher too, should its supervisor be lost while it waits —
	// are told from the server's own children by their session
	// (subreaper.go).
	if _, err := unix.Setsid(); err != nil {
		fmt.Fprintln(os.Stderr, "devspace: __launch: setsid:", err)
		return 1
	}
	limits := limitsFromEnv()
	if err := commandPriority(limits.Nice); err != nil {
		fmt.Fprintln(os.Stderr, "devspace: __launch: nice:", err)
		return 1
	}
	if err := commandOOMScore(); err != nil {
		fmt.Fprintln(os.Stderr, "devspace: __launch: oom_score_adj:", err)
		return 1
	}
	ctl := os.NewFile(ctlFD, "devspace-launch")
	reply := func(r launcherReply) {
		b, _ := json.Marshal(r)
		_, _ = ctl.Write(append(b, '\n'))
	}
	fail := func(what string, err error) int {
		r := launcherReply{Error: what + ": " + spawnMessage(err)}
		var errno syscall.Errno
		if errors.As(err, &errno) {
			r.Errno = int(errno)
		}
		reply(r)
		return 127
	}

	rc, err := ctl.SyscallConn()
	if err != nil {
		return 1
	}
	opened := warmUp()
	defer opened.Close()
	stdin, output, err := recvStdio(rc)
	if err != nil {
		return 0 // EOF: the supervisor is gone or drains its launcher
	}
	var spec supervisorSpec
	line, err := readLine(bufio.NewReaderSize(ctl, 16<<10), maxSpecBytes)
	if err == nil {
		err = json.Unmarshal(line, &spec)
	}
	if err != nil {
		return fail("spec", err)
	}
	for i, fd := range []int{stdin, output, output} {
		if err := unix.Dup2(fd, i); err != nil {
			return fail("stdio", err)
		}
	}
	syscall.Close(stdin)
	syscall.Close(output)
	if spec.TTY {
		if err := unix.IoctlSetInt(0, unix.TIOCSCTTY, 0); err != nil {
			return fail("terminal", err)
		}
	}
	if err := unix.Chdir(spec.Dir); err != nil {
		return fail("working directory", err)
	}
	var enforced string
	gate := -1
	if spec.Sandbox != nil {
		policy := *spec.Sandbox
		// Its own /proc/<pid> (the PID survives the exec), what programs
		// read there and nothing more (procSelf), not the other
		// processes'.
		policy.ReadFiles = append(append([]string(nil), policy.ReadFiles...), procSelf()...)
		policy.Opened = opened
		policy.HostNamespaces = os.Getenv(launcherHostNSEnv)
		if spec.TTY {
			// The command may reopen its own terminal, not another's.
			if pts, err := os.Readlink("/proc/self/fd/0"); err == nil && filepath.IsAbs(pts) {
				policy.Devices = append(append([]string(nil), policy.Devices...), pts)
			}
		}
		f, listener, err := sandbox.Restrict(policy)
		if err != nil {
			return fail("sandbox", err)
		}
		gate = listener
		enforced = f.String()
		if enforced == "" {
			enforced = "none"
		}
	}
	if err := commandRlimits(limits); err != nil {
		return fail("limits", err)
	}
	if !parentIsSupervisor() {
		return fail("supervisor", errors.New("the supervisor is gone"))
	}
	if gate >= 0 {
		// The Gate's listener travels with the reply: the supervisor
		// serves it for the command's whole tree.
		b, _ := json.Marshal(launcherReply{Exec: true, Sandbox: enforced})
		if err := unix.Sendmsg(ctlFD, append(b, '\n'), unix.UnixRights(gate), nil, 0); err != nil {
			return fail("gate", err)
		}
		syscall.Close(gate)
	} else {
		reply(launcherReply{Exec: true, Sandbox: enforced})
	}
	err = syscall.Exec(spec.Path, spec.Argv, spec.Env)
	return fail("exec", err)
}

// warmUp does, while the launcher waits, what a fresh process does slowly
// the first time and every command's start needs: encoding/json's type
// caches for the spec and the reply, the code and system calls of a
// Landlock ruleset (one is built for the system paths and closed, never
// entered), and it opens the hierarchies every domain names (the
// system's, and its own /proc entries, whose look-ups cost ~10 µs each)
// for the command's ruleset. The descriptors are O_PATH and close-on-exec,
// closed before the exec; nothing else is left that a command could see.
func warmUp() *sandbox.Opened {
	var spec supervisorSpec
	_ = json.Unmarshal([]byte(`{"id":"","path":"","argv":[""],"dir":"","env":[""],"grace_ms":0,"sandbox":{"read_exec":[""],"read_write":[""],"read_files":[""],"devices":[""]}}`), &spec)
	_, _ = json.Marshal(launcherReply{Exec: true})
	st := sandbox.Probe()
	if !st.Available() || assigned() {
		// A command is waiting already (back to back): opening ahead
		// would only delay it; its ruleset opens what it names.
		return nil
	}
	opened := sandbox.Preopen(slices.Concat(sandbox.SystemPaths(), sandbox.ReadablePaths(), sandbox.DevicePaths(), procSelf()))
	p := sandbox.Policy{ReadExec: sandbox.SystemPaths(), ReadFiles: sandbox.ReadablePaths(), Devices: sandbox.DevicePaths(), Opened: opened}
	if fd, err := sandbox.Ruleset(st.ABI, p); err == nil {
		syscall.Close(fd)
	}
	return opened
}

// procSelfEntries are what a command may read of its own /proc/<pid>:
// what runtimes, allocators and ps-like tools read of themselves (each
// rule costs a procfs look-up, so the list is kept short). Left out:
// net/ (every socket and connection of the machine's network namespace),
// task/ (each thread's own net/ again), ns/, and the magic links (cwd,
// exe, root, fd/N), which need no rule: readlink is not a Landlock right,
// and opening through one is judged on its target.
var procSelfEntries = []string{
	"auxv", "cgroup", "cmdline", "comm", "environ", "fd", "fdinfo", "io", "limits", "maps",
	"mountinfo", "mounts", "oom_score_adj", "smaps_rollup", "stat", "statm", "status",
}

// procSelf returns the paths of procSelfEntries for the calling process.
// /proc/<pid> itself gets no rule (one is inherited by everything
// beneath it, net/ included), so a command cannot list it.
func procSelf() []string {
	self := "/proc/" + strconv.Itoa(os.Getpid())
	out := make([]string, 0, len(procSelfEntries))
	for _, e := range procSelfEntries {
		out = append(out, self+"/"+e)
	}
	return out
}

// assigned reports whether the supervisor has sent a command already.
func assigned() bool {
	fds := []unix.PollFd{{Fd: ctlFD, Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

// launcherHostNSEnv carries the supervisor's sandbox.NamespaceIDs to a
// launcher started in namespaces of its own.
const launcherHostNSEnv = "DEVSPACE_LAUNCHER_HOST_NS"

// launcherParentEnv carries the supervisor's PID to its launcher (only
// to the launcher: the command's environment is the spec's).
const launcherParentEnv = "DEVSPACE_LAUNCHER_PARENT"

// parentIsSupervisor reports whether the launcher's parent is still the
// supervisor that started it (an orphan re-parents to a subreaper).
func parentIsSupervisor() bool {
	return os.Getenv(launcherParentEnv) == strconv.Itoa(os.Getppid())
}

// recvStdio receives the command's stdin and output descriptors (one
// message carrying two descriptors) on the socket behind rc, the only
// loop that does so: a supervisor reads its control socket through the
// poller (non-blocking, so that it can be stopped), a launcher reads its
// blocking socket directly (rc.Read then calls recvmsg once per message).
// Bytes without descriptors are discarded: the kernel never reads past the
// message that carries descriptors, so the spec that follows stays unread.
// It returns io.EOF when the peer closed the socket.
func recvStdio(rc syscall.RawConn) (stdin, output int, err error) {
	buf := make([]byte, 4<<10)
	oob := make([]byte, syscall.CmsgSpace(2*4))
	for {
		var n, oobn int
		var rerr error
		if err := rc.Read(func(fd uintptr) bool {
			n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), buf, oob, syscall.MSG_CMSG_CLOEXEC)
			return rerr != syscall.EAGAIN
		}); err != nil {
			return -1, -1, err
		}
		if rerr == syscall.EINTR {
			continue
		}
		if rerr != nil {
			return -1, -1, rerr
		}
		if n == 0 {
			return -1, -1, io.EOF
		}
		if oobn == 0 {
			continue
		}
		return parseStdio(oob[:oobn])
	}
}

func parseStdio(oob []byte) (stdin, output int, err error) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil || len(msgs) != 1 {
		return -1, -1, errors.New("malformed descriptors")
	}
	fds, err := syscall.ParseUnixRights(&msgs[0])
	if err != nil {
		return -1, -1, err
	}
	if len(fds) != 2 {
		for _, fd := range fds {
			syscall.Close(fd)
		}
		return -1, -1, errors.New("expected two descriptors")
	}
	return fds[0], fds[1], nil
}

// launcherProc is a supervisor's handle on its pre-started launcher.
type launcherProc struct {
	pid  int
	conn *os.File
	recv fdReader // conn's blocking socket, read with recvmsg
	rd   *bufio.Reader
	// forCgroup is the cgroup it was started for (a command's Cgroup);
	// cgroup is the one it is in: forCgroup, or "" when that could not be
	// created or entered (the command then runs without one).
	forCgroup, cgroup string
	// nice is the CPU priority of its command (commandLimits.Nice).
	nice int
}

// startLauncher starts a launcher, from the supervisor's locked main
// thread (its parent-death signal is tied to that thread), in cgroup when
// that is set: it creates the directory and starts the launcher inside
// (clone3 with CLONE_INTO_CGROUP). Where clone3 is refused (a seccomp
// filter, an older kernel), the launcher is started outside and moved in,
// which waits for an RCU grace period; either way before the command is
// known. A launcher that cannot be placed runs without a cgroup.
func startLauncher(cgroup string, o launcherOpts) (*launcherProc, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("launcher socket: %w", err)
	}
	defer syscall.Close(fds[1])
	null, err := syscall.Open(os.DevNull, syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		syscall.Close(fds[0])
		return nil, err
	}
	defer syscall.Close(null)
	exe, err := os.Executable()
	if err != nil {
		syscall.Close(fds[0])
		return nil, err
	}
	attr := &syscall.ProcAttr{
		Dir:   "/",
		Env:   append([]string{"GOMAXPROCS=1", launcherParentEnv + "=" + strconv.Itoa(os.Getpid())}, os.Environ()...),
		Files: []uintptr{uintptr(null), uintptr(null), 2, uintptr(fds[1])},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	}
	if o.namespaces {
		// Its command's private /tmp, /dev/shm and IPC objects: a
		// launcher that could not be started so fails its command
		// (sandbox.Restrict compares its namespaces with these), it
		// never runs it in the host's.
		sandbox.NamespaceAttr(attr.Sys)
		attr.Env = append([]string{launcherHostNSEnv + "=" + sandbox.NamespaceIDs()}, attr.Env...)
		if o.limits.CloneNProc > 0 {
			// The new user namespace's RLIMIT_NPROC ceiling is its
			// creator's soft limit at the clone: every command's tasks,
			// counted with all of the user's, stay within it. The
			// supervisor's own limit is lowered only for the clone (its
			// own threads must never be refused).
			defer lowerNProc(o.limits.CloneNProc)()
		}
	}
	argv := []string{filepath.Base(exe), LauncherCommand}
	var pid int
	placed := ""
	// target is where the launcher goes: cgroup, unless that cannot be
	// made, or bounded with the command's limits (commandLimits.Cgroup):
	// then nowhere, and its supervisor bounds the command.
	target := cgroup
	if target != "" && (makeCgroup(target) != nil || o.limits.Cgroup && limitCommandCgroup(target, o.limits) != nil) {
		_ = os.Remove(target)
		target = ""
	}
	if target != "" && cloneIntoCgroup {
		if cgfd, err := unix.Open(target, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
			attr.Sys.UseCgroupFD, attr.Sys.CgroupFD = true, cgfd
			if pid, err = syscall.ForkExec(exe, argv, attr); err == nil {
				placed = target
			}
			syscall.Close(cgfd)
			attr.Sys.UseCgroupFD, attr.Sys.CgroupFD = false, 0
		}
	}
	if placed == "" {
		pid, err = syscall.ForkExec(exe, argv, attr)
		if err == nil && target != "" && cgroupMove(target, pid) == nil {
			placed = target
		}
	}
	if placed == "" && target != "" {
		_ = os.Remove(target)
	}
	if err != nil {
		syscall.Close(fds[0])
		return nil, fmt.Errorf("start the launcher: %w", err)
	}
	conn := os.NewFile(uintptr(fds[0]), "devspace-launcher-"+strconv.Itoa(pid))
	l := &launcherProc{pid: pid, conn: conn, forCgroup: cgroup, cgroup: placed, nice: o.limits.Nice}
	l.rd = bufio.NewReaderSize(&l.recv, 4<<10)
	l.recv.fd = fds[0]
	return l, nil
}

// launcherOpts are a supervisor's settings for every launcher it starts.
type launcherOpts struct {
	// namespaces: launchers start in namespaces of their own
	// (sandbox.NamespaceAttr; SandboxState.IPC "namespace").
	namespaces bool
	// limits: CloneNProc is the supervisor's soft RLIMIT_NPROC while it
	// clones a launcher's user namespace; with Cgroup, a launcher's
	// cgroup gets the command's limits before the launcher starts in it.
	limits commandLimits
}

// lowerNProc sets this process's soft RLIMIT_NPROC to n (at most its hard
// limit) and returns what restores it.
func lowerNProc(n int64) (restore func()) {
	var old unix.Rlimit
	if unix.Prlimit(0, unix.RLIMIT_NPROC, nil, &old) != nil {
		return func() {}
	}
	lowered := unix.Rlimit{Cur: min(uint64(n), old.Max), Max: old.Max}
	if unix.Prlimit(0, unix.RLIMIT_NPROC, &lowered, nil) != nil {
		return func() {}
	}
	return func() { _ = unix.Prlimit(0, unix.RLIMIT_NPROC, &old, nil) }
}

// commandRlimits sets, just before the exec, the RLIMIT_NPROC of the
// command (commandLimits.NProc; soft and hard, so that it cannot raise
// it), at most the launcher's hard limit.
func commandRlimits(c commandLimits) error {
	if c.NProc <= 0 {
		return nil
	}
	var old unix.Rlimit
	if err := unix.Prlimit(0, unix.RLIMIT_NPROC, nil, &old); err != nil {
		return err
	}
	n := min(uint64(c.NProc), old.Max)
	return unix.Prlimit(0, unix.RLIMIT_NPROC, &unix.Rlimit{Cur: n, Max: n}, nil)
}

// commandPriority lowers the CPU priority of the calling thread — the
// locked one that execs the command, whose processes all inherit it — to
// nice. Its session's autogroup, which is what the scheduler weighs
// against the server's where sessions are scheduled as groups, is the
// supervisor's to set (groupPriority, groupNiceSet): outside the
// command's user namespace it is not refused where the server has
// CAP_SYS_ADMIN, and it tries again where the kernel's rate limit
// refuses it.
//
// A thread already at nice or lower priority (a server started with
// `nice -n 19`) is left as it is: raising a priority is refused without
// CAP_SYS_NICE, and the command would then not run at all.
func commandPriority(nice int) error {
	if nice <= 0 {
		return nil
	}
	// The raw getpriority(2) answers 20 - nice, so that it is never negative.
	if raw, err := unix.Getpriority(unix.PRIO_PROCESS, 0); err == nil && 20-raw >= nice {
		return nil
	}
	return unix.Setpriority(unix.PRIO_PROCESS, 0, nice)
}

// commandOOMScore makes the launcher, and so its command, the kernel OOM
// killer's first choice (oom_score_adj 1000, inherited by the command's
// children): when the container runs out of memory, a command dies,
// never the server. A confined command cannot lower it: its own /proc
// entries are read-only in its domain, its children's outside it.
func commandOOMScore() error {
	return os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
}

// cloneIntoCgroup is false only in tests of the fallback (moving the
// launcher into its cgroup).
var cloneIntoCgroup = true

// errLauncherGone means the launcher died before it received the command;
// nothing ran, and a fresh launcher may be tried.
var errLauncherGone = errors.New("launcher is gone")

// fdReader reads a blocking socket with recvmsg and keeps the
// descriptors that come with the bytes (the Gate's listener rides on the
// launcher's reply).
type fdReader struct {
	fd  int
	fds []int
}

func (r *fdReader) Read(p []byte) (int, error) {
	oob := make([]byte, syscall.CmsgSpace(4))
	for {
		n, oobn, _, _, err := syscall.Recvmsg(r.fd, p, oob, syscall.MSG_CMSG_CLOEXEC)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if oobn > 0 {
			if msgs, err := syscall.ParseSocketControlMessage(oob[:oobn]); err == nil {
				for i := range msgs {
					if fds, err := syscall.ParseUnixRights(&msgs[i]); err == nil {
						r.fds = append(r.fds, fds...)
					}
				}
			}
		}
		if n == 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}

// takeGate returns the Gate listener the launcher sent, or -1, and
// closes any other descriptor that came along.
func (r *fdReader) takeGate() int {
	gate := -1
	for _, fd := range r.fds {
		if gate < 0 {
			gate = fd
		} else {
			syscall.Close(fd)
		}
	}
	r.fds = nil
	return gate
}

// launch hands stdio and spec to the launcher and waits until it has
// exec'd the command (nil) or failed. The launcher's PID becomes the
// command's. gate is the command's Gate listener (Policy.GateUnix), or
// -1; the caller serves and closes it.
func (l *launcherProc) launch(spec supervisorSpec, stdin, output int) (sandboxRules string, gate int, err error) {
	gate = -1
	defer func() {
		g := l.recv.takeGate()
		if err == nil {
			gate = g
		} else if g >= 0 {
			syscall.Close(g)
		}
	}()
	defer l.conn.Close()
	b, err := json.Marshal(spec) // first, so that it follows the descriptors at once
	if err != nil {
		return "", -1, err
	}
	l.groupPriority()
	rights := syscall.UnixRights(stdin, output)
	if err := syscall.Sendmsg(int(l.conn.Fd()), []byte{'F'}, rights, nil, 0); err != nil {
		return "", -1, errLauncherGone
	}
	if _, err := l.conn.Write(append(b, '\n')); err != nil {
		return "", -1, errLauncherGone
	}
	line, err := readLine(l.rd, 64<<10)
	if err != nil {
		return "", -1, errLauncherGone
	}
	var r launcherReply
	if err := json.Unmarshal(line, &r); err != nil {
		return "", -1, fmt.Errorf("launcher reply: %w", err)
	}
	if r.Error != "" {
		return "", -1, launchError{msg: r.Error, errno: syscall.Errno(r.Errno)}
	}
	// EOF (the close-on-exec socket) means the exec succeeded; an error
	// line means it did not.
	line, err = readLine(l.rd, 64<<10)
	if err != nil {
		return r.Sandbox, -1, nil
	}
	if json.Unmarshal(line, &r) == nil && r.Error != "" {
		return "", -1, launchError{msg: r.Error, errno: syscall.Errno(r.Errno)}
	}
	return r.Sandbox, -1, nil
}

// groupPriority sets the nice of the launcher's session's autogroup, once
// the launcher is in a session of its own (never the server's: before its
// setsid it shares the server's autogroup), just before it gets its
// command; where that is refused or too early, the supervisor tries again
// while the command runs (groupNiceSet).
func (l *launcherProc) groupPriority() {
	if l.nice > 0 {
		setGroupNice(l.pid, l.nice)
	}
}

// groupNiceRetry is how often a supervisor tries again to set its
// command's autogroup nice: the kernel allows one change a tenth of a
// second machine-wide without CAP_SYS_ADMIN.
const groupNiceRetry = 110 * time.Millisecond

// setGroupNice sets the nice of the autogroup of pid's session, pid being
// the session's leader. It reports whether there is nothing more to do:
// the nice holds, or cannot be set (no autogroups in this kernel, pid
// gone or not its session's leader); false means try again (EAGAIN, the
// kernel's rate limit).
func setGroupNice(pid, nice int) bool {
	if sid, err := unix.Getsid(pid); err != nil || sid != pid {
		return true
	}
	path := "/proc/" + strconv.Itoa(pid) + "/autogroup"
	if b, err := os.ReadFile(path); err != nil || strings.HasSuffix(strings.TrimSpace(string(b)), " nice "+strconv.Itoa(nice)) {
		return true
	}
	err := os.WriteFile(path, []byte(strconv.Itoa(nice)), 0)
	return !errors.Is(err, syscall.EAGAIN)
}

// launchError is a launcher's failure; it unwraps to its errno.
type launchError struct {
	msg   string
	errno syscall.Errno
}

func (e launchError) Error() string { return e.msg }
func (e launchError) Unwrap() error {
	if e.errno == 0 {
		return nil
	}
	return e.errno
}
