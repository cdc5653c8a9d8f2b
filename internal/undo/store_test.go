package undo

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/devspace-dev/devspace/internal/patch"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// storeFiles lists the files of the execution's snapshot directory.
// waitIndexed waits until the store has indexed (and cleaned up) what it
// found on disk when it was opened: it does so in the background.
func (e *env) waitIndexed() {
	e.t.Helper()
	if err := e.store.Wait(); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) storeFiles() []string {
	e.t.Helper()
	e.waitIndexed()
	ents, err := os.ReadDir(filepath.Join(e.storeDir, execDir(e.exec)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, d := range ents {
		out = append(out, d.Name())
	}
	return out
}

// checkDisk checks that the store accounts for exactly the bytes on disk
// and that everything in it is private.
func (e *env) checkDisk(what string) {
	e.t.Helper()
	e.waitIndexed()
	var onDisk int64
	err := filepath.WalkDir(e.storeDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == e.storeDir { // Dir itself is the caller's
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir() && fi.Mode().Perm() != 0o700, !d.IsDir() && fi.Mode().Perm() != 0o600:
			e.t.Errorf("%s: %s has mode %v", what, p, fi.Mode())
		case !d.IsDir():
			onDisk += fi.Size()
		}
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if total, _ := e.store.Bytes(""); total != onDisk {
		e.t.Errorf("%s: store accounts for %d bytes, %d on disk", what, total, onDisk)
	}
}

func packs(names []string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, "pack-") {
			out = append(out, n)
		}
	}
	return out
}

const (
	pack1 = "pack-00000000000000000001"
	pack2 = "pack-00000000000000000002"
	pack3 = "pack-00000000000000000003"
	pack4 = "pack-00000000000000000004"
)

func TestPackPerRecordAndDedup(t *testing.T) {
	e := newEnv(t, map[string]testutil.File{"a.txt": {Content: "a\n"}, "b.txt": {Content: "b\n", Mode: 0o755}}, Options{})
	const forth = "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** Update File: b.txt\n@@\n-b\n+bb\n*** End Patch"
	treeA := testutil.Tree(t, e.dir)
	e.apply("op1", forth, patch.Options{})
	treeB := testutil.Tree(t, e.dir)
	if got, want := e.storeFiles(), []string{"manifest-00000000000000000001.json", pack1}; !cmp.Equal(got, want) {
		t.Fatalf("after op1: %q, want %q (one pack for four contents)", got, want)
	}
	e.checkDisk("after op1")
	// Back and forth again: every content is already stored.
	e.apply("op2", "*** Begin Patch\n*** Update File: a.txt\n@@\n-A\n+a\n*** Update File: b.txt\n@@\n-bb\n+b\n*** End Patch", patch.Options{})
	e.apply("op3", forth, patch.Options{})
	if got := packs(e.storeFiles()); !cmp.Equal(got, []string{pack1}) {
		t.Errorf("packs after identical contents: %q, want only %s", got, pack1)
	}
	e.checkDisk("after op3")
	// Reopened, the store still knows what it holds.
	e.store.Close()
	e.store = openStore(t, Options{Dir: e.storeDir})
	e.apply("op4", "*** Begin Patch\n*** Update File: a.txt\n@@\n-A\n+a\n*** Update File: b.txt\n@@\n-bb\n+b\n*** End Patch", patch.Options{})
	if got := packs(e.storeFiles()); !cmp.Equal(got, []string{pack1}) {
		t.Errorf("packs after reopening: %q, want only %s", got, pack1)
	}
	e.checkDisk("after op4")
	e.mustUndo("", false)
	e.same("after undoing op4", treeB)
	e.mustUndo("", false)
	e.same("after undoing op3", treeA)
	e.mustUndo("", false)
	e.same("after undoing op2", treeB)
	e.mustUndo("", false)
	e.same("after undoing op1", treeA)
	e.mustUndo("op1", true)
	e.same("after redoing op1", treeB)
}

func TestPackDeletedWhenUnreferenced(t *testing.T) {
	e := newEnv(t, map[string]testutil.File{"a.txt": {Content: "a\n"}}, Options{MaxPerExecution: 2})
	e.apply("op1", "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** End Patch", patch.Options{})
	e.apply("op2", "*** Begin Patch\n*** Update File: a.txt\n@@\n-A\n+a\n*** End Patch", patch.Options{}) // only pack1
	treeOp2 := testutil.Tree(t, e.dir)
	e.apply("op3", addPatch("b.txt", 100), patch.Options{})
	// op1 is dropped, but op2 still reads both its contents from pack1.
	if _, err := e.store.Get(e.exec, "op1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(op1) = %v, want ErrNotFound", err)
	}
	if got, want := packs(e.storeFiles()), []string{pack1, pack3}; !cmp.Equal(got, want) {
		t.Errorf("packs = %q, want %q", got, want)
	}
	e.checkDisk("with op1 dropped")
	e.apply("op4", addPatch("c.txt", 100), patch.Options{})
	if got, want := packs(e.storeFiles()), []string{pack3, pack4}; !cmp.Equal(got, want) {
		t.Errorf("packs after op2 dropped = %q, want %q", got, want)
	}
	e.checkDisk("with op2 dropped")
	total, _ := e.store.Bytes(e.exec)
	e.store.Close()
	e.store = openStore(t, Options{Dir: e.storeDir, MaxPerExecution: 2})
	if got, _ := e.store.Bytes(e.exec); got != total {
		t.Errorf("bytes after reopen = %d, want %d", got, total)
	}
	e.mustUndo("", false)
	e.mustUndo("", false)
	e.same("after undoing op4 and op3", treeOp2)
}

