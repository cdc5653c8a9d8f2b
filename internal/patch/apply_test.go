package patch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/testutil"
)

func diffSnapshots(t *testing.T, want, got map[string]string) {
	t.Helper()
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if want[k] != got[k] {
			t.Errorf("%s: (-want +got)\n- %s\n+ %s", k, want[k], got[k])
		}
	}
}

func openRoot(t *testing.T, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// preFor reads the current version of each path, as read_files would.
func preFor(t *testing.T, dir string, paths ...string) map[string]Precondition {
	t.Helper()
	pre := map[string]Precondition{}
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			pre[p] = Precondition{Set: true, MustNotExist: true}
		case err != nil: // a directory, say: Apply refuses it before comparing
			pre[p] = Precondition{Set: true, ContentHash: "sha256:unreadable"}
		default:
			pre[p] = Precondition{Set: true, ContentHash: HashContent(b)}
		}
	}
	return pre
}

func mustParse(t *testing.T, text string) *Patch {
	t.Helper()
	p, err := Parse(text)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

func apply(t *testing.T, dir, text string, opts Options) (*Result, error) {
	t.Helper()
	p := mustParse(t, text)
	return Apply(context.Background(), openRoot(t, dir), p, preFor(t, dir, p.Paths()...), opts)
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func modeOf(t *testing.T, dir, name string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

const multiPatch = `*** Begin Patch
*** Add File: new/deep/file.txt
+hello
+world
*** Update File: a.txt
@@
 one
-two
+TWO
 three
*** Update File: old/name.txt
*** Move to: renamed/dir/name.txt
@@
-x
+y
*** Delete File: gone.txt
*** Update File: bin/run.sh
@@
-echo hi
+echo hello
*** Update File: win.txt
@@
 a
+b
*** Update File: tail.txt
@@
-last
+LAST
*** End Patch
`

func multiTree() map[string]testutil.File {
	return map[string]testutil.File{
		"a.txt":        {Content: "one\ntwo\nthree\n"},
		"old/name.txt": {Content: "x\n", Mode: 0o600},
		"old/keep.txt": {Content: "keep\n"},
		"gone.txt":     {Content: "bye\n"},
		"bin/run.sh":   {Content: "#!/bin/sh\necho hi\n", Mode: 0o755},
		"win.txt":      {Content: "a\r\nc\r\n"},
		"tail.txt":     {Content: "first\nlast"},
	}
}

func TestApplyMultiFile(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteTree(t, dir, multiTree())
	before := testutil.Tree(t, dir)
	res, err := apply(t, dir, multiPatch, Options{})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}

	want := testutil.Tree(t, dir) // then check the differences from before
	wantFiles := map[string]string{
		"new/deep/file.txt":    "hello\nworld\n",
		"a.txt":                "one\nTWO\nthree\n",
		"renamed/dir/name.txt": "y\n",
		"bin/run.sh":           "#!/bin/sh\necho hello\n",
		"win.txt":              "a\r\nb\r\nc\r\n",
		"tail.txt":             "first\nLAST",
		"old/keep.txt":         "keep\n",
	}
	for name, content := range wantFiles {
		if got := readFile(t, dir, name); got != content {
			t.Errorf("%s = %q, want %q", name, got, content)
		}
	}
	for _, gone := range []string{"gone.txt", "old/name.txt"} {
		if _, ok := want[gone]; ok {
			t.Errorf("%s still exists", gone)
		}
	}
	for name, mode := range map[string]fs.FileMode{"bin/run.sh": 0o755, "renamed/dir/name.txt": 0o600, "new/deep/file.txt": 0o644, "a.txt": 0o644} {
		if got := modeOf(t, dir, name).Perm(); got != mode {
			t.Errorf("mode of %s = %v, want %v", name, got, mode)
		}
	}
	if len(want) != len(before)+4 { // +new, new/deep, renamed, renamed/dir; -gone, -old/name; +file, +name
		t.Errorf("tree has %d entries, want %d: %v", len(want), len(before)+4, want)
	}

	type row struct {
		Path, Action, MovedFrom, Fuzz string
		Added, Removed                int
	}
	var got []row
	for _, f := range res.Files {
		got = append(got, row{f.Path, f.Action, f.MovedFrom, f.Fuzz, f.Added, f.Removed})
	}
	wantRows := []row{
		{"new/deep/file.txt", ActionAdd, "", "", 2, 0},
		{"a.txt", ActionUpdate, "", FuzzExact, 1, 1},
		{"renamed/dir/name.txt", ActionMove, "old/name.txt", FuzzExact, 1, 1},
		{"gone.txt", ActionDelete, "", "", 0, 1},
		{"bin/run.sh", ActionUpdate, "", FuzzExact, 1, 1},
		{"win.txt", ActionUpdate, "", FuzzExact, 1, 0},
		{"tail.txt", ActionUpdate, "", FuzzExact, 1, 1},
	}
	if !reflect.DeepEqual(got, wantRows) {
		t.Errorf("results:\n got %+v\nwant %+v", got, wantRows)
	}
	a := res.Files[1]
	if a.Before != HashContent([]byte("one\ntwo\nthree\n")) || a.After != HashContent([]byte("one\nTWO\nthree\n")) ||
		string(a.BeforeContent) != "one\ntwo\nthree\n" || string(a.AfterContent) != "one\nTWO\nthree\n" {
		t.Errorf("a.txt result hashes/contents wrong: %+v", a)
	}
	if d := res.Files[3]; d.After != "" || d.AfterContent != nil || string(d.BeforeContent) != "bye\n" {
		t.Errorf("delete result = %+v", d)
	}
	if res.Bytes == 0 {
		t.Error("Bytes = 0")
	}
	js, _ := json.Marshal(res.Files[2])
	if string(js) != `{"path":"renamed/dir/name.txt","action":"move","movedFrom":"old/name.txt","fuzz":"exact","added":1,"removed":1}` {
		t.Errorf("JSON = %s", js)
	}
}

func TestApplyPreconditions(t *testing.T) {
	files := map[string]testutil.File{"a": {Content: "a\n"}, "b": {Content: "b\n"}}
	text := "*** Begin Patch\n*** Update File: a\n@@\n-a\n+A\n*** Update File: b\n@@\n-b\n+B\n*** Add File: c\n+c\n*** End Patch"
	hashA, hashB := HashContent([]byte("a\n")), HashContent([]byte("b\n"))
	stale := HashContent([]byte("old\n"))
	tests := []struct {
		name    string
		pre     map[string]Precondition
		files   map[string]testutil.File
		want    error
		details any
	}{
		{
			name:    "second file stale",
			pre:     map[string]Precondition{"a": {Set: true, ContentHash: hashA}, "b": {Set: true, ContentHash: stale}, "c": {Set: true, MustNotExist: true}},
			want:    ErrVersionConflict,
			details: &VersionConflict{Path: "b", Expected: stale, Actual: hashB},
		},
		{
			name:    "must not exist but exists",
			files:   map[string]testutil.File{"c": {Content: "already\n"}},
			pre:     map[string]Precondition{"a": {Set: true, ContentHash: hashA}, "b": {Set: true, ContentHash: hashB}, "c": {Set: true, MustNotExist: true}},
			want:    ErrVersionConflict,
			details: &VersionConflict{Path: "c", Actual: HashContent([]byte("already\n"))},
		},
		{
			name:    "hash for a file that does not exist",
			pre:     map[string]Precondition{"a": {Set: true, ContentHash: hashA}, "b": {Set: true, ContentHash: hashB}, "c": {Set: true, ContentHash: stale}},
			want:    ErrVersionConflict,
			details: &VersionConflict{Path: "c", Expected: stale},
		},
		{
			name:    "missing entries",
			pre:     map[string]Precondition{"a": {Set: true, ContentHash: hashA}, "c": {}},
			want:    ErrPreconditionMissing,
			details: &PreconditionMissingError{Paths: []string{"b", "c"}},
		},
		{
			name:    "empty hash is missing",
			pre:     map[string]Precondition{"a": {Set: true, ContentHash: hashA}, "b": {Set: true}, "c": {Set: true, MustNotExist: true}},
			want:    ErrPreconditionMissing,
			details: &PreconditionMissingError{Paths: []string{"b"}},
		},
		{
			name:  "update of a missing file",
			files: map[string]testutil.File{},
			pre:   map[string]Precondition{"./a": {Set: true, ContentHash: hashA}, "b": {Set: true, ContentHash: hashB}, "c": {Set: true, MustNotExist: true}},
			want:  nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			testutil.WriteTree(t, dir, files)
			testutil.WriteTree(t, dir, tt.files)
			before := testutil.Tree(t, dir)
			res, err := Apply(context.Background(), openRoot(t, dir), mustParse(t, text), tt.pre, Options{})
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Apply: %v", err)
				}
				if res.Files[0].Path != "a" {
					t.Errorf("results = %+v", res.Files)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Apply error = %v, want %v", err, tt.want)
			}
			switch d := tt.details.(type) {
			case *VersionConflict:
				var got *VersionConflict
				if !errors.As(err, &got) || *got != *d {
					t.Errorf("conflict = %+v, want %+v", got, d)
				}
			case *PreconditionMissingError:
				var got *PreconditionMissingError
				if !errors.As(err, &got) || !reflect.DeepEqual(got.Paths, d.Paths) {
					t.Errorf("missing = %+v, want %+v", got, d)
				}
			}
			diffSnapshots(t, before, testutil.Tree(t, dir))
		})
	}
}

