package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The state directory keeps a reserve: a preallocated file that
// an emergency write (revoking a grant, bumping the global epoch, closing
// executions, recording an operation's outcome or a journal entry)
// releases when it meets a full disk, then retries once. So the Owner's
// revoke commits even after something filled the disk, and what a patch
// committed is recorded.
const (
	// ReserveFile is the reserve's name in the state directory.
	ReserveFile = "disk-reserve"
	// ReserveSize is its size: many times what those writes need (a few
	// pages each, plus SQLite's write-ahead log frames).
	ReserveSize = 16 << 20
)

// reserve is the preallocated file.
type reserve struct {
	path string
	mu   sync.Mutex
}

// restore creates the reserve file if it is missing and the filesystem
// has room for it with as much again to spare. It reports whether the
// reserve is held.
func (r *reserve) restore() bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if fi, err := os.Stat(r.path); err == nil && fi.Size() >= ReserveSize {
		return true
	}
	var st unix.Statfs_t
	if unix.Statfs(filepath.Dir(r.path), &st) != nil || int64(st.Bavail)*st.Bsize < 2*ReserveSize {
		return false
	}
	f, err := os.OpenFile(r.path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return false
	}
	err = unix.Fallocate(int(f.Fd()), 0, 0, ReserveSize)
	if errors.Is(err, unix.EOPNOTSUPP) {
		// No fallocate on this filesystem: write it.
		buf := make([]byte, 1<<20)
		for n := 0; n < ReserveSize && err == nil; n += len(buf) {
			_, err = f.Write(buf)
		}
		if err == nil {
			err = f.Sync()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(r.path)
		return false
	}
	return true
}

// release removes the reserve file and reports whether it was there.
func (r *reserve) release() bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return os.Remove(r.path) == nil
}

// RestoreReserve re-creates the reserve after an emergency write used it,
// when the disk has room again (the disk guard calls it). It reports
// whether the reserve is held.
func (s *Store) RestoreReserve() bool { return s.reserve.restore() }

// IsDiskFull reports whether err is a write that met a full disk.
func IsDiskFull(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	// SQLITE_FULL (13), as the driver words it.
	return strings.Contains(err.Error(), "database or disk is full")
}

// Emergency runs write, one of the Owner's emergency writes outside the
// database (auth.json after a password rotation); when it meets a full
// disk, it releases the reserve and runs it once more.
func (s *Store) Emergency(write func() error) error { return s.emergency(write) }

// emergency runs write; when it meets a full disk, it releases the reserve
// and runs it once more.
func (s *Store) emergency(write func() error) error {
	err := write()
	if IsDiskFull(err) && s.reserve.release() {
		err = write()
	}
	return err
}
