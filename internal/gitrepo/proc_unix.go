//go:build unix

package gitrepo

import (
	"os"
	"os/exec"
	"syscall"
)

// fileOpenFlags opens metadata files (verifier.read). O_NONBLOCK makes
// opening a FIFO that replaced a regular file after the Lstat return at
// once instead of waiting for a writer; it does not change reads of regular
// files. O_NOCTTY keeps a terminal from becoming the controlling one.
const fileOpenFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY

// setProcessGroup starts cmd in its own process group and makes cancelling
// its context kill the whole group, so helpers Git spawned die with it.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
			return cmd.Process.Kill()
		}
		return nil
	}
}