func TestApplyTargetErrors(t *testing.T) {
	outside := t.TempDir()
	tests := []struct {
		name  string
		files map[string]testutil.File
		setup func(t *testing.T, dir string)
		patch string
		opts  Options
		want  error
	}{
		{"binary target", map[string]testutil.File{"b.bin": {Content: "a\x00b\n"}}, nil, "*** Update File: b.bin\n@@\n-a\n+b\n", Options{}, ErrBinaryTarget},
		{"invalid utf-8 target", map[string]testutil.File{"l1.txt": {Content: "caf\xe9\n"}}, nil, "*** Update File: l1.txt\n@@\n-x\n+y\n", Options{}, ErrBinaryTarget},
		{"update missing file", nil, nil, "*** Update File: nope.txt\n@@\n-x\n+y\n", Options{}, ErrTargetMissing},
		{"delete missing file", nil, nil, "*** Delete File: nope.txt\n", Options{}, ErrTargetMissing},
		{"sensitive target", map[string]testutil.File{".env": {Content: "A=1\n"}}, nil, "*** Update File: .env\n@@\n-A=1\n+A=2\n", Options{}, project.ErrPathDenied},
		{"sensitive move target", map[string]testutil.File{"x": {Content: "k\n"}}, nil, "*** Update File: x\n*** Move to: .ssh/id_rsa\n", Options{}, project.ErrPathDenied},
		{"directory target", nil, func(t *testing.T, dir string) { os.Mkdir(filepath.Join(dir, "d"), 0o755) }, "*** Delete File: d\n", Options{}, project.ErrPathDenied},
		{"symlink target inside", map[string]testutil.File{"real": {Content: "x\n"}}, func(t *testing.T, dir string) { os.Symlink("real", filepath.Join(dir, "link")) }, "*** Update File: link\n@@\n-x\n+y\n", Options{}, project.ErrPathDenied},
		{"dangling symlink leading out", nil, func(t *testing.T, dir string) {
			os.Symlink(filepath.Join(outside, "new.txt"), filepath.Join(dir, "out.txt"))
		}, "*** Add File: out.txt\n+pwned\n", Options{}, project.ErrPathDenied},
		{"directory symlink leading out", nil, func(t *testing.T, dir string) {
			os.Symlink(outside, filepath.Join(dir, "escape"))
		}, "*** Add File: escape/new.txt\n+pwned\n", Options{}, project.ErrPathDenied},
		{"parent is a file", map[string]testutil.File{"f": {Content: "x\n"}}, nil, "*** Add File: f/g.txt\n+x\n", Options{}, syscall.ENOTDIR},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			testutil.WriteTree(t, dir, tt.files)
			if tt.setup != nil {
				tt.setup(t, dir)
			}
			before := testutil.Tree(t, dir)
			_, err := apply(t, dir, "*** Begin Patch\n"+tt.patch+"*** End Patch", tt.opts)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Apply error = %v, want %v", err, tt.want)
			}
			if strings.Contains(err.Error(), dir) || strings.Contains(err.Error(), outside) {
				t.Errorf("error %q reveals a host path", err)
			}
			diffSnapshots(t, before, testutil.Tree(t, dir))
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Errorf("something was written outside: %v", entries)
			}
		})
	}
}

