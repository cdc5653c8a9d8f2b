package patch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/testutil"
)

func hashOf(s string) string { return HashContent([]byte(s)) }

// restoreTree is the tree the restore tests start from.
func restoreTree() map[string]testutil.File {
	return map[string]testutil.File{
		"a.txt":       {Content: "a\r\nb\r\n", Mode: 0o755},
		"keep.txt":    {Content: "keep"},
		"gone.txt":    {Content: "gone\n", Mode: 0o600},
		"sub/old.txt": {Content: "old\n"},
	}
}

// restoreStates rewrites a.txt (content and mode), creates n1/n2/new.txt,
// removes gone.txt and sub/old.txt, and keeps keep.txt as it is.
func restoreStates() []FileState {
	return []FileState{
		{Path: "a.txt", Expect: hashOf("a\r\nb\r\n"), Content: []byte("A\r\nb"), Mode: 0o640},
		{Path: "keep.txt", Expect: hashOf("keep"), Content: []byte("keep"), Mode: 0o644},
		{Path: "n1/n2/new.txt", Content: []byte("new\n"), Mode: 0o700},
		{Path: "gone.txt", Expect: hashOf("gone\n"), Absent: true},
		{Path: "sub/old.txt", Expect: hashOf("old\n"), Absent: true},
		{Path: "never.txt", Absent: true},
	}
}

func TestRestore(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteTree(t, dir, restoreTree())
	res, err := Restore(context.Background(), openRoot(t, dir), restoreStates(), []string{"sub", "n1"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := testutil.Tree(t, dir)
	want := map[string]string{
		".":             got["."],
		"a.txt":         fmt.Sprintf("file %v %q", fs.FileMode(0o640), "A\r\nb"),
		"keep.txt":      fmt.Sprintf("file %v %q", fs.FileMode(0o644), "keep"),
		"n1":            fmt.Sprintf("dir %v", fs.ModeDir|0o755),
		"n1/n2":         fmt.Sprintf("dir %v", fs.ModeDir|0o755),
		"n1/n2/new.txt": fmt.Sprintf("file %v %q", fs.FileMode(0o700), "new\n"),
	}
	diffSnapshots(t, want, got)
	var actions []string
	for _, f := range res.Files {
		actions = append(actions, f.Action+" "+f.Path)
	}
	if want := []string{"update a.txt", "add n1/n2/new.txt", "delete gone.txt", "delete sub/old.txt"}; !reflect.DeepEqual(actions, want) {
		t.Errorf("actions = %q, want %q", actions, want)
	}
	if want := []string{"n1", "n1/n2"}; !reflect.DeepEqual(res.CreatedDirs, want) {
		t.Errorf("CreatedDirs = %q, want %q", res.CreatedDirs, want)
	}
	// n1 is not empty: it stays.
	if want := []string{"sub"}; !reflect.DeepEqual(res.RemovedDirs, want) {
		t.Errorf("RemovedDirs = %q, want %q", res.RemovedDirs, want)
	}
	a := res.Files[0]
	if a.Before != hashOf("a\r\nb\r\n") || a.After != hashOf("A\r\nb") || a.BeforeMode != 0o755 || a.AfterMode != 0o640 || a.Added != 2 || a.Removed != 2 {
		t.Errorf("a.txt result = %+v", a)
	}
}

func TestRestoreConflictListsEveryDriftedPath(t *testing.T) {
	dir := t.TempDir()
	tree := restoreTree()
	tree["a.txt"] = testutil.File{Content: "theirs\n", Mode: 0o755}
	tree["n1/n2/new.txt"] = testutil.File{Content: "also theirs\n"}
	delete(tree, "gone.txt")
	testutil.WriteTree(t, dir, tree)
	before := testutil.Tree(t, dir)
	_, err := Restore(context.Background(), openRoot(t, dir), restoreStates(), []string{"sub"}, Options{})
	var rc *RestoreConflict
	if !errors.As(err, &rc) || !errors.Is(err, ErrUndoConflict) {
		t.Fatalf("Restore error = %v, want a *RestoreConflict", err)
	}
	want := []VersionConflict{
		{Path: "a.txt", Expected: hashOf("a\r\nb\r\n"), Actual: hashOf("theirs\n")},
		{Path: "n1/n2/new.txt", Actual: hashOf("also theirs\n")},
		{Path: "gone.txt", Expected: hashOf("gone\n")},
	}
	if !reflect.DeepEqual(rc.Files, want) {
		t.Errorf("conflicts (-want +got)\n- %+v\n+ %+v", want, rc.Files)
	}
	if errors.Is(err, ErrVersionConflict) {
		t.Errorf("a restore conflict must map to undo_conflict only: %v", err)
	}
	diffSnapshots(t, before, testutil.Tree(t, dir))
}

func TestRestoreFaultInjection(t *testing.T) {
	injected := errors.New("injected fault")
	const steps = 4 // 2 writes + 2 removals
	type tc struct {
		name  string
		hooks *Hooks
	}
	var tests []tc
	for i := 0; i < steps; i++ {
		tests = append(tests, tc{fmt.Sprintf("before rename %d", i), &Hooks{BeforeRename: func(j int, _ string) error {
			if j == i {
				return injected
			}
			return nil
		}}})
	}
	tests = append(tests,
		tc{"after stage", &Hooks{AfterStage: func() error { return injected }}},
		tc{"after commit", &Hooks{AfterCommit: func() error { return injected }}},
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			testutil.WriteTree(t, dir, restoreTree())
			before := testutil.Tree(t, dir)
			_, err := Restore(context.Background(), openRoot(t, dir), restoreStates(), []string{"sub"}, Options{Hooks: tt.hooks})
			if !errors.Is(err, injected) || errors.Is(err, ErrRollbackIncomplete) {
				t.Fatalf("Restore error = %v, want the injected fault, rolled back", err)
			}
			diffSnapshots(t, before, testutil.Tree(t, dir))
		})
	}
}

