//go:build !unix

package gitrepo

import (
	"os"
	"os/exec"
)

// fileOpenFlags opens metadata files (verifier.read). Without Unix FIFOs
// there is nothing to guard against beyond the Lstat that precedes every
// open.
const fileOpenFlags = os.O_RDONLY

// setProcessGroup keeps exec's default cancellation: killing the process.
func setProcessGroup(cmd *exec.Cmd) {}
