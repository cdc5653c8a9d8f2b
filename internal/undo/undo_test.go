package undo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/devspace-dev/devspace/internal/patch"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// resolver resolves symlinks inside root as apply_patch's snapshot does
// (mcpserver's snapshotResolver).
func resolver(root *os.Root) Resolver {
	return func(rel string) (string, error) {
		real, _, err := project.RealPath(root, rel)
		return real, err
	}
}

// env is a Project directory with a snapshot store, driven the way
// apply_patch and undo_patch drive them.
type env struct {
	t        *testing.T
	dir      string
	root     *os.Root
	storeDir string
	store    *Store
	exec     string
}

func newEnv(t *testing.T, tree map[string]testutil.File, opts Options) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), storeDir: t.TempDir(), exec: "exe_1"}
	testutil.WriteTree(t, e.dir, tree)
	root, err := os.OpenRoot(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	e.root = root
	opts.Dir = e.storeDir
	e.store = openStore(t, opts)
	return e
}

func openStore(t *testing.T, opts Options) *Store {
	t.Helper()
	s, err := NewStore(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// apply applies text with ifMatch read from disk and records it.
func (e *env) apply(opID, text string, opts patch.Options) *patch.Result {
	e.t.Helper()
	p, err := patch.Parse(text)
	if err != nil {
		e.t.Fatal(err)
	}
	pre := map[string]patch.Precondition{}
	for _, ph := range p.Paths() {
		b, err := os.ReadFile(filepath.Join(e.dir, filepath.FromSlash(ph)))
		if err != nil {
			pre[ph] = patch.Precondition{Set: true, MustNotExist: true}
		} else {
			pre[ph] = patch.Precondition{Set: true, ContentHash: patch.HashContent(b)}
		}
	}
	res, err := patch.Apply(context.Background(), e.root, p, pre, opts)
	if err != nil {
		e.t.Fatalf("Apply: %v", err)
	}
	if err := e.store.Record(context.Background(), e.exec, opID, res, resolver(e.root)); err != nil {
		e.t.Fatalf("Record: %v", err)
	}
	return res
}

// undo undoes (or redoes) opID, or the next candidate when opID is "".
func (e *env) undo(opID string, redo bool, opts patch.Options) (*patch.Result, error) {
	e.t.Helper()
	var snap *Snapshot
	var err error
	if opID == "" {
		snap, err = e.store.Next(e.exec, redo)
	} else {
		snap, err = e.store.Get(e.exec, opID)
	}
	if err != nil {
		return nil, err
	}
	states, dirs, err := Plan(snap, redo)
	if err != nil {
		return nil, err
	}
	res, err := patch.Restore(context.Background(), e.root, states, dirs, opts)
	if err != nil {
		return nil, err
	}
	if err := e.store.MarkUndone(e.exec, snap.OpID, !redo); err != nil {
		e.t.Fatalf("MarkUndone: %v", err)
	}
	return res, nil
}

func (e *env) mustUndo(opID string, redo bool) *patch.Result {
	e.t.Helper()
	res, err := e.undo(opID, redo, patch.Options{})
	if err != nil {
		e.t.Fatalf("undo(%q, redo=%v): %v", opID, redo, err)
	}
	return res
}

func (e *env) same(what string, want map[string]string) {
	e.t.Helper()
	if diff := cmp.Diff(want, testutil.Tree(e.t, e.dir)); diff != "" {
		e.t.Errorf("%s: tree (-want +got):\n%s", what, diff)
	}
}

func TestUndoRedoRoundTrip(t *testing.T) {
	tree := map[string]testutil.File{
		"crlf.txt":       {Content: "one\r\ntwo\r\nthree\r\n"},
		"tail.txt":       {Content: "first\nlast"},
		"bin/run.sh":     {Content: "#!/bin/sh\necho hi\n", Mode: 0o755},
		"old/name.txt":   {Content: "x\r\ny", Mode: 0o600},
		"old/keep.txt":   {Content: "keep\n"},
		"gone.sh":        {Content: "#!/bin/sh\nexit 0\n", Mode: 0o750},
		"dst/target.txt": {Content: "replaced\n", Mode: 0o640},
		"src/m.txt":      {Content: "m\n", Mode: 0o711},
	}
	tests := []struct {
		name  string
		patch string
		check func(t *testing.T, e *env, res *patch.Result)
	}{
		{"update keeps CRLF, no final newline and modes", `*** Begin Patch
*** Update File: crlf.txt
@@
 one
-two
+TWO
*** Update File: tail.txt
@@
-last
+LAST
*** Update File: bin/run.sh
@@
-echo hi
+echo hello
*** End Patch`, nil},
		{"added files and nested directories", `*** Begin Patch
*** Add File: n1/n2/n3/new.txt
+hello
*** Add File: n1/other.txt
+other
*** Add File: old/sub/added.txt
+added
*** End Patch`, func(t *testing.T, e *env, res *patch.Result) {
			if want := []string{"n1", "n1/n2", "n1/n2/n3", "old/sub"}; !cmp.Equal(res.CreatedDirs, want) {
				t.Errorf("CreatedDirs = %q, want %q", res.CreatedDirs, want)
			}
		}},
		{"move and update", `*** Begin Patch
*** Update File: old/name.txt
*** Move to: renamed/dir/name.txt
@@
-x
+X
*** End Patch`, nil},
		{"move over an existing file", `*** Begin Patch
*** Update File: src/m.txt
*** Move to: dst/target.txt
@@
-m
+M
*** End Patch`, nil},
		{"delete", `*** Begin Patch
*** Delete File: gone.sh
*** End Patch`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tree, Options{})
			before := testutil.Tree(t, e.dir)
			res := e.apply("op1", tt.patch, patch.Options{})
			after := testutil.Tree(t, e.dir)
			if tt.check != nil {
				tt.check(t, e, res)
			}
			e.mustUndo("op1", false)
			e.same("after undo", before)
			if _, err := e.undo("op1", false, patch.Options{}); !errors.Is(err, ErrAlreadyUndone) {
				t.Errorf("second undo: %v, want ErrAlreadyUndone", err)
			}
			e.mustUndo("op1", true)
			e.same("after redo", after)
			if _, err := e.undo("op1", true, patch.Options{}); !errors.Is(err, ErrNotUndone) {
				t.Errorf("second redo: %v, want ErrNotUndone", err)
			}
			e.mustUndo("", false)
			e.same("after the second undo", before)
		})
	}
}