func TestRestoreConcurrentChangeDetected(t *testing.T) {
	for step, target := range []string{"a.txt", "n1/n2/new.txt", "gone.txt", "sub/old.txt"} {
		t.Run(target, func(t *testing.T) {
			dir := t.TempDir()
			testutil.WriteTree(t, dir, restoreTree())
			hooks := &Hooks{BeforeRename: func(i int, p string) error {
				if i == step {
					testutil.WriteTree(t, dir, map[string]testutil.File{p: {Content: "theirs\n"}})
				}
				return nil
			}}
			_, err := Restore(context.Background(), openRoot(t, dir), restoreStates(), nil, Options{Hooks: hooks})
			var rc *RestoreConflict
			if !errors.As(err, &rc) || len(rc.Files) != 1 || rc.Files[0].Path != target || rc.Files[0].Actual != hashOf("theirs\n") {
				t.Fatalf("Restore error = %v, want a conflict on %s", err, target)
			}
			if errors.Is(err, ErrRollbackIncomplete) {
				t.Errorf("rollback incomplete: %v", err)
			}
			want := restoreTree()
			want[target] = testutil.File{Content: "theirs\n", Mode: modeOf(t, dir, target).Perm()}
			wdir := t.TempDir()
			testutil.WriteTree(t, wdir, want)
			got := testutil.Tree(t, dir)
			// The other writer created n1/n2 for its file.
			delete(got, "n1")
			delete(got, "n1/n2")
			w := testutil.Tree(t, wdir)
			delete(w, "n1")
			delete(w, "n1/n2")
			diffSnapshots(t, w, got)
		})
	}
}

func TestRestoreModeOnlyAndHardlink(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	testutil.WriteTree(t, outside, map[string]testutil.File{"shared.txt": {Content: "x\n"}})
	if err := os.Link(filepath.Join(outside, "shared.txt"), filepath.Join(dir, "linked.txt")); err != nil {
		t.Skipf("hard links unsupported: %v", err)
	}
	states := []FileState{{Path: "linked.txt", Expect: hashOf("x\n"), Content: []byte("x\n"), Mode: 0o751}}
	res, err := Restore(context.Background(), openRoot(t, dir), states, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 1 || res.Files[0].Action != ActionUpdate {
		t.Errorf("files = %+v", res.Files)
	}
	if m := modeOf(t, dir, "linked.txt"); m != 0o751 {
		t.Errorf("mode = %v, want 0751", m)
	}
	if m := modeOf(t, outside, "shared.txt"); m != 0o644 {
		t.Errorf("the other link's mode changed: %v", m)
	}
	states = []FileState{{Path: "linked.txt", Expect: hashOf("x\n"), Content: []byte("y"), Mode: 0o751}}
	if _, err := Restore(context.Background(), openRoot(t, dir), states, nil, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, outside, "shared.txt"); got != "x\n" {
		t.Errorf("written in place through a hard link: %q", got)
	}
}

func TestRestoreRefusals(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	testutil.WriteTree(t, dir, map[string]testutil.File{"a.txt": {Content: "a\n"}})
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		states []FileState
		dirs   []string
		want   error
	}{
		{"sensitive", []FileState{{Path: "cfg/.env", Content: []byte("K=v\n"), Mode: 0o600}}, nil, project.ErrPathDenied},
		{"escape", []FileState{{Path: "../x", Content: []byte("x")}}, nil, project.ErrPathDenied},
		{"symlink out", []FileState{{Path: "out/x", Content: []byte("x")}}, nil, project.ErrPathDenied},
		{"root", []FileState{{Path: ".", Absent: true}}, nil, project.ErrPathDenied},
		{"duplicate", []FileState{{Path: "a.txt", Absent: true, Expect: hashOf("a\n")}, {Path: "./a.txt", Absent: true, Expect: hashOf("a\n")}}, nil, ErrInvalidPatch},
		{"empty", nil, nil, ErrInvalidPatch},
		{"bad dir", []FileState{{Path: "a.txt", Absent: true, Expect: hashOf("a\n")}}, []string{"/etc"}, project.ErrPathDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := testutil.Tree(t, dir)
			_, err := Restore(context.Background(), openRoot(t, dir), tt.states, tt.dirs, Options{})
			if !errors.Is(err, tt.want) {
				t.Fatalf("Restore error = %v, want %v", err, tt.want)
			}
			diffSnapshots(t, before, testutil.Tree(t, dir))
		})
	}
}

