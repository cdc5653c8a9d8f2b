package patch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// crashCase is one transaction run through the crash tests: run applies
// it to dir with opts.
type crashCase struct {
	name string
	tree map[string]testutil.File
	run  func(t *testing.T, dir string, opts Options) error
}

func applyCase(name, text string, tree map[string]testutil.File) crashCase {
	return crashCase{name: name, tree: tree, run: func(t *testing.T, dir string, opts Options) error {
		_, err := apply(t, dir, text, opts)
		return err
	}}
}

func restoreCase(name string, tree map[string]testutil.File, states []FileState, rmdirs []string) crashCase {
	return crashCase{name: name, tree: tree, run: func(t *testing.T, dir string, opts Options) error {
		_, err := Restore(context.Background(), openRoot(t, dir), states, rmdirs, opts)
		return err
	}}
}

// crashCases cover creates (in new directories), updates (content and
// mode), deletes and moves (onto an existing file and onto a new one),
// for Apply and for Restore.
func crashCases() []crashCase {
	return []crashCase{
		applyCase("apply/update create move delete", faultPatch, faultTree()),
		applyCase("apply/multi", multiPatch, multiTree()),
		applyCase("apply/move to new dir", "*** Begin Patch\n*** Update File: a/x.txt\n*** Move to: b/c/x.txt\n@@\n-x\n+X\n*** Add File: a/y.txt\n+y\n*** End Patch",
			map[string]testutil.File{"a/x.txt": {Content: "x\n"}}),
		restoreCase("restore/update create delete rmdirs", restoreTree(), restoreStates(), []string{"sub", "n1"}),
		restoreCase("restore/mode only", map[string]testutil.File{"m.sh": {Content: "m\n", Mode: 0o644}, "d.txt": {Content: "d\n"}},
			[]FileState{{Path: "m.sh", Expect: hashOf("m\n"), Content: []byte("m\n"), Mode: 0o755}, {Path: "d.txt", Expect: hashOf("d\n"), Absent: true}}, nil),
	}
}

