package process

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devspace-dev/devspace/internal/sandbox"
)

// ConfineCommand is the hidden subcommand that runs ConfineMain: the
// binary confines itself to a policy and runs a program, which runs in
// that Landlock domain with everything it starts. DevSpace runs its own
// Git this way (Manager.Confine): whatever a repository makes Git run
// (a filter planted between the check and the run) is held to what a
// read-only command could do.
const ConfineCommand = "__confine"

// confinePolicyEnv carries the JSON sandbox.Policy to ConfineMain; it is
// removed from the environment before the program starts.
const confinePolicyEnv = "DEVSPACE_CONFINE_POLICY"

// ConfineMain enters the Landlock domain of the policy in
// DEVSPACE_CONFINE_POLICY, runs args[0] (an absolute path) with args as
// its child, and exits with the child's status once the child and
// everything it left behind are gone. It never runs the program
// unconfined: a failure to confine exits 126.
//
// It does not exec the program: what the program starts (a filter that
// backgrounds a process) would outlive it, in the server's session where
// the server's sweep does not look, keeping the domain and its rights.
// So ConfineMain is a child subreaper: such processes re-parent to it,
// and when the program exits it kills and reaps them (killLeftovers).
// The program runs in a session of its own and dies with ConfineMain
// (parent-death signal), so if ConfineMain is killed (a timeout) what
// remains re-parents to the server outside its session, and its sweep
// kills it.
func ConfineMain(args []string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "devspace: cannot confine the program:", err)
		return 126
	}
	if len(args) == 0 || !filepath.IsAbs(args[0]) {
		return fail(errors.New("usage: " + ConfineCommand + " /absolute/program [args...]"))
	}
	raw, ok := os.LookupEnv(confinePolicyEnv)
	if !ok {
		return fail(errors.New(confinePolicyEnv + " is not set"))
	}
	var p sandbox.Policy
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return fail(fmt.Errorf("decode the policy: %w", err))
	}
	if err := os.Unsetenv(confinePolicyEnv); err != nil {
		return fail(err)
	}
	closeOnExecAbove(2)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail(fmt.Errorf("become a child subreaper: %w", err))
	}
	cmd := exec.Command(args[0])
	cmd.Args, cmd.Env = args, os.Environ()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	// The domain is entered by one locked thread only, which starts the
	// program (a locked goroutine forks on its own thread) and waits for
	// it (the parent-death signal is tied to that thread); it ends with
	// its goroutine. The rest of ConfineMain stays outside the domain: it
	// lists its children in /proc/self/task, which the program's domain
	// need not see (nor its net/), and the program cannot signal it.
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		if _, _, err := sandbox.Restrict(p); err != nil {
			errc <- confineError{err}
			return
		}
		if err := cmd.Start(); err != nil {
			errc <- confineError{err}
			return
		}
		errc <- cmd.Wait()
	}()
	err := <-errc
	killLeftovers()
	var notRun confineError
	if errors.As(err, &notRun) {
		return fail(notRun.err)
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return exit.ExitCode()
	}
	return fail(err)
}

// confineError is a failure before the program ran.
type confineError struct{ err error }

func (e confineError) Error() string { return e.err.Error() }

// killLeftovers SIGKILLs and reaps the children of this subreaper (what
// the program left behind re-parents here), in rounds, since a killed
// child's own children re-parent here in turn, until none remains or
// the rounds run out (then the server's sweep takes what is left: it
// lives outside the server's session).
func killLeftovers() {
	for round := 0; round < 200; round++ {
		kids := children()
		if len(kids) == 0 {
			return
		}
		for _, pid := range kids {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		for {
			var ws unix.WaitStatus
			if pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
		time.Sleep(time.Millisecond)
	}
}

// children lists this process's children, zombies included, from the
// children file of each of its threads.
func children() []int {
	tasks, _ := os.ReadDir("/proc/self/task")
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", t.Name(), "children"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// Confine makes cmd run its program confined to p, completed with what
// every program needs (the system's hierarchies read-only, the null and
// random devices) and with TCP denied, through ConfineCommand of the
// supervisor binary. p's ReadExec and ReadWrite paths must be canonical:
// they lie in Projects that commands may rewrite, so they are opened
// without following symlinks (a directory swapped for a symlink between
// the caller's check and the confinement allows nothing). With the
// sandbox off or unavailable Confine leaves cmd as it is: commands then
// run unconfined too. cmd must not have started; its Path must be
// absolute (exec.Command resolves it).
func (m *Manager) Confine(cmd *exec.Cmd, p sandbox.Policy) error {
	if m.sandbox.Mode != SandboxLandlock {
		return nil
	}
	if cmd.Err != nil {
		return cmd.Err
	}
	if !filepath.IsAbs(cmd.Path) {
		return fmt.Errorf("confine %s: not an absolute path", cmd.Path)
	}
	p.ReadExecNoSymlinks = append(p.ReadExecNoSymlinks, p.ReadExec...)
	p.ReadWriteNoSymlinks = append(p.ReadWriteNoSymlinks, p.ReadWrite...)
	p.ReadExec, p.ReadWrite = sandbox.SystemPaths(), nil
	p.ReadFiles = append(p.ReadFiles, sandbox.ReadablePaths()...)
	// Not sandbox.DevicePaths: Git needs no terminal, and /dev/tty stays
	// out of a domain the server's own programs run in.
	p.Devices = append(p.Devices, "/dev/null", "/dev/zero")
	// No network, no Unix socket but socketpair's, and the rest of the
	// system call policy: Git needs none for local work.
	p.Network, p.RouteNetlink, p.GateUnix = false, false, false
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	args := append([]string{m.supervisorPath(), ConfineCommand, cmd.Path}, cmd.Args[1:]...)
	cmd.Path, cmd.Args = args[0], args
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, confinePolicyEnv+"="+string(b))
	return nil
}
