// Package testutil holds helpers shared by tests and benchmarks: file
// trees, Git repositories and the generated benchmark trees. It is test
// support and must only be imported from _test.go files.
package testutil

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// File is one file of a tree for WriteTree.
type File struct {
	Content string
	Mode    fs.FileMode // 0 means 0644
}

// WriteTree writes files, by slash path relative to dir, with their
// parents. Each file gets exactly its mode, whatever the umask.
func WriteTree(t testing.TB, dir string, files map[string]File) {
	t.Helper()
	for name, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		if err := os.WriteFile(p, []byte(f.Content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
}

// Tree renders every entry under dir, dir itself as ".", with its mode
// and exact content: "file <mode> <quoted content>", "dir <mode>",
// "link <target>" or "special <mode>" (a FIFO, socket or device, not
// read), by path relative to dir.
func Tree(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "link " + target
		case d.IsDir():
			out[rel] = fmt.Sprintf("dir %v", info.Mode())
		case !d.Type().IsRegular():
			out[rel] = fmt.Sprintf("special %v", info.Mode()) // reading a FIFO would block
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("file %v %q", info.Mode(), b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// WriteFile creates or replaces a file, with parents, relative to dir.
func WriteFile(t testing.TB, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// SwapDirAndLink makes dir/name alternate, in a tight loop until stop is
// called, between the directory dir/plain and the symlink dir/link (for
// example a link to a sensitive directory): the race a resolver must
// survive. name must be the directory when called; stop waits for the loop
// and leaves it a directory or a link.
func SwapDirAndLink(dir, name, plain, link string) (stop func()) {
	z, p, l := filepath.Join(dir, name), filepath.Join(dir, plain), filepath.Join(dir, link)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			default:
			}
			os.Rename(z, p)
			os.Rename(l, z)
			os.Rename(z, l)
			os.Rename(p, z)
		}
	}()
	return func() { close(quit); <-done }
}

// SyncBuffer is a bytes buffer safe for concurrent writes and reads: a
// test reads what a server logs while it runs.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *SyncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// String returns what was written so far.
func (w *SyncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// MarkedAlive returns the processes whose command line or environment
// carries marker, each as its PID and command line: every process of a
// command started with the marker in its environment, a daemon's
// children included (the check that nothing of a command is left).
func MarkedAlive(marker string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		for _, f := range []string{"cmdline", "environ"} {
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), f))
			if err == nil && bytes.Contains(b, []byte(marker)) {
				c, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
				out = append(out, e.Name()+" "+string(bytes.ReplaceAll(c, []byte{0}, []byte{' '})))
				break
			}
		}
	}
	return out
}
