package store

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestOpenLocksStateDir: a second read-write Open of the same state, in
// this process or another, fails with ErrLocked while the first Store is
// open; OpenReadOnly still works; Close releases the lock.
func TestOpenLocksStateDir(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	first, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, dir, Options{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	ro, err := OpenReadOnly(ctx, dir)
	if err != nil {
		t.Fatalf("OpenReadOnly while locked: %v", err)
	}
	if _, err := ro.GlobalEpoch(ctx); err != nil {
		t.Fatalf("read while locked: %v", err)
	}
	ro.Close()
	if fi, err := os.Stat(dir + "/" + LockFileName); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("lock file: %v %v", fi, err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	second.Close()
}

// TestOpenLockedByAnotherProcess: the lock holds across processes (the
// CLI's fallback against a running server).
func TestOpenLockedByAnotherProcess(t *testing.T) {
	if dir := os.Getenv("DEVSPACE_TEST_HOLD_STATE"); dir != "" {
		st, err := Open(context.Background(), dir, Options{})
		if err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("open\n")
		bufio.NewReader(os.Stdin).ReadString('\n') // hold until told
		st.Close()
		os.Exit(0)
	}
	ctx := context.Background()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenLockedByAnotherProcess$")
	cmd.Env = append(os.Environ(), "DEVSPACE_TEST_HOLD_STATE="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "open" {
		stdin.Close()
		cmd.Wait()
		t.Fatalf("holder: %q", line)
	}
	_, err = Open(ctx, dir, Options{})
	stdin.Close()
	if werr := cmd.Wait(); werr != nil {
		t.Fatalf("holder exited: %v", werr)
	}
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("Open while another process holds the state: %v, want ErrLocked", err)
	}
	st, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatalf("Open after the holder exited: %v", err)
	}
	st.Close()
}