func TestUndoConflictAfterExternalEdit(t *testing.T) {
	e := newEnv(t, map[string]testutil.File{"a.txt": {Content: "a\n"}, "b.txt": {Content: "b\n"}}, Options{})
	e.apply("op1", "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** Update File: b.txt\n@@\n-b\n+B\n*** Add File: c/new.txt\n+c\n*** End Patch", patch.Options{})
	testutil.WriteTree(t, e.dir, map[string]testutil.File{"b.txt": {Content: "edited by someone else\n"}})
	edited := testutil.Tree(t, e.dir)
	_, err := e.undo("op1", false, patch.Options{})
	var rc *patch.RestoreConflict
	if !errors.As(err, &rc) || !errors.Is(err, patch.ErrUndoConflict) {
		t.Fatalf("undo error = %v, want an undo conflict", err)
	}
	if got := rc.Paths(); !cmp.Equal(got, []string{"b.txt"}) {
		t.Errorf("drifted paths = %q, want [b.txt]", got)
	}
	e.same("after the refused undo", edited)
	snap, err := e.store.Get(e.exec, "op1")
	if err != nil || snap.Undone {
		t.Errorf("snapshot after a refused undo: %+v, %v", snap, err)
	}
}

// TestUndoConflictAfterModeChange: undo refuses a file whose content is
// still as the patch left it but whose mode someone changed since
// (another grant's chmod 4755, or 0600): it would silently reset that
// mode. Content-only comparison restored 0644 over both.
func TestUndoConflictAfterModeChange(t *testing.T) {
	for _, mode := range []os.FileMode{0o600, 0o755 | os.ModeSetuid, 0o644 | os.ModeSticky} {
		t.Run(mode.String(), func(t *testing.T) {
			e := newEnv(t, map[string]testutil.File{"a.txt": {Content: "a\n"}}, Options{})
			e.apply("op1", "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** End Patch", patch.Options{})
			path := filepath.Join(e.dir, "a.txt")
			if err := os.Chmod(path, mode); err != nil {
				t.Fatal(err)
			}
			_, err := e.undo("op1", false, patch.Options{})
			var rc *patch.RestoreConflict
			if !errors.As(err, &rc) || !cmp.Equal(rc.Paths(), []string{"a.txt"}) {
				t.Fatalf("undo error = %v, want an undo conflict on a.txt", err)
			}
			fi, err := os.Stat(path)
			if err != nil || fi.Mode() != mode {
				t.Errorf("mode after the refused undo: %v %v, want %v", fi.Mode(), err, mode)
			}
			if b, _ := os.ReadFile(path); string(b) != "A\n" {
				t.Errorf("content after the refused undo: %q", b)
			}
		})
	}
}