func TestApplyAllowSensitive(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteTree(t, dir, map[string]testutil.File{".env": {Content: "A=1\n"}})
	if _, err := apply(t, dir, "*** Begin Patch\n*** Update File: .env\n@@\n-A=1\n+A=2\n*** End Patch", Options{AllowSensitive: true}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, ".env"); got != "A=2\n" {
		t.Errorf(".env = %q", got)
	}
}

func TestApplyMoveKeepsModeAndOverwrites(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteTree(t, dir, map[string]testutil.File{"run.sh": {Content: "echo 1\n", Mode: 0o750}, "dst.sh": {Content: "old\n", Mode: 0o644}})
	res, err := apply(t, dir, "*** Begin Patch\n*** Update File: run.sh\n*** Move to: dst.sh\n@@\n-echo 1\n+echo 2\n*** End Patch", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, "dst.sh"); got != "echo 2\n" {
		t.Errorf("dst.sh = %q", got)
	}
	if m := modeOf(t, dir, "dst.sh").Perm(); m != 0o750 {
		t.Errorf("mode = %v", m)
	}
	if _, err := os.Stat(filepath.Join(dir, "run.sh")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("source still exists: %v", err)
	}
	if f := res.Files[0]; f.Replaced != HashContent([]byte("old\n")) || string(f.ReplacedContent) != "old\n" {
		t.Errorf("Replaced = %q", f.Replaced)
	}
}