var fixedClock = testutil.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)).Now

func TestSharedPackOverBoundNotReused(t *testing.T) {
	// Manifests here are ~800 bytes.
	e := newEnv(t, map[string]testutil.File{"small.txt": {Content: "s\n"}}, Options{PerExecutionBytes: 5000, Now: fixedClock})
	e.apply("op1", "*** Begin Patch\n*** Update File: small.txt\n@@\n-s\n+t\n*** Add File: big.txt\n+"+strings.Repeat("x", 4000)+"\n*** End Patch", patch.Options{})
	// Referencing small.txt's content in pack1 would keep pack1's 4,000
	// bytes alive and op2 over the bound with it: op2 stores its own copy.
	e.apply("op2", "*** Begin Patch\n*** Update File: small.txt\n@@\n-t\n+u\n*** Add File: medium.txt\n+"+strings.Repeat("y", 1000)+"\n*** End Patch", patch.Options{})
	if _, err := e.store.Get(e.exec, "op1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(op1) = %v, want ErrNotFound", err)
	}
	if got := packs(e.storeFiles()); !cmp.Equal(got, []string{pack2}) {
		t.Errorf("packs = %q, want only %s", got, pack2)
	}
	if _, b := e.store.Bytes(e.exec); b > 5000 {
		t.Errorf("%d bytes kept", b)
	}
	e.checkDisk("after op2")
	e.mustUndo("op2", false)
	if got := testutil.Tree(t, e.dir)["small.txt"]; got != `file -rw-r--r-- "t\n"` {
		t.Errorf("small.txt after undo: %s", got)
	}
}