func openIntents(t *testing.T, dir string) *Intents {
	t.Helper()
	in, err := OpenIntents(dir)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// recoverAll runs Recover the way a restarting server does, with a fresh
// Intents on the same directory.
func recoverAll(t *testing.T, stateDir string) *Recovery {
	t.Helper()
	rec, err := openIntents(t, stateDir).Recover(context.Background(), func(p string) (*os.Root, error) { return os.OpenRoot(p) })
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func records(t *testing.T, stateDir string) []string {
	t.Helper()
	ents, err := os.ReadDir(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// countPoints runs c to completion (or to its injected failure) and
// returns how many protocol points it reached, the tree it left and its
// error.
func countPoints(t *testing.T, c crashCase, hooks Hooks) (int, map[string]string, error) {
	t.Helper()
	dir, state := t.TempDir(), t.TempDir()
	testutil.WriteTree(t, dir, c.tree)
	n := 0
	hooks.Crash = func(int) bool { n++; return false }
	err := c.run(t, dir, Options{Intents: openIntents(t, state), Hooks: &hooks})
	if r := records(t, state); len(r) != 0 {
		t.Fatalf("uncrashed run left intent records %v", r)
	}
	return n, testutil.Tree(t, dir), err
}

// TestCrashAtEveryPointRecovers stops each transaction at every point of
// the commit protocol as a SIGKILL would (nothing rolled back, nothing
// cleaned up), then runs Recover as the next start does: every file ends
// all old or all new across the whole transaction, old before the commit
// point and new after it, with no staging leftovers and no record left.
func TestCrashAtEveryPointRecovers(t *testing.T) {
	for _, c := range crashCases() {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			testutil.WriteTree(t, dir, c.tree)
			oldTree := testutil.Tree(t, dir)
			n, newTree, err := countPoints(t, c, Hooks{})
			if err != nil {
				t.Fatal(err)
			}
			if n < 5 {
				t.Fatalf("only %d protocol points", n)
			}
			var seq []string
			for k := range n {
				dir, state := t.TempDir(), t.TempDir()
				testutil.WriteTree(t, dir, c.tree)
				hooks := &Hooks{Crash: func(p int) bool { return p == k }}
				if err := c.run(t, dir, Options{Intents: openIntents(t, state), Hooks: hooks}); !errors.Is(err, errCrashed) {
					t.Fatalf("point %d: %v, want the simulated crash", k, err)
				}
				if r := records(t, state); len(r) != 1 {
					t.Fatalf("point %d: intent records %v, want one", k, r)
				}
				rec := recoverAll(t, state)
				if len(rec.Patches) != 1 || rec.Patches[0].Err != nil {
					t.Fatalf("point %d: recovery %+v", k, rec.Patches)
				}
				got := testutil.Tree(t, dir)
				switch {
				case cmp.Equal(got, oldTree):
					seq = append(seq, "old")
				case cmp.Equal(got, newTree):
					seq = append(seq, "new")
				default:
					t.Fatalf("point %d (%s, outcome %s): neither all old nor all new:\nvs old (-want +got):\n%s\nvs new (-want +got):\n%s",
						k, rec.Patches[0].Phase, rec.Patches[0].Outcome, cmp.Diff(oldTree, got), cmp.Diff(newTree, got))
				}
				if want := map[string]string{"old": RecoveredBack, "new": RecoveredForward}[seq[k]]; rec.Patches[0].Outcome != want {
					t.Errorf("point %d: outcome %s with the tree %s", k, rec.Patches[0].Outcome, seq[k])
				}
				if r := records(t, state); len(r) != 0 {
					t.Errorf("point %d: records left after recovery: %v", k, r)
				}
				// A second start finds nothing to do.
				if again := recoverAll(t, state); len(again.Patches) != 0 {
					t.Errorf("point %d: second recovery %+v", k, again.Patches)
				}
			}
			t.Logf("outcomes by crash point: %v", seq)
			// Old up to the commit point, new from there on.
			joined := strings.Join(seq, " ")
			if !strings.HasPrefix(joined, "old") || !strings.HasSuffix(joined, "new") || strings.Contains(joined, "new old") {
				t.Errorf("outcomes by crash point: %s", joined)
			}
		})
	}
}

// TestCrashDuringRollbackRecovers fails a transaction at each commit step
// and stops it at every point from there on, including inside the
// rollback: Recover brings every file back to all old, or finishes the
// patch (a crash before the failure, or before the rollback has written
// every original back to its aside).
func TestCrashDuringRollbackRecovers(t *testing.T) {
	injected := errors.New("injected fault")
	for _, c := range crashCases() {
		_, newTree, err := countPoints(t, c, Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		for fail := 0; ; fail++ {
			failAt := fail
			hooks := Hooks{BeforeRename: func(i int, _ string) error {
				if i == failAt {
					return injected
				}
				return nil
			}}
			dir := t.TempDir()
			testutil.WriteTree(t, dir, c.tree)
			oldTree := testutil.Tree(t, dir)
			n, tree, err := countPoints(t, c, hooks)
			if err == nil {
				break // no commit step failAt: the patch went through
			}
			if !errors.Is(err, injected) {
				t.Fatalf("%s: %v, want the injected fault", c.name, err)
			}
			if d := cmp.Diff(oldTree, tree); d != "" {
				t.Fatalf("%s: failure at step %d not rolled back (-want +got):\n%s", c.name, fail, d)
			}
			t.Run(fmt.Sprintf("%s/fail at step %d", c.name, fail), func(t *testing.T) {
				for k := range n {
					dir, state := t.TempDir(), t.TempDir()
					testutil.WriteTree(t, dir, c.tree)
					h := hooks
					h.Crash = func(p int) bool { return p == k }
					err := c.run(t, dir, Options{Intents: openIntents(t, state), Hooks: &h})
					if !errors.Is(err, errCrashed) {
						t.Fatalf("point %d: %v, want the simulated crash", k, err)
					}
					rec := recoverAll(t, state)
					if len(rec.Patches) != 1 || rec.Patches[0].Err != nil {
						t.Fatalf("point %d: recovery %+v", k, rec.Patches)
					}
					got := testutil.Tree(t, dir)
					if !cmp.Equal(got, oldTree) && !cmp.Equal(got, newTree) {
						t.Fatalf("point %d (%+v): neither all old nor all new (-old +got):\n%s", k, rec.Patches, cmp.Diff(oldTree, got))
					}
					if r := records(t, state); len(r) != 0 {
						t.Errorf("point %d: records left: %v", k, r)
					}
				}
			})
		}
	}
}

// crashAfterCommitPoint runs faultPatch on dir and stops it right after
// the record reached "committing", before any rename.
func crashAfterCommitPoint(t *testing.T, dir, state string) {
	t.Helper()
	stop := -1
	hooks := &Hooks{
		AfterStage: func() error { stop = -2; return nil },
		Crash: func(p int) bool {
			switch stop {
			case -2: // the first point after staging is the commit point
				stop = p
				return true
			}
			return false
		},
	}
	if _, err := apply(t, dir, faultPatch, Options{Intents: openIntents(t, state), Hooks: hooks}); !errors.Is(err, errCrashed) {
		t.Fatalf("Apply: %v, want the simulated crash", err)
	}
	names := records(t, state)
	if len(names) != 1 || !strings.HasSuffix(names[0], "."+phaseCommitting) {
		t.Fatalf("records %v, want one committing", names)
	}
}

func TestRecoverLeavesChangedFilesAsFound(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	testutil.WriteTree(t, dir, faultTree())
	crashAfterCommitPoint(t, dir, state)
	// Someone edits a.txt before the server comes back.
	testutil.WriteTree(t, dir, map[string]testutil.File{"a.txt": {Content: "theirs\n", Mode: 0o755}})
	rec := recoverAll(t, state)
	if len(rec.Patches) != 1 || rec.Patches[0].Outcome != RecoveredIncomplete || rec.Patches[0].Err == nil {
		t.Fatalf("recovery %+v, want incomplete", rec.Patches)
	}
	if !strings.Contains(rec.Patches[0].Err.Error(), "a.txt") {
		t.Errorf("error %v does not name a.txt", rec.Patches[0].Err)
	}
	if got := readFile(t, dir, "a.txt"); got != "theirs\n" {
		t.Errorf("a.txt = %q, the edit was lost", got)
	}
	// The rest is finished, and nothing is left over.
	want := map[string]string{"n1/n2/n3/new.txt": "new\n", "dst/m.txt": "M\n"}
	for p, c := range want {
		if got := readFile(t, dir, p); got != c {
			t.Errorf("%s = %q, want %q", p, got, c)
		}
	}
	for p := range testutil.Tree(t, dir) {
		if strings.Contains(p, ".devspace-") {
			t.Errorf("leftover %s", p)
		}
	}
	for _, p := range []string{"src/m.txt", "del.txt"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s survived: %v", p, err)
		}
	}
}

func TestRecoverRollsBackWhenAStagedFileIsDamaged(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	testutil.WriteTree(t, dir, faultTree())
	before := testutil.Tree(t, dir)
	crashAfterCommitPoint(t, dir, state)
	// A power loss can leave a staged file without its content.
	var rec intentRecord
	name := records(t, state)[0]
	data, err := os.ReadFile(filepath.Join(state, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, rec.Steps[0].Tmp), 0); err != nil {
		t.Fatal(err)
	}
	r := recoverAll(t, state)
	if len(r.Patches) != 1 || r.Patches[0].Outcome != RecoveredBack {
		t.Fatalf("recovery %+v, want rolled back", r.Patches)
	}
	diffSnapshots(t, before, testutil.Tree(t, dir))
}

// TestRecoverStaleRecordChangesNothing: a record that outlived its
// transaction (its deletion lost) must not undo later changes.
func TestRecoverStaleRecordChangesNothing(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	testutil.WriteTree(t, dir, faultTree())
	var record []byte
	var recordName string
	hooks := &Hooks{Crash: func(int) bool {
		if names := records(t, state); len(names) == 1 {
			recordName = names[0]
			record, _ = os.ReadFile(filepath.Join(state, names[0]))
		}
		return false
	}}
	if _, err := apply(t, dir, faultPatch, Options{Intents: openIntents(t, state), Hooks: hooks}); err != nil {
		t.Fatal(err)
	}
	// Later patches change some files back and forth.
	if _, err := apply(t, dir, "*** Begin Patch\n*** Update File: a.txt\n@@\n-A\n+again\n*** Add File: del.txt\n+del\r\n*** Delete File: n1/n2/n3/new.txt\n*** End Patch", Options{}); err != nil {
		t.Fatal(err)
	}
	after := testutil.Tree(t, dir)
	if err := os.WriteFile(filepath.Join(state, recordName), record, 0o600); err != nil {
		t.Fatal(err)
	}
	recoverAll(t, state)
	diffSnapshots(t, after, testutil.Tree(t, dir))
	if r := records(t, state); len(r) != 0 {
		t.Errorf("records left: %v", r)
	}
}

// TestRecoverStaysInsideTheRoot: a directory of the patch replaced by a
// symlink leading out of the Project before the restart: Recover touches
// nothing outside and keeps the record.
func TestRecoverStaysInsideTheRoot(t *testing.T) {
	dir, state, outside := t.TempDir(), t.TempDir(), t.TempDir()
	testutil.WriteTree(t, dir, faultTree())
	crashAfterCommitPoint(t, dir, state)
	// Mirror dst/ outside, staging names included, then swap it for a link.
	if err := os.CopyFS(outside, os.DirFS(filepath.Join(dir, "dst"))); err != nil {
		t.Fatal(err)
	}
	outsideBefore := testutil.Tree(t, outside)
	if err := os.Rename(filepath.Join(dir, "dst"), filepath.Join(dir, "dst.moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "dst")); err != nil {
		t.Fatal(err)
	}
	rec := recoverAll(t, state)
	if len(rec.Patches) != 1 || rec.Patches[0].Outcome != RecoveredKept || !errors.Is(rec.Patches[0].Err, project.ErrPathDenied) {
		t.Fatalf("recovery %+v, want kept with a path denial", rec.Patches)
	}
	diffSnapshots(t, outsideBefore, testutil.Tree(t, outside))
	if r := records(t, state); len(r) != 1 {
		t.Errorf("records %v, want the record kept", r)
	}
}

func TestRecoverDropsBadRecords(t *testing.T) {
	dir, state, outside := t.TempDir(), t.TempDir(), t.TempDir()
	testutil.WriteTree(t, outside, map[string]testutil.File{"victim.txt": {Content: "v\n"}})
	testutil.WriteTree(t, dir, map[string]testutil.File{"f.txt": {Content: "f\n"}, ".f.txt.devspace-0123456789ab.tmp": {Content: "staged\n"}})
	before := testutil.Tree(t, dir)
	write := func(name string, rec intentRecord) {
		rec.Version = intentVersion
		data, _ := json.Marshal(rec)
		if err := os.WriteFile(filepath.Join(state, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rel, _ := filepath.Rel(dir, filepath.Join(outside, "victim.txt"))
	write("a1.committing", intentRecord{Root: dir, Steps: []intentStep{{Op: opRemove, Path: filepath.ToSlash(rel), Aside: ".x.devspace-0123456789ab.del", Old: hashOf("v\n")}}})
	write("a2.staging", intentRecord{Root: dir, Steps: []intentStep{{Op: opWrite, Path: "f.txt", Tmp: "f.txt", New: hashOf("x")}}})
	write("a3.committing", intentRecord{Root: dir, Steps: []intentStep{{Op: opWrite, Path: "f.txt", Tmp: "other/.f.txt.devspace-0123456789ab.tmp", New: hashOf("x")}}})
	write("a4.staging", intentRecord{Root: filepath.Join(dir, "gone"), Steps: []intentStep{{Op: opWrite, Path: "f.txt", Tmp: ".f.txt.devspace-0123456789ab.tmp", New: hashOf("x")}}})
	if err := os.WriteFile(filepath.Join(state, "a5.committing"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "a6.tmp"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := recoverAll(t, state)
	if len(rec.Patches) != 5 || rec.Count(RecoveredDropped) != 5 {
		t.Errorf("recovery %+v, want 5 dropped", rec.Patches)
	}
	diffSnapshots(t, before, testutil.Tree(t, dir))
	if got := readFile(t, outside, "victim.txt"); got != "v\n" {
		t.Errorf("victim.txt = %q", got)
	}
	if r := records(t, state); len(r) != 0 {
		t.Errorf("records left: %v", r)
	}
}

func TestRecoverKeepsRecordWhenRootCannotOpen(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	testutil.WriteTree(t, dir, faultTree())
	crashAfterCommitPoint(t, dir, state)
	busy := errors.New("not now")
	rec, err := openIntents(t, state).Recover(context.Background(), func(string) (*os.Root, error) { return nil, busy })
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Patches) != 1 || rec.Patches[0].Outcome != RecoveredKept || !errors.Is(rec.Patches[0].Err, busy) {
		t.Fatalf("recovery %+v, want kept", rec.Patches)
	}
	if r := recoverAll(t, state); r.Count(RecoveredForward) != 1 {
		t.Errorf("second start: %+v, want rolled forward", r.Patches)
	}
}

// TestIntentRecordHoldsNoContent: the record names files and hashes,
// never what they contain.
func TestIntentRecordHoldsNoContent(t *testing.T) {
	dir, state := t.TempDir(), filepath.Join(t.TempDir(), "intents")
	testutil.WriteTree(t, dir, map[string]testutil.File{"a.txt": {Content: "top secret old\n"}})
	var seen []byte
	hooks := &Hooks{AfterStage: func() error {
		names := records(t, state)
		seen, _ = os.ReadFile(filepath.Join(state, names[0]))
		return nil
	}}
	if _, err := apply(t, dir, "*** Begin Patch\n*** Update File: a.txt\n@@\n-top secret old\n+top secret new\n*** End Patch", Options{Intents: openIntents(t, state), Hooks: hooks}); err != nil {
		t.Fatal(err)
	}
	if len(seen) == 0 || strings.Contains(string(seen), "secret") {
		t.Errorf("record = %s", seen)
	}
	if fi, err := os.Stat(state); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("intents directory mode: %v %v", fi.Mode(), err)
	}
}

// readIntent returns the single record in state.
func readIntent(t *testing.T, state string) (string, *intentRecord) {
	t.Helper()
	names := records(t, state)
	if len(names) != 1 {
		t.Fatalf("records %v, want one", names)
	}
	data, err := os.ReadFile(filepath.Join(state, names[0]))
	if err != nil {
		t.Fatal(err)
	}
	var rec intentRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	return names[0], &rec
}

// TestRollbackAsideBlocked: when a rollback cannot write an original back
// (here its aside name is taken), a transaction with an intent record
// touches no target and leaves the record, and Recover finishes the
// patch.
func TestRollbackAsideBlocked(t *testing.T) {
	injected := errors.New("injected fault")
	_, newTree, err := countPoints(t, applyCase("", faultPatch, faultTree()), Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	dir, state := t.TempDir(), t.TempDir()
	testutil.WriteTree(t, dir, faultTree())
	hooks := &Hooks{AfterCommit: func() error {
		// a.txt's aside is the last one the rollback writes: the others
		// are on disk when it fails.
		_, rec := readIntent(t, state)
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(rec.Steps[0].Aside)), []byte("blocker\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return injected
	}}
	_, err = apply(t, dir, faultPatch, Options{Intents: openIntents(t, state), Hooks: hooks})
	if !errors.Is(err, injected) || !errors.Is(err, ErrRollbackIncomplete) {
		t.Fatalf("Apply error = %v, want the fault and an incomplete rollback", err)
	}
	if name, _ := readIntent(t, state); !strings.HasSuffix(name, "."+phaseRollingBack) {
		t.Fatalf("record %s, want rolling_back", name)
	}
	for _, p := range []string{"a.txt", "dst/m.txt", "n1/n2/n3/new.txt"} {
		if got := testutil.Tree(t, dir)[p]; got != newTree[p] {
			t.Errorf("%s = %s, touched by the stopped rollback", p, got)
		}
	}
	rec := recoverAll(t, state)
	if len(rec.Patches) != 1 || rec.Patches[0].Outcome != RecoveredForward || rec.Patches[0].Err != nil {
		t.Fatalf("recovery %+v, want rolled forward", rec.Patches)
	}
	diffSnapshots(t, newTree, testutil.Tree(t, dir))
}

// TestCrashDuringRollbackAfterConflictRecovers: another writer changes a
// target just before its commit step, so the transaction rolls back, and
// the process dies at every point from there on. The changed file fits
// neither direction; Recover leaves it as found and still brings every
// other file to all old or all new.
func TestCrashDuringRollbackAfterConflictRecovers(t *testing.T) {
	c := applyCase("apply", faultPatch, faultTree())
	_, newTree, err := countPoints(t, c, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	for step, target := range []string{"a.txt", "n1/n2/n3/new.txt", "dst/m.txt", "src/m.txt", "del.txt"} {
		t.Run(target, func(t *testing.T) {
			// theirs has another writer change target in dir just before
			// its commit step, and reports whether it did.
			theirs := func(dir *string, reached *bool) *Hooks {
				return &Hooks{BeforeRename: func(i int, p string) error {
					if i == step {
						*reached = true
						testutil.WriteTree(t, *dir, map[string]testutil.File{p: {Content: "theirs\n"}})
					}
					return nil
				}}
			}
			var dir string
			var reached bool
			n, _, err := countPoints(t, crashCase{tree: c.tree, run: func(t *testing.T, d string, opts Options) error {
				dir = d
				return c.run(t, d, opts)
			}}, *theirs(&dir, &reached))
			if !errors.Is(err, ErrVersionConflict) {
				t.Fatalf("%v, want a conflict", err)
			}
			// Compare all but the changed file (and the directories the
			// other writer may have kept for it).
			strip := func(m map[string]string) map[string]string {
				out := map[string]string{}
				for k, v := range m {
					if k != target && !strings.HasPrefix(target, k+"/") {
						out[k] = v
					}
				}
				return out
			}
			conflicted := 0
			for k := range n {
				dir, state := t.TempDir(), t.TempDir()
				testutil.WriteTree(t, dir, c.tree)
				oldTree := testutil.Tree(t, dir)
				reached := false
				h := theirs(&dir, &reached)
				h.Crash = func(p int) bool { return p == k }
				if err := c.run(t, dir, Options{Intents: openIntents(t, state), Hooks: h}); !errors.Is(err, errCrashed) {
					t.Fatalf("point %d: %v, want the simulated crash", k, err)
				}
				rec := recoverAll(t, state)
				got, old, nw := testutil.Tree(t, dir), oldTree, newTree
				if reached {
					conflicted++
					if want := fmt.Sprintf("file %v %q", fs.FileMode(0o644), "theirs\n"); got[target] != want {
						t.Errorf("point %d: %s = %s, the other writer's change was lost", k, target, got[target])
					}
					got, old, nw = strip(got), strip(old), strip(nw)
				}
				if !cmp.Equal(got, old) && !cmp.Equal(got, nw) {
					t.Fatalf("point %d (%+v): neither all old nor all new (-old +got):\n%s\n(-new +got):\n%s", k, rec.Patches, cmp.Diff(old, got), cmp.Diff(nw, got))
				}
				if r := records(t, state); len(r) != 0 {
					t.Errorf("point %d: records left: %v", k, r)
				}
			}
			if conflicted == 0 {
				t.Fatal("no crash point after the conflict")
			}
		})
	}
}

// TestIntentRecordsKeepNoSensitiveContent: at every point of the commit
// protocol, through a rollback too, the intent records of a patch and of
// a restore of secrets with AllowSensitive hold no byte of a secret
// (hashes and names only), and none is left afterwards.
func TestIntentRecordsKeepNoSensitiveContent(t *testing.T) {
	injected := errors.New("injected fault")
	restore := []FileState{
		{Path: ".env", Expect: hashOf("TOKEN=" + secretMarker + "-env\n"), Content: []byte(secretMarker + "-restored\n"), Mode: 0o600},
		{Path: "keys/config", Expect: hashOf("Host " + secretMarker + "-ssh\n"), Content: []byte("Host " + secretMarker + "-2\n"), Mode: 0o600},
		{Path: ".ssh/id_ed25519", Expect: hashOf(secretMarker + "-key\n"), Absent: true},
		{Path: "config/new.key", Content: []byte(secretMarker + "-new\n"), Mode: 0o600},
	}
	for _, c := range []struct {
		name string
		run  func(t *testing.T, dir string, opts Options) error
	}{
		{"apply", func(t *testing.T, dir string, opts Options) error {
			_, err := apply(t, dir, secretsPatch, opts)
			return err
		}},
		{"restore", func(t *testing.T, dir string, opts Options) error {
			_, err := Restore(context.Background(), openRoot(t, dir), restore, nil, opts)
			return err
		}},
	} {
		for _, fail := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/rollback=%v", c.name, fail), func(t *testing.T) {
				dir, state := secretsTree(t), t.TempDir()
				points, read := 0, 0
				hooks := &Hooks{Crash: func(int) bool {
					points++
					for _, name := range records(t, state) {
						b, err := os.ReadFile(filepath.Join(state, name))
						if err != nil {
							continue // renamed to its next phase meanwhile
						}
						read++
						if testutil.HoldsSecret(b, secretMarker) {
							t.Errorf("intent record %s holds a secret: %s", name, b)
						}
					}
					return false
				}}
				if fail {
					hooks.BeforeRename = func(i int, _ string) error {
						if i == 2 {
							return injected
						}
						return nil
					}
				}
				err := c.run(t, dir, Options{AllowSensitive: true, Intents: openIntents(t, state), Hooks: hooks})
				if fail != errors.Is(err, injected) || !fail && err != nil {
					t.Fatalf("%v, want the injected fault: %v", err, fail)
				}
				if points == 0 || read == 0 {
					t.Fatalf("%d protocol points, %d records read: the test proves nothing", points, read)
				}
				if left := records(t, state); len(left) != 0 {
					t.Errorf("intent records left: %v", left)
				}
			})
		}
	}
}