// faultPatch touches every kind of commit step: a replace, a create in
// new directories, a move over an existing file, a delete.
const faultPatch = `*** Begin Patch
*** Update File: a.txt
@@
-a
+A
*** Add File: n1/n2/n3/new.txt
+new
*** Update File: src/m.txt
*** Move to: dst/m.txt
@@
-m
+M
*** Delete File: del.txt
*** End Patch`

func faultTree() map[string]testutil.File {
	return map[string]testutil.File{
		"a.txt":     {Content: "a\n", Mode: 0o755},
		"src/m.txt": {Content: "m\n", Mode: 0o600},
		"dst/m.txt": {Content: "old m\n"},
		"del.txt":   {Content: "del\r\n"},
	}
}

func TestApplyFaultInjection(t *testing.T) {
	injected := errors.New("injected fault")
	const steps = 5 // 3 writes + 2 removals
	type tc struct {
		name  string
		hooks func(t *testing.T, dir string) *Hooks
	}
	var tests []tc
	for i := 0; i < steps; i++ {
		tests = append(tests, tc{fmt.Sprintf("before rename %d", i), func(*testing.T, string) *Hooks {
			return &Hooks{BeforeRename: func(j int, _ string) error {
				if j == i {
					return injected
				}
				return nil
			}}
		}})
	}
	tests = append(tests,
		tc{"after stage", func(*testing.T, string) *Hooks { return &Hooks{AfterStage: func() error { return injected }} }},
		tc{"after commit", func(*testing.T, string) *Hooks { return &Hooks{AfterCommit: func() error { return injected }} }},
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			testutil.WriteTree(t, dir, faultTree())
			before := testutil.Tree(t, dir)
			_, err := apply(t, dir, faultPatch, Options{Hooks: tt.hooks(t, dir)})
			if !errors.Is(err, injected) {
				t.Fatalf("Apply error = %v, want the injected fault", err)
			}
			if errors.Is(err, ErrRollbackIncomplete) {
				t.Errorf("rollback incomplete: %v", err)
			}
			diffSnapshots(t, before, testutil.Tree(t, dir))
		})
	}
	t.Run("all steps pass", func(t *testing.T) {
		dir := t.TempDir()
		testutil.WriteTree(t, dir, faultTree())
		var seen []string
		_, err := apply(t, dir, faultPatch, Options{Hooks: &Hooks{BeforeRename: func(i int, p string) error {
			seen = append(seen, fmt.Sprintf("%d:%s", i, p))
			return nil
		}}})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"0:a.txt", "1:n1/n2/n3/new.txt", "2:dst/m.txt", "3:src/m.txt", "4:del.txt"}
		if !reflect.DeepEqual(seen, want) {
			t.Errorf("steps = %v, want %v", seen, want)
		}
		got := testutil.Tree(t, dir)
		for _, p := range []string{"src/m.txt", "del.txt"} {
			if _, ok := got[p]; ok {
				t.Errorf("%s survived", p)
			}
		}
		if len(got) != 9 { // . a.txt src dst dst/m.txt n1 n1/n2 n1/n2/n3 new.txt
			t.Errorf("leftovers in %v", got)
		}
	})
}