func TestRestoreRemoveDirsOnlyRealEmptyDirs(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteTree(t, dir, map[string]testutil.File{"d1/d2/f.txt": {Content: "f\n"}, "other/x.txt": {Content: "x\n"}, "target/y.txt": {Content: "y\n"}})
	if err := os.Mkdir(filepath.Join(dir, "target", "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("target", filepath.Join(dir, "via")); err != nil {
		t.Fatal(err)
	}
	states := []FileState{{Path: "d1/d2/f.txt", Expect: hashOf("f\n"), Absent: true}}
	res, err := Restore(context.Background(), openRoot(t, dir), states, []string{"d1", "d1/d2", "other", "via/empty", "missing"}, Options{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"d1/d2", "d1"}; !reflect.DeepEqual(res.RemovedDirs, want) {
		t.Errorf("RemovedDirs = %q, want %q", res.RemovedDirs, want)
	}
	got := testutil.Tree(t, dir)
	for _, p := range []string{"other/x.txt", "target/empty", "via"} {
		if _, ok := got[p]; !ok {
			t.Errorf("%s was removed", p)
		}
	}
	if _, ok := got["d1"]; ok {
		t.Errorf("d1 stayed: %v", got)
	}
}

func TestApplyReportsCreatedDirs(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteTree(t, dir, map[string]testutil.File{"x/keep.txt": {Content: "k\n"}})
	res, err := apply(t, dir, "*** Begin Patch\n*** Add File: x/y/z/new.txt\n+n\n*** Add File: top.txt\n+t\n*** End Patch", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"x/y", "x/y/z"}; !reflect.DeepEqual(res.CreatedDirs, want) {
		t.Errorf("CreatedDirs = %q, want %q", res.CreatedDirs, want)
	}
}

// TestRestoreRefusesRepositoryMetadata: an undo whose target is, or has
// become since the patch, repository metadata is refused with
// repository_metadata before anything is staged, whatever AllowSensitive
// says, and the repository is byte-identical afterwards. A patch deleted
// d/post-checkout and e/config from real directories; the owner's
// checkout then made d a link to .git/hooks, e a link to .git, and gd the
// Git directory a sub/.git file names: restoring those files would plant a
// hook or rewrite the config the owner's git runs.
func TestRestoreRefusesRepositoryMetadata(t *testing.T) {
	hook := []byte("#!/bin/sh\ntouch PWNED\n")
	tests := []struct {
		name   string
		states func(config []byte) []FileState
	}{
		{"link to .git/hooks", func([]byte) []FileState {
			return []FileState{{Path: "d/post-checkout", Content: hook, Mode: 0o755}}
		}},
		{"link to .git, rewrite", func(config []byte) []FileState {
			fsmonitor := append(append([]byte{}, config...), "[core]\n\tfsmonitor = \"touch PWNED\"\n"...)
			return []FileState{{Path: "e/config", Expect: HashContent(config), Content: fsmonitor, Mode: 0o644}}
		}},
		{"link to .git, remove", func(config []byte) []FileState {
			return []FileState{{Path: "e/config", Expect: HashContent(config), Absent: true}}
		}},
		{"Git directory by another name", func([]byte) []FileState {
			return []FileState{{Path: "gd/hooks/post-checkout", Content: hook, Mode: 0o755}}
		}},
		{".git/hooks", func([]byte) []FileState {
			return []FileState{{Path: ".git/hooks/post-checkout", Content: hook, Mode: 0o755}}
		}},
		{".GIT/config", func(config []byte) []FileState {
			return []FileState{{Path: ".GIT/config", Expect: HashContent(config), Absent: true}}
		}},
		{"a .git file", func([]byte) []FileState {
			return []FileState{{Path: "sub/.git", Expect: hashOf("gitdir: ../gd\n"), Content: []byte("gitdir: /elsewhere\n"), Mode: 0o644}}
		}},
		{"after an allowed file", func([]byte) []FileState {
			return []FileState{
				{Path: "a.txt", Expect: hashOf("a\n"), Content: []byte("A\n"), Mode: 0o644},
				{Path: "d/post-checkout", Content: hook, Mode: 0o755},
			}
		}},
	}
	for _, tt := range tests {
		for _, allow := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/allowSensitive=%v", tt.name, allow), func(t *testing.T) {
				dir := metadataRepo(t)
				config, err := os.ReadFile(filepath.Join(dir, ".git", "config"))
				if err != nil {
					t.Fatal(err)
				}
				before := testutil.Tree(t, dir)
				_, err = Restore(context.Background(), openRoot(t, dir), tt.states(config), nil, Options{AllowSensitive: allow})
				if pe, ok := errors.AsType[*project.PathError](err); !ok || pe.Reason != project.ReasonRepository || !errors.Is(err, project.ErrPathDenied) {
					t.Errorf("Restore error = %v, want path_denied (repository_metadata)", err)
				}
				diffSnapshots(t, before, testutil.Tree(t, dir))
			})
		}
	}
}

