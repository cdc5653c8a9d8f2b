package process

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/devspace-dev/devspace/internal/sandbox"
)

// ConfineCommand is the hidden subcommand that runs ConfineMain: the
// binary confines itself to a policy and execs a program, which runs in
// that Landlock domain with everything it starts. DevSpace runs its own
// Git this way (Manager.Confine): whatever a repository makes Git run
// (a filter planted between the check and the run) is held to what a
// read-only command could do.
const ConfineCommand = "__confine"

// confinePolicyEnv carries the JSON sandbox.Policy to ConfineMain; it is
// removed from the environment before the exec.
const confinePolicyEnv = "DEVSPACE_CONFINE_POLICY"

// ConfineMain enters the Landlock domain of the policy in
// DEVSPACE_CONFINE_POLICY and execs args[0] (an absolute path) with args.
// It never runs the program unconfined: any failure exits 126.
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
	// The domain is entered by this thread only, and the exec must happen
	// on it.
	runtime.LockOSThread()
	closeOnExecAbove(2)
	if _, err := sandbox.Restrict(p); err != nil {
		return fail(err)
	}
	return fail(syscall.Exec(args[0], args, os.Environ()))
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
	p.Devices = append(p.Devices, "/dev/null", "/dev/zero")
	p.DenyTCP = true
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