func TestCorruptPackNeverRestored(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, pack string)
		reopen bool
	}{
		{"byte flipped", func(t *testing.T, pack string) {
			b, err := os.ReadFile(pack)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 0x20
			if err := os.WriteFile(pack, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"truncated", func(t *testing.T, pack string) {
			if err := os.Truncate(pack, 5); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"truncated, then reopened", func(t *testing.T, pack string) {
			if err := os.Truncate(pack, 5); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"zeroed, then reopened", func(t *testing.T, pack string) {
			fi, err := os.Stat(pack)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(pack, make([]byte, fi.Size()), 0o600); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"missing", func(t *testing.T, pack string) {
			if err := os.Remove(pack); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, map[string]testutil.File{"a.txt": {Content: "alpha\n"}}, Options{})
			e.apply("op1", "*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n*** Add File: d/b.txt\n+beta\n*** End Patch", patch.Options{})
			tt.damage(t, filepath.Join(e.storeDir, execDir(e.exec), pack1))
			if tt.reopen {
				e.store.Close()
				e.store = openStore(t, Options{Dir: e.storeDir})
				e.checkDisk("after reopen")
			}
			after := testutil.Tree(t, e.dir)
			snap, err := e.store.Get(e.exec, "op1")
			if err != nil || snap.NotUndoable != ReasonIncomplete || len(snap.Files) != 0 || len(snap.CreatedDirs) != 0 {
				t.Fatalf("Get = %+v, %v; want an incomplete stub", snap, err)
			}
			if _, err := e.undo("", false, patch.Options{}); !errors.Is(err, ErrNotUndoable) {
				t.Errorf("undo error = %v, want ErrNotUndoable", err)
			}
			e.same("after the refused undo", after)
		})
	}
}

func TestReopenAfterCrashMidRecord(t *testing.T) {
	e := newEnv(t, map[string]testutil.File{"a.txt": {Content: "a\n"}}, Options{})
	e.apply("op1", "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** End Patch", patch.Options{})
	want1, err := e.store.Get(e.exec, "op1")
	if err != nil {
		t.Fatal(err)
	}
	total, _ := e.store.Bytes(e.exec)
	e.apply("op2", addPatch("b.txt", 50), patch.Options{})
	// A crash after op2's pack was written and before its manifest was
	// (as if the manifest were never renamed into place), with a pack
	// temp of a Record that got less far.
	execPath := filepath.Join(e.storeDir, execDir(e.exec))
	if err := os.Remove(filepath.Join(execPath, "manifest-00000000000000000002.json")); err != nil {
		t.Fatal(err)
	}
	// And a manifest of the first format, which is not read.
	testutil.WriteTree(t, execPath, map[string]testutil.File{
		pack3 + ".tmp-0123456789ab":          {Content: "partial"},
		"manifest-00000000000000000005.json": {Content: `{"version":1,"executionId":"exe_1","opId":"old","seq":5,"files":[]}`},
	})
	e.store.Close()

	e.store = openStore(t, Options{Dir: e.storeDir})
	if got, want := e.storeFiles(), []string{"manifest-00000000000000000001.json", pack1}; !cmp.Equal(got, want) {
		t.Errorf("after reopen: %q, want %q", got, want)
	}
	if got, _ := e.store.Bytes(e.exec); got != total {
		t.Errorf("bytes after reopen = %d, want %d", got, total)
	}
	if _, err := e.store.Get(e.exec, "op2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(op2) = %v, want ErrNotFound", err)
	}
	got1, err := e.store.Get(e.exec, "op1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want1, got1); diff != "" {
		t.Errorf("op1 after reopen (-want +got):\n%s", diff)
	}
	// The next Record reuses sequence 2 and its pack name.
	e.apply("op2b", addPatch("c.txt", 50), patch.Options{})
	snap, err := e.store.Latest(e.exec)
	if err != nil || snap.Seq != 2 || len(snap.Files) != 1 || !bytes.HasPrefix(snap.Files[0].After.Content, []byte("c.txtxx")) {
		t.Fatalf("Latest = %+v, %v", snap, err)
	}
	e.checkDisk("after op2b")
}

// TestIndexLater: with IndexLater the snapshots on disk are not read
// (crash leftovers stay) until Index is called or a method needs them;
// a store closed before that closes at once without indexing.
func TestIndexLater(t *testing.T) {
	e := newEnv(t, map[string]testutil.File{"a.txt": {Content: "a\n"}}, Options{})
	e.apply("op1", "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** End Patch", patch.Options{})
	e.store.Close()
	leftover := filepath.Join(e.storeDir, execDir(e.exec), pack3+".tmp-0123456789ab")
	testutil.WriteTree(t, filepath.Dir(leftover), map[string]testutil.File{filepath.Base(leftover): {Content: "partial"}})
	present := func() bool { _, err := os.Stat(leftover); return err == nil }

	// Closed before anything needed it: never indexed.
	s, err := NewStore(Options{Dir: e.storeDir, IndexLater: true})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !present() {
		t.Fatal("a store closed before it was needed indexed the snapshots")
	}
	if _, err := s.Latest(e.exec); err == nil {
		t.Error("Latest on a closed, never indexed store succeeded")
	}

	// A method that needs the index starts it.
	s = openStore(t, Options{Dir: e.storeDir, IndexLater: true})
	if !present() || s.Indexed() {
		t.Fatal("indexed before Index or a method asked")
	}
	if snap, err := s.Latest(e.exec); err != nil || snap.OpID != "op1" {
		t.Fatalf("Latest = %+v, %v", snap, err)
	}
	if present() {
		t.Error("indexing did not remove the leftover")
	}

	// Index starts it in the background; a second call adds nothing.
	testutil.WriteTree(t, filepath.Dir(leftover), map[string]testutil.File{filepath.Base(leftover): {Content: "partial"}})
	s = openStore(t, Options{Dir: e.storeDir, IndexLater: true})
	s.Index()
	s.Index()
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	if present() || !s.Indexed() {
		t.Error("Index did not remove the leftover, or Indexed does not say it is done")
	}
}
