//go:build unix

package files

import (
	"context"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/devspace-dev/devspace/internal/project"
)

func TestReadNotRegularWithoutBlocking(t *testing.T) {
	e := newEnv(t)
	if err := syscall.Mkfifo(e.abs("pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.symlink(t, "pipe", "pipelink")
	reqs := []Request{{Path: "pipe"}, {Path: "pipelink"}}
	// A socket needs a short path; skip it where the temp dir is too deep.
	if l, err := net.Listen("unix", e.abs("sock")); err == nil {
		defer l.Close()
		reqs = append(reqs, Request{Path: "sock"})
	}
	done := make(chan []Item, 1)
	go func() {
		items, err := NewReader(Limits{}).Read(context.Background(), e.root, reqs, false)
		if err != nil {
			t.Error(err)
		}
		done <- items
	}()
	var got []Item
	select {
	case got = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("blocked on a FIFO")
	}
	var want []Item
	for _, r := range reqs {
		want = append(want, Item{Path: r.Path, Error: &ItemError{Code: CodeNotRegular, Message: "not a regular file (FIFO, socket or device); it was not read"}})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
}

// TestOpenFlagsDoNotBlockOnFIFO covers the race the Lstat before each open
// cannot: a FIFO put in place between the Lstat and the open.
func TestOpenFlagsDoNotBlockOnFIFO(t *testing.T) {
	e := newEnv(t)
	if err := syscall.Mkfifo(e.abs("pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		f, _, err := project.Open(e.root, "pipe", false)
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("open with project.Open: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("opening a FIFO with project.Open blocked")
	}
}

// TestReadFIFOSwappedIn puts a FIFO where a regular file was after the path
// was resolved: the open must not block, and the open file's mode decides.
func TestReadFIFOSwappedIn(t *testing.T) {
	e := newEnv(t)
	e.write(t, "f", "x\n")
	r := NewReader(Limits{})
	r.beforeOpen = func() {
		if fi, err := os.Lstat(e.abs("f")); err != nil || !fi.Mode().IsRegular() {
			return
		}
		if err := os.Remove(e.abs("f")); err != nil {
			t.Error(err)
		}
		if err := syscall.Mkfifo(e.abs("f"), 0o644); err != nil {
			t.Error(err)
		}
	}
	done := make(chan []Item, 1)
	go func() {
		items, err := r.Read(context.Background(), e.root, []Request{{Path: "f"}}, false)
		if err != nil {
			t.Error(err)
		}
		done <- items
	}()
	select {
	case got := <-done:
		want := []Item{{Path: "f", Error: &ItemError{Code: CodeNotRegular, Message: "not a regular file (FIFO, socket or device); it was not read"}}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("items (-want +got):\n%s", diff)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocked on a FIFO")
	}
}