func TestApplyConcurrentChangeDetected(t *testing.T) {
	for step, target := range []string{"a.txt", "n1/n2/n3/new.txt", "dst/m.txt", "src/m.txt", "del.txt"} {
		t.Run(target, func(t *testing.T) {
			dir := t.TempDir()
			testutil.WriteTree(t, dir, faultTree())
			before := testutil.Tree(t, dir)
			hooks := &Hooks{BeforeRename: func(i int, p string) error {
				if i == step {
					// Another writer changes the file after validation.
					testutil.WriteTree(t, dir, map[string]testutil.File{p: {Content: "theirs\n"}})
				}
				return nil
			}}
			_, err := apply(t, dir, faultPatch, Options{Hooks: hooks})
			var vc *VersionConflict
			if !errors.As(err, &vc) || vc.Path != target || vc.Actual != HashContent([]byte("theirs\n")) {
				t.Fatalf("Apply error = %v, want a conflict on %s", err, target)
			}
			if errors.Is(err, ErrRollbackIncomplete) {
				t.Errorf("rollback incomplete: %v", err)
			}
			// Everything is back, except the other writer's change.
			after := testutil.Tree(t, dir)
			if got := readFile(t, dir, target); got != "theirs\n" {
				t.Errorf("the other writer's change was lost: %q", got)
			}
			delete(after, target)
			delete(before, target)
			for _, d := range []string{"n1", "n1/n2", "n1/n2/n3"} { // kept when the other writer created new.txt
				if strings.HasPrefix(target, d+"/") {
					delete(after, d)
				}
			}
			diffSnapshots(t, before, after)
		})
	}
}

func TestApplyParentSwappedForOutsideSymlink(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	testutil.WriteTree(t, dir, map[string]testutil.File{"top.txt": {Content: "top\n"}, "sub/a.txt": {Content: "a\n"}})
	testutil.WriteTree(t, outside, map[string]testutil.File{"a.txt": {Content: "a\n"}})
	outsideBefore := testutil.Tree(t, outside)
	text := "*** Begin Patch\n*** Update File: top.txt\n@@\n-top\n+TOP\n*** Update File: sub/a.txt\n@@\n-a\n+A\n*** Add File: sub/b.txt\n+b\n*** End Patch"
	p := mustParse(t, text)
	pre := preFor(t, dir, p.Paths()...)
	hooks := &Hooks{BeforeRename: func(i int, _ string) error {
		if i == 1 { // top.txt is committed; swap sub before sub/a.txt
			if err := os.Rename(filepath.Join(dir, "sub"), filepath.Join(dir, "sub.moved")); err != nil {
				return err
			}
			return os.Symlink(outside, filepath.Join(dir, "sub"))
		}
		return nil
	}}
	_, err := Apply(context.Background(), openRoot(t, dir), p, pre, Options{Hooks: hooks})
	if !errors.Is(err, project.ErrPathDenied) {
		t.Fatalf("Apply error = %v, want ErrPathDenied", err)
	}
	if got := readFile(t, dir, "top.txt"); got != "top\n" {
		t.Errorf("top.txt not rolled back: %q", got)
	}
	diffSnapshots(t, outsideBefore, testutil.Tree(t, outside))
}

func TestApplyHardlinkToOutsideInode(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	testutil.WriteTree(t, outside, map[string]testutil.File{"secret.txt": {Content: "x\n"}})
	if err := os.Link(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "linked.txt")); err != nil {
		t.Skipf("hard links unsupported: %v", err)
	}
	if _, err := apply(t, dir, "*** Begin Patch\n*** Update File: linked.txt\n@@\n-x\n+changed\n*** End Patch", Options{}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, outside, "secret.txt"); got != "x\n" {
		t.Errorf("outside file changed: %q", got)
	}
	if got := readFile(t, dir, "linked.txt"); got != "changed\n" {
		t.Errorf("linked.txt = %q", got)
	}
}