func TestUndoFaultMidRestoreLeavesTree(t *testing.T) {
	injected := errors.New("injected fault")
	for step := 0; step < 4; step++ { // restore a.txt, old/m.txt; remove c/new.txt, dst/m.txt
		t.Run(fmt.Sprint(step), func(t *testing.T) {
			e := newEnv(t, map[string]testutil.File{"a.txt": {Content: "a\r\n", Mode: 0o755}, "old/m.txt": {Content: "m"}}, Options{})
			e.apply("op1", "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** Add File: c/new.txt\n+c\n*** Update File: old/m.txt\n*** Move to: dst/m.txt\n*** End Patch", patch.Options{})
			after := testutil.Tree(t, e.dir)
			hooks := &patch.Hooks{BeforeRename: func(i int, _ string) error {
				if i == step {
					return injected
				}
				return nil
			}}
			_, err := e.undo("op1", false, patch.Options{Hooks: hooks})
			if !errors.Is(err, injected) || errors.Is(err, patch.ErrRollbackIncomplete) {
				t.Fatalf("undo error = %v, want the injected fault, rolled back", err)
			}
			e.same("after the failed undo", after)
			if snap, _ := e.store.Get(e.exec, "op1"); snap.Undone {
				t.Error("snapshot marked undone")
			}
			e.mustUndo("op1", false)
		})
	}
}