// metadataRepo returns a repository whose d links to .git/hooks, e to
// .git, and whose gd is a bare Git directory that sub/.git names.
func metadataRepo(t *testing.T) string {
	t.Helper()
	dir := testutil.NewRepo(t)
	testutil.WriteTree(t, dir, map[string]testutil.File{"a.txt": {Content: "a\n"}, "sub/.git": {Content: "gitdir: ../gd\n"}})
	testutil.Git(t, dir, "init", "-q", "--bare", "gd")
	for link, target := range map[string]string{"d": ".git/hooks", "e": ".git"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRestoreNeverRemovesRepositoryDirs: a directory to remove once
// committed that lies inside a Git directory (an empty refs/tags, as a
// new repository has) refuses the call before anything is written.
func TestRestoreNeverRemovesRepositoryDirs(t *testing.T) {
	for _, d := range []string{".git/refs/tags", ".GIT/branches", "e/refs/tags", "gd/refs/tags", "gd/branches"} {
		t.Run(d, func(t *testing.T) {
			dir := metadataRepo(t)
			before := testutil.Tree(t, dir)
			states := []FileState{{Path: "a.txt", Expect: hashOf("a\n"), Content: []byte("A\n"), Mode: 0o644}}
			_, err := Restore(context.Background(), openRoot(t, dir), states, []string{d}, Options{})
			if pe, ok := errors.AsType[*project.PathError](err); !ok || pe.Reason != project.ReasonRepository || !errors.Is(err, project.ErrPathDenied) {
				t.Errorf("Restore error = %v, want path_denied (repository_metadata)", err)
			}
			diffSnapshots(t, before, testutil.Tree(t, dir))
		})
	}
}

// TestRestoreModeOrTypeChangeBeforeRename: the re-check just before each
// rename compares what the first look compared. A chmod, or a swap for a
// link to a file of the same content, between the two is a conflict and
// rolled back; it used to be reset (the chmod) or refused as a special
// file (the link).
func TestRestoreModeOrTypeChangeBeforeRename(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(p string) error
	}{
		{"chmod 0600", func(p string) error { return os.Chmod(p, 0o600) }},
		{"set-user-ID", func(p string) error { return os.Chmod(p, 0o755|os.ModeSetuid) }},
		{"link", func(p string) error {
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.Symlink("twin.txt", p)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			testutil.WriteTree(t, dir, map[string]testutil.File{"a.txt": {Content: "a\n", Mode: 0o755}, "twin.txt": {Content: "a\n"}})
			var changed map[string]string
			hooks := &Hooks{BeforeRename: func(int, string) error {
				if err := tt.change(filepath.Join(dir, "a.txt")); err != nil {
					t.Fatal(err)
				}
				changed = testutil.Tree(t, dir)
				for name := range changed {
					if strings.HasSuffix(name, ".tmp") { // the staged content, removed by the rollback
						delete(changed, name)
					}
				}
				return nil
			}}
			states := []FileState{{Path: "a.txt", Expect: hashOf("a\n"), ExpectMode: 0o755, CheckMode: true, Content: []byte("A\n"), Mode: 0o644}}
			_, err := Restore(context.Background(), openRoot(t, dir), states, nil, Options{Hooks: hooks})
			var rc *RestoreConflict
			if !errors.As(err, &rc) || !reflect.DeepEqual(rc.Paths(), []string{"a.txt"}) || errors.Is(err, ErrRollbackIncomplete) {
				t.Fatalf("Restore error = %v, want a conflict on a.txt", err)
			}
			diffSnapshots(t, changed, testutil.Tree(t, dir))
		})
	}
}