func TestApplyHeredocAndRangeHeader(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteTree(t, dir, map[string]testutil.File{"f.txt": {Content: "a\nb\n"}})
	text := "apply_patch <<'EOF'\r\n*** Begin Patch\r\n*** Update File: f.txt\r\n@@ -1,1 +1,2000000000 @@\r\n a\r\n-b\r\n+c\r\n*** End Patch\r\nEOF\r\n"
	if _, err := apply(t, dir, text, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, "f.txt"); got != "a\nc\n" {
		t.Errorf("f.txt = %q", got)
	}
}

func TestApplyNoopUpdateWritesNothing(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteTree(t, dir, map[string]testutil.File{"f.txt": {Content: "a\n"}})
	fi1, _ := os.Stat(filepath.Join(dir, "f.txt"))
	res, err := apply(t, dir, "*** Begin Patch\n*** Update File: f.txt\n@@\n-a\n+a\n*** End Patch", Options{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	fi2, _ := os.Stat(filepath.Join(dir, "f.txt"))
	if !os.SameFile(fi1, fi2) || res.Bytes != 0 {
		t.Errorf("a no-op update rewrote the file (bytes %d)", res.Bytes)
	}
}

func TestApplyCancelled(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteTree(t, dir, map[string]testutil.File{"f.txt": {Content: "a\n"}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := mustParse(t, "*** Begin Patch\n*** Update File: f.txt\n@@\n-a\n+b\n*** End Patch")
	if _, err := Apply(ctx, openRoot(t, dir), p, preFor(t, dir, "f.txt"), Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Apply error = %v", err)
	}
	if got := readFile(t, dir, "f.txt"); got != "a\n" {
		t.Errorf("f.txt = %q", got)
	}
}

func TestApplyFuzzAndAmbiguity(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteTree(t, dir, map[string]testutil.File{
		"ws.go":  {Content: "func f() {\n\treturn  x\n}\n"},
		"amb.go": {Content: "a\tb\nc\na  b\n"},
	})
	res, err := apply(t, dir, "*** Begin Patch\n*** Update File: ws.go\n@@\n     return x\n+    // done\n*** End Patch", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f := res.Files[0]; f.Fuzz != FuzzWhitespace || f.Added != 1 {
		t.Errorf("result = %+v, want whitespace fuzz", f)
	}
	if got := readFile(t, dir, "ws.go"); got != "func f() {\n\treturn  x\n    // done\n}\n" {
		t.Errorf("ws.go = %q", got)
	}
	before := testutil.Tree(t, dir)
	_, err = apply(t, dir, "*** Begin Patch\n*** Update File: ws.go\n@@\n-}\n+} // end\n*** Update File: amb.go\n@@\n-a b\n+z\n*** End Patch", Options{})
	var he *HunkError
	if !errors.Is(err, ErrAmbiguous) || !errors.As(err, &he) || he.Path != "amb.go" || he.Line != 7 {
		t.Fatalf("Apply error = %v, want an ambiguous hunk in amb.go at patch line 7", err)
	}
	diffSnapshots(t, before, testutil.Tree(t, dir))
}

// rollbackPatch replaces, deletes and moves files whose exact bytes
// (CRLF, no final newline, empty) and modes (executable, 0777, 0600)
// a rollback must bring back from memory.
const rollbackPatch = `*** Begin Patch
*** Update File: crlf.sh
@@
-echo a
+echo b
*** Update File: noeol.txt
@@
-x
+X
*** Delete File: empty.txt
*** Delete File: del.bat
*** Update File: src/mv.sh
*** Move to: dst/over.sh
@@
-mv
+MV
*** Update File: src/mv2.txt
*** Move to: new/dir/mv2.txt
@@
-two
+TWO
*** Update File: linked.txt
@@
-x
+changed
*** Add File: add/new.txt
+new
*** End Patch`

func rollbackTree() map[string]testutil.File {
	return map[string]testutil.File{
		"crlf.sh":      {Content: "#!/bin/sh\r\necho a\r\n", Mode: 0o755},
		"noeol.txt":    {Content: "x\ny", Mode: 0o600},
		"empty.txt":    {Content: "", Mode: 0o640},
		"del.bat":      {Content: "del\r\nme\r\n", Mode: 0o700},
		"src/mv.sh":    {Content: "mv\r\n", Mode: 0o750},
		"src/mv2.txt":  {Content: "two\n", Mode: 0o777},
		"dst/over.sh":  {Content: "over\r\n", Mode: 0o604},
		"dst/keep.txt": {Content: "keep\n"},
	}
}

// TestApplyRollbackFromMemory fails the commit once every step is done
// (and at its last step) and checks that the rollback, which no longer
// has the originals on disk, restores every byte and mode, recreates the
// deleted files and the moved source, removes what the patch created,
// and leaves no staging name, record or write through a hard link.
func TestApplyRollbackFromMemory(t *testing.T) {
	injected := errors.New("injected fault")
	setup := func(t *testing.T) (dir, outside string) {
		dir, outside = t.TempDir(), t.TempDir()
		testutil.WriteTree(t, dir, rollbackTree())
		testutil.WriteTree(t, outside, map[string]testutil.File{"shared.txt": {Content: "x\n"}})
		if err := os.Link(filepath.Join(outside, "shared.txt"), filepath.Join(dir, "linked.txt")); err != nil {
			t.Skipf("hard links unsupported: %v", err)
		}
		return dir, outside
	}
	// The patch itself goes through.
	dir, _ := setup(t)
	if _, err := apply(t, dir, rollbackPatch, Options{}); err != nil {
		t.Fatal(err)
	}
	const steps = 10 // 6 writes (4 updates or move targets, a move to a new path, an add) + 4 removals
	tests := []struct {
		name    string
		hooks   *Hooks
		intents bool
	}{
		{"after commit", &Hooks{AfterCommit: func() error { return injected }}, false},
		{"after commit with intents", &Hooks{AfterCommit: func() error { return injected }}, true},
		{"before last step with intents", &Hooks{BeforeRename: func(i int, _ string) error {
			if i == steps-1 {
				return injected
			}
			return nil
		}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, outside := setup(t)
			before := testutil.Tree(t, dir)
			state := t.TempDir()
			opts := Options{Hooks: tt.hooks}
			if tt.intents {
				opts.Intents = openIntents(t, state)
			}
			_, err := apply(t, dir, rollbackPatch, opts)
			if !errors.Is(err, injected) || errors.Is(err, ErrRollbackIncomplete) {
				t.Fatalf("Apply error = %v, want the injected fault, rolled back", err)
			}
			diffSnapshots(t, before, testutil.Tree(t, dir))
			if got := readFile(t, outside, "shared.txt"); got != "x\n" {
				t.Errorf("written through a hard link: %q", got)
			}
			if r := records(t, state); len(r) != 0 {
				t.Errorf("records left: %v", r)
			}
		})
	}
}

// openFDs counts this process's open descriptors, or skips the test
// where /proc is not there.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// TestApplyClosesHeldFiles: the originals a commit keeps open, so that
// freeing them happens after the call, are all closed soon after, also
// after a rollback; past maxHeld a file is closed at once.
func TestApplyClosesHeldFiles(t *testing.T) {
	injected := errors.New("injected fault")
	for _, opts := range []Options{{}, {Hooks: &Hooks{AfterCommit: func() error { return injected }}}} {
		dir := t.TempDir()
		testutil.WriteTree(t, dir, faultTree())
		base := openFDs(t)
		if _, err := apply(t, dir, faultPatch, opts); err != nil && !errors.Is(err, injected) {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for openFDs(t) > base+1 { // +1: the Root apply opened, closed at cleanup
			if time.Now().After(deadline) {
				t.Fatalf("%d descriptors open, %d before", openFDs(t), base)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	tx := &tx{held: make([]*os.File, maxHeld)}
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	tx.hold(f)
	if err := f.Close(); !errors.Is(err, os.ErrClosed) || len(tx.held) != maxHeld {
		t.Errorf("past maxHeld: close = %v, %d held", err, len(tx.held))
	}
}