func TestSensitiveNeverSnapshotted(t *testing.T) {
	const secret = "SUPERSECRET-7f3a"
	tests := []struct {
		name  string
		tree  map[string]testutil.File
		link  [2]string // symlink name → target, optional
		patch string
		opts  patch.Options
	}{
		{"dotenv", map[string]testutil.File{"a.txt": {Content: "a\n"}}, [2]string{},
			"*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** Add File: .env\n+TOKEN=" + secret + "\n*** End Patch",
			patch.Options{AllowSensitive: true}},
		// Apply refuses keys/config without AllowSensitive, on its real path.
		{"real path under .ssh", map[string]testutil.File{".ssh/config": {Content: "Host x\n"}}, [2]string{"keys", ".ssh"},
			"*** Begin Patch\n*** Update File: keys/config\n@@\n-Host x\n+IdentityFile " + secret + "\n*** End Patch",
			patch.Options{AllowSensitive: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.tree, Options{})
			if tt.link[0] != "" {
				if err := os.Symlink(tt.link[1], filepath.Join(e.dir, tt.link[0])); err != nil {
					t.Fatal(err)
				}
			}
			e.apply("op1", tt.patch, tt.opts)
			err := filepath.WalkDir(e.storeDir, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				b, err := os.ReadFile(p)
				if strings.Contains(string(b), secret) {
					t.Errorf("%s holds the secret", p)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			snap, err := e.store.Latest(e.exec)
			if err != nil || snap.NotUndoable != ReasonSensitive || len(snap.Files) != 0 {
				t.Fatalf("Latest = %+v, %v; want a sensitive stub", snap, err)
			}
			before := testutil.Tree(t, e.dir)
			if _, err := e.undo("", false, patch.Options{AllowSensitive: true}); !errors.Is(err, ErrNotUndoable) {
				t.Errorf("undo error = %v, want ErrNotUndoable", err)
			}
			e.same("after the refused undo", before)
		})
	}
	t.Run("unresolvable path counts as sensitive", func(t *testing.T) {
		e := newEnv(t, map[string]testutil.File{"a.txt": {Content: "a\n"}}, Options{})
		res, err := patch.Apply(context.Background(), e.root, mustParse(t, "*** Begin Patch\n*** Add File: b.txt\n+b\n*** End Patch"),
			map[string]patch.Precondition{"b.txt": {Set: true, MustNotExist: true}}, patch.Options{})
		if err != nil {
			t.Fatal(err)
		}
		failing := func(string) (string, error) { return "", syscall.EACCES }
		if err := e.store.Record(context.Background(), e.exec, "op1", res, failing); err != nil {
			t.Fatal(err)
		}
		if snap, _ := e.store.Latest(e.exec); snap.NotUndoable != ReasonSensitive {
			t.Errorf("NotUndoable = %q, want %q", snap.NotUndoable, ReasonSensitive)
		}
	})
}

func mustParse(t *testing.T, text string) *patch.Patch {
	t.Helper()
	p, err := patch.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// addPatch adds file name with size bytes of content unique to name.
func addPatch(name string, size int) string {
	line := name + strings.Repeat("x", max(size-len(name)-1, 0))
	return "*** Begin Patch\n*** Add File: " + name + "\n+" + line + "\n*** End Patch"
}

func TestBoundsDropOldest(t *testing.T) {
	// Each snapshot is a second younger than the one before.
	clock := testutil.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := func() time.Time { clock.Advance(time.Second); return clock.Now() }
	opIDs := func(e *env, exec string) []string {
		var out []string
		for i := 1; i <= 10; i++ {
			if _, err := e.store.Get(exec, fmt.Sprint("op", i)); err == nil {
				out = append(out, fmt.Sprint("op", i))
			}
		}
		return out
	}
	t.Run("count per execution", func(t *testing.T) {
		e := newEnv(t, nil, Options{MaxPerExecution: 3, Now: now})
		for i := 1; i <= 5; i++ {
			e.apply(fmt.Sprint("op", i), addPatch(fmt.Sprintf("f%d.txt", i), 10), patch.Options{})
		}
		if got, want := opIDs(e, e.exec), []string{"op3", "op4", "op5"}; !cmp.Equal(got, want) {
			t.Errorf("kept %q, want %q", got, want)
		}
		if _, err := e.store.Get(e.exec, "op1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(op1) = %v, want ErrNotFound", err)
		}
		if n := countFiles(t, e.storeDir, "pack-"); n != 3 {
			t.Errorf("%d packs stored, want 3", n)
		}
	})
	t.Run("bytes per execution", func(t *testing.T) {
		e := newEnv(t, nil, Options{PerExecutionBytes: 3000, Now: now})
		for i := 1; i <= 5; i++ {
			e.apply(fmt.Sprint("op", i), addPatch(fmt.Sprintf("%c.txt", 'a'+i), 1000), patch.Options{})
		}
		if got, want := opIDs(e, e.exec), []string{"op4", "op5"}; !cmp.Equal(got, want) {
			t.Errorf("kept %q, want %q", got, want)
		}
		if _, b := e.store.Bytes(e.exec); b > 3000 {
			t.Errorf("%d bytes kept", b)
		}
		// Contents alone over the bound: a stub, and older ones stay.
		e.apply("op6", addPatch("z.txt", 4000), patch.Options{})
		snap, err := e.store.Latest(e.exec)
		if err != nil || snap.NotUndoable != ReasonTooLarge {
			t.Fatalf("Latest = %+v, %v; want a too-large stub", snap, err)
		}
		if _, _, err := Plan(snap, false); !errors.Is(err, ErrNotUndoable) {
			t.Errorf("Plan = %v, want ErrNotUndoable", err)
		}
		if got, want := opIDs(e, e.exec), []string{"op4", "op5", "op6"}; !cmp.Equal(got, want) {
			t.Errorf("kept %q, want %q", got, want)
		}
	})
	t.Run("total", func(t *testing.T) {
		// Each snapshot keeps ~1,330 bytes: 1,001 of content and its
		// manifest.
		e := newEnv(t, nil, Options{TotalBytes: 5500, Now: now})
		for i := 1; i <= 3; i++ {
			e.exec = "exe_a"
			e.apply(fmt.Sprint("op", 2*i-1), addPatch(fmt.Sprintf("%c.txt", 'a'+2*i), 1000), patch.Options{})
			e.exec = "exe_b"
			e.apply(fmt.Sprint("op", 2*i), addPatch(fmt.Sprintf("%c.txt", 'b'+2*i), 1000), patch.Options{})
		}
		// op1 (exe_a) and op2 (exe_b) are the oldest.
		if got, want := opIDs(e, "exe_a"), []string{"op3", "op5"}; !cmp.Equal(got, want) {
			t.Errorf("exe_a kept %q, want %q", got, want)
		}
		if got, want := opIDs(e, "exe_b"), []string{"op4", "op6"}; !cmp.Equal(got, want) {
			t.Errorf("exe_b kept %q, want %q", got, want)
		}
		if total, _ := e.store.Bytes(""); total > 5500 {
			t.Errorf("%d bytes kept", total)
		}
		if err := e.store.DropExecution("exe_a"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.Latest("exe_a"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Latest after drop = %v", err)
		}
		if total, b := e.store.Bytes("exe_b"); total != b {
			t.Errorf("total %d after dropping exe_a, exe_b holds %d", total, b)
		}
	})
}

// countFiles counts the files under dir whose name starts with prefix.
func countFiles(t *testing.T, dir, prefix string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), prefix) {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestOtherExecutionAndNext(t *testing.T) {
	e := newEnv(t, map[string]testutil.File{"a.txt": {Content: "0\n"}}, Options{})
	for i := 1; i <= 3; i++ {
		e.apply(fmt.Sprint("op", i), fmt.Sprintf("*** Begin Patch\n*** Update File: a.txt\n@@\n-%d\n+%d\n*** End Patch", i-1, i), patch.Options{})
	}
	if _, err := e.store.Get("exe_other", "op1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("another execution's patch: %v, want ErrNotFound", err)
	}
	if err := e.store.Record(context.Background(), e.exec, "op1", &patch.Result{}, resolver(e.root)); !errors.Is(err, fs.ErrExist) {
		t.Errorf("recording op1 twice: %v, want fs.ErrExist", err)
	}
	// Undo without a name walks back; redo walks forward again.
	var got []string
	step := func(redo bool) {
		res := e.mustUndo("", redo)
		got = append(got, strings.TrimSpace(string(res.Files[0].AfterContent)))
	}
	step(false)
	step(false)
	step(true)
	step(false)
	step(false)
	step(true)
	step(true)
	step(true)
	if want := []string{"2", "1", "2", "1", "0", "1", "2", "3"}; !cmp.Equal(got, want) {
		t.Errorf("contents after each step = %q, want %q", got, want)
	}
	if _, err := e.undo("", true, patch.Options{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("redo with nothing undone: %v, want ErrNotFound", err)
	}
	// Undoing an older patch that a newer one built on conflicts.
	if _, err := e.undo("op1", false, patch.Options{}); !errors.Is(err, patch.ErrUndoConflict) {
		t.Errorf("undo op1 under op3: %v, want ErrUndoConflict", err)
	}
}

func TestStoreSurvivesReopen(t *testing.T) {
	e := newEnv(t, map[string]testutil.File{"a.txt": {Content: "a\r\n", Mode: 0o755}}, Options{})
	e.apply("op1", "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** Add File: d/b.txt\n+b\n*** End Patch", patch.Options{})
	e.apply("op2", "*** Begin Patch\n*** Update File: a.txt\n@@\n-A\n+AA\n*** End Patch", patch.Options{})
	e.mustUndo("op2", false)
	want1, err := e.store.Get(e.exec, "op1")
	if err != nil {
		t.Fatal(err)
	}
	want2, _ := e.store.Get(e.exec, "op2")
	total, _ := e.store.Bytes(e.exec)
	// Leftovers of a crash: a temp manifest, an unreferenced pack, and
	// a content of the first format (one file per content).
	execPath := filepath.Join(e.storeDir, execDir(e.exec))
	testutil.WriteTree(t, execPath, map[string]testutil.File{
		"manifest-00000000000000000003.json.tmp-abc": {Content: "{"},
		"pack-00000000000000000009":                  {Content: "orphan"},
		"blobs/" + strings.Repeat("0", 64):           {Content: "orphan"},
	})
	if err := e.store.Close(); err != nil {
		t.Fatal(err)
	}

	e.store = openStore(t, Options{Dir: e.storeDir})
	for _, want := range []*Snapshot{want1, want2} {
		got, err := e.store.Get(e.exec, want.OpID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s after reopen (-want +got):\n%s", want.OpID, diff)
		}
	}
	if got, _ := e.store.Bytes(e.exec); got != total {
		t.Errorf("bytes after reopen = %d, want %d", got, total)
	}
	for _, name := range []string{"pack-00000000000000000009", "blobs"} {
		if _, err := os.Stat(filepath.Join(execPath, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("orphan %s kept: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(execPath, "manifest-00000000000000000003.json.tmp-abc")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("temp manifest kept: %v", err)
	}
	// The undo state and the sequence carry on.
	e.mustUndo("", true) // redoes op2
	e.apply("op3", "*** Begin Patch\n*** Add File: c.txt\n+c\n*** End Patch", patch.Options{})
	if snap, _ := e.store.Latest(e.exec); snap.Seq != 3 {
		t.Errorf("Seq after reopen = %d, want 3", snap.Seq)
	}

	// A pack lost on disk turns the snapshots using it into stubs: op2's
	// holds its after-state (its before-state is in op1's pack).
	if err := os.Remove(filepath.Join(execPath, "pack-00000000000000000002")); err != nil {
		t.Fatal(err)
	}
	e.store.Close()
	e.store = openStore(t, Options{Dir: e.storeDir})
	snap, err := e.store.Get(e.exec, "op2")
	if err != nil || snap.NotUndoable != ReasonIncomplete {
		t.Errorf("op2 with a lost content = %+v, %v; want an incomplete stub", snap, err)
	}
	if snap, err := e.store.Get(e.exec, "op1"); err != nil || snap.NotUndoable != "" {
		t.Errorf("op1 = %+v, %v", snap, err)
	}
}
