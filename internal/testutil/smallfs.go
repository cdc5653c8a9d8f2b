package testutil

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// SmallFS mounts a tmpfs of size bytes on a fresh directory and returns
// it; the test's cleanup unmounts it. Disk-full tests use it to fill a
// filesystem of their own. It needs root (make test runs as root) and
// fails the test otherwise.
func SmallFS(t testing.TB, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("SmallFS mounts a tmpfs and needs root; run the tests as root (make test does)")
	}
	dir := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size="+strconv.FormatInt(size, 10)+",mode=0755"); err != nil {
		t.Fatalf("mount a %d-byte tmpfs: %v", size, err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// FillFS writes path until its filesystem is full (ENOSPC) and returns
// how much it wrote.
func FillFS(t testing.TB, path string) int64 {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var n int64
	for {
		w, err := f.Write(buf)
		n += int64(w)
		if errors.Is(err, syscall.ENOSPC) {
			for {
				// Fill the last partial blocks too.
				if w, err := f.Write(buf[:4096]); err != nil {
					return n
				} else {
					n += int64(w)
				}
			}
		}
		if err != nil {
			t.Fatalf("fill %s: %v", path, err)
		}
	}
}
