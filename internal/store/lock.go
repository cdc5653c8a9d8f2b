package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// LockFileName is the advisory lock file beside the database.
const LockFileName = "devspace.lock"

// ErrLocked is returned (wrapped) by Open when another Store, in this
// process or another, has the same state directory open for writing. This
// package owns it. The in-memory token verification cache of the holder is
// invalidated only by its own writes, so a second writer must not exist:
// the CLI turns this error into a pointer at the running server.
var ErrLocked = errors.New("state directory is in use by another DevSpace process")

// lockState takes the exclusive advisory lock of stateDir without waiting.
// The lock lives as long as the returned file stays open (flock locks
// belong to the open file description, so a second open in the same
// process conflicts too) and ends with the process, however it exits.
func lockState(stateDir string) (*os.File, error) {
	path := filepath.Join(stateDir, LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, stateDir)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}
