package search

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// makeTree writes files (path → content) below a new directory and returns
// it. A content starting with "->" makes a symlink to the rest instead.
func makeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case strings.HasSuffix(name, "/"):
			err = os.MkdirAll(p, 0o755)
		case strings.HasPrefix(content, "->"):
			err = os.Symlink(content[2:], p)
		default:
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func openRoot(t testing.TB, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// run performs one op on dir with the given limits and returns its result.
func run(t testing.TB, dir string, limits Limits, op Op, allowSensitive bool) Result {
	t.Helper()
	res, err := New(limits).Run(context.Background(), openRoot(t, dir), []Op{op}, allowSensitive)
	if err != nil {
		t.Fatal(err)
	}
	return res[0]
}

func paths(r Result) []string {
	var out []string
	for _, e := range r.Entries {
		out = append(out, e.Path)
	}
	for _, m := range r.Matches {
		out = append(out, fmt.Sprintf("%s:%d", m.Path, m.Line))
	}
	return out
}

func TestLs(t *testing.T) {
	dir := makeTree(t, map[string]string{
		"a.txt": "hello", "a/b/c/d.txt": "x", "a/b/e.go": "x", "a.go/": "", "z/": "", "a0": "x",
	})
	for _, tc := range []struct {
		name string
		op   Op
		want []Entry
	}{
		{"depth 1", Op{Kind: "ls"}, []Entry{
			{Path: "a.go", Type: "dir"}, {Path: "a.txt", Type: "file", Size: 5}, {Path: "a", Type: "dir"},
			{Path: "a0", Type: "file", Size: 1}, {Path: "z", Type: "dir"},
		}},
		{"depth 2 below a", Op{Kind: "ls", Path: "a", Depth: 2}, []Entry{
			{Path: "a/b", Type: "dir"}, {Path: "a/b/c", Type: "dir"}, {Path: "a/b/e.go", Type: "file", Size: 1},
		}},
		{"unlimited-ish depth, limit", Op{Kind: "ls", Path: "./a/", Depth: 9, Limit: 3}, []Entry{
			{Path: "a/b", Type: "dir"}, {Path: "a/b/c", Type: "dir"}, {Path: "a/b/c/d.txt", Type: "file", Size: 1},
		}},
		{"a file lists itself", Op{Kind: "ls", Path: "a/b/e.go"}, []Entry{{Path: "a/b/e.go", Type: "file", Size: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := run(t, dir, Limits{}, tc.op, false)
			if got.Error != nil {
				t.Fatal(got.Error)
			}
			if diff := cmp.Diff(tc.want, got.Entries); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
			if got.Truncated != (tc.op.Limit == 3) {
				t.Errorf("truncated = %v", got.Truncated)
			}
		})
	}
}

func TestGlob(t *testing.T) {
	dir := makeTree(t, map[string]string{
		"main.go": "", "cmd/x/main.go": "", "internal/a/a.go": "", "internal/a/a_test.go": "", "internal/a/README.md": "",
		"internal/b.go/": "", "docs/Guide.GO": "", ".hidden/h.go": "", "link.go": "->main.go",
	})
	for _, tc := range []struct {
		name string
		op   Op
		want []string
		code string
	}{
		{"all go files", Op{Kind: "glob", Pattern: "**/*.go"}, []string{
			".hidden/h.go", "cmd/x/main.go", "internal/a/a.go", "internal/a/a_test.go", "internal/b.go", "link.go", "main.go",
		}, ""},
		{"static prefix", Op{Kind: "glob", Pattern: "internal/**/*_test.go"}, []string{"internal/a/a_test.go"}, ""},
		{"relative to path", Op{Kind: "glob", Path: "internal", Pattern: "*/*.go"}, []string{"internal/a/a.go", "internal/a/a_test.go"}, ""},
		{"one level", Op{Kind: "glob", Pattern: "*"}, []string{".hidden", "cmd", "docs", "internal", "link.go", "main.go"}, ""},
		{"braces", Op{Kind: "glob", Pattern: "**/*.{md,GO}"}, []string{"docs/Guide.GO", "internal/a/README.md"}, ""},
		{"ignore case", Op{Kind: "glob", Pattern: "DOCS/*.go", IgnoreCase: true}, []string{"docs/Guide.GO"}, ""},
		{"depth", Op{Kind: "glob", Pattern: "**/*.go", Depth: 1}, []string{"link.go", "main.go"}, ""},
		{"missing prefix", Op{Kind: "glob", Pattern: "nope/**"}, nil, ""},
		{"file path", Op{Kind: "glob", Path: "main.go", Pattern: "*"}, nil, CodeNotDirectory},
		{"bad pattern", Op{Kind: "glob", Pattern: "[a"}, nil, CodeInvalidPattern},
		{"no pattern", Op{Kind: "glob"}, nil, CodeInvalidPattern},
		{"escaping prefix", Op{Kind: "glob", Pattern: "../x/*"}, nil, CodePathDenied},
		{"absolute pattern", Op{Kind: "glob", Pattern: "/etc/*"}, nil, CodeInvalidPattern},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := run(t, dir, Limits{}, tc.op, false)
			if code := errCode(got); code != tc.code {
				t.Fatalf("error = %+v, want code %q", got.Error, tc.code)
			}
			if diff := cmp.Diff(tc.want, paths(got)); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
		})
	}
	got := run(t, dir, Limits{}, Op{Kind: "glob", Pattern: "link.go"}, false)
	if diff := cmp.Diff([]Entry{{Path: "link.go", Type: "symlink"}}, got.Entries); diff != "" {
		t.Errorf("symlink entry (-want +got):\n%s", diff)
	}
}

func errCode(r Result) string {
	if r.Error == nil {
		return ""
	}
	return r.Error.Code
}

func TestGrep(t *testing.T) {
	dir := makeTree(t, map[string]string{
		"a.go":        "package a\n\nfunc Hello() {}\n// TODO: hello world\n",
		"b/b.go":      "package b\nvar x = \"HELLO\"\n",
		"b/notes.md":  "hello from notes\nline 2\nline 3\nline 4\nhello again\n",
		"c/deep/c.go": "package c\nfunc hello_there() {}\n",
		"crlf.txt":    "one\r\ntwo hello\r\nthree\r\n",
	})
	for _, tc := range []struct {
		name string
		op   Op
		want []Match
		more func(t *testing.T, r Result)
	}{
		{"literal", Op{Kind: "grep", Pattern: "hello"}, []Match{
			{Path: "a.go", Line: 4, Text: "// TODO: hello world"},
			{Path: "b/notes.md", Line: 1, Text: "hello from notes"},
			{Path: "b/notes.md", Line: 5, Text: "hello again"},
			{Path: "c/deep/c.go", Line: 2, Text: "func hello_there() {}"},
			{Path: "crlf.txt", Line: 2, Text: "two hello"},
		}, nil},
		{"ignore case", Op{Kind: "grep", Pattern: "hello", IgnoreCase: true, Include: "*.go"}, []Match{
			{Path: "a.go", Line: 3, Text: "func Hello() {}"},
			{Path: "a.go", Line: 4, Text: "// TODO: hello world"},
			{Path: "b/b.go", Line: 2, Text: `var x = "HELLO"`},
			{Path: "c/deep/c.go", Line: 2, Text: "func hello_there() {}"},
		}, nil},
		{"regex", Op{Kind: "grep", Pattern: `^func \w+\(`, Regex: true}, []Match{
			{Path: "a.go", Line: 3, Text: "func Hello() {}"},
			{Path: "c/deep/c.go", Line: 2, Text: "func hello_there() {}"},
		}, nil},
		{"regex end anchor", Op{Kind: "grep", Pattern: `(again|notes)$`, Regex: true}, []Match{
			{Path: "b/notes.md", Line: 1, Text: "hello from notes"},
			{Path: "b/notes.md", Line: 5, Text: "hello again"},
		}, nil},
		{"regex ignore case", Op{Kind: "grep", Pattern: `h[e]llo"`, Regex: true, IgnoreCase: true}, []Match{
			{Path: "b/b.go", Line: 2, Text: `var x = "HELLO"`},
		}, nil},
		{"include with a slash", Op{Kind: "grep", Pattern: "package", Include: "b/*"}, []Match{
			{Path: "b/b.go", Line: 1, Text: "package b"},
		}, nil},
		{"include relative to path", Op{Kind: "grep", Path: "c", Pattern: "package", Include: "deep/*.go"}, []Match{
			{Path: "c/deep/c.go", Line: 1, Text: "package c"},
		}, nil},
		{"depth", Op{Kind: "grep", Pattern: "package", Depth: 1}, []Match{
			{Path: "a.go", Line: 1, Text: "package a"},
		}, nil},
		{"context", Op{Kind: "grep", Path: "b/notes.md", Pattern: "line 3", Context: 2}, []Match{
			{Path: "b/notes.md", Line: 3, Text: "line 3", Before: []string{"hello from notes", "line 2"}, After: []string{"line 4", "hello again"}},
		}, nil},
		{"context at the edges", Op{Kind: "grep", Path: "b/notes.md", Pattern: "hello", Context: 1}, []Match{
			{Path: "b/notes.md", Line: 1, Text: "hello from notes", After: []string{"line 2"}},
			{Path: "b/notes.md", Line: 5, Text: "hello again", Before: []string{"line 4"}},
		}, nil},
		{"limit", Op{Kind: "grep", Pattern: "hello", Limit: 2}, []Match{
			{Path: "a.go", Line: 4, Text: "// TODO: hello world"},
			{Path: "b/notes.md", Line: 1, Text: "hello from notes"},
		}, func(t *testing.T, r Result) {
			if !r.Truncated {
				t.Error("not truncated")
			}
		}},
		{"limit exactly reached", Op{Kind: "grep", Pattern: "package", Limit: 3}, []Match{
			{Path: "a.go", Line: 1, Text: "package a"},
			{Path: "b/b.go", Line: 1, Text: "package b"},
			{Path: "c/deep/c.go", Line: 1, Text: "package c"},
		}, func(t *testing.T, r Result) {
			if r.Truncated || r.FilesSearched != 5 {
				t.Errorf("truncated %v, files searched %d", r.Truncated, r.FilesSearched)
			}
		}},
		{"no match", Op{Kind: "grep", Pattern: "absent"}, nil, nil},
		{"newline in a literal", Op{Kind: "grep", Pattern: "package a\n"}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := run(t, dir, Limits{Workers: 3}, tc.op, false)
			if got.Error != nil {
				t.Fatal(got.Error)
			}
			if diff := cmp.Diff(tc.want, got.Matches); diff != "" {
				t.Errorf("matches (-want +got):\n%s", diff)
			}
			if tc.more != nil {
				tc.more(t, got)
			}
		})
	}
}

func TestGrepErrors(t *testing.T) {
	dir := makeTree(t, map[string]string{"a.txt": "x"})
	for _, tc := range []struct {
		name string
		op   Op
		code string
	}{
		{"invalid regex", Op{Kind: "grep", Pattern: "(unclosed", Regex: true}, CodeInvalidPattern},
		{"empty pattern", Op{Kind: "grep"}, CodeInvalidPattern},
		{"invalid include", Op{Kind: "grep", Pattern: "x", Include: "[a"}, CodeInvalidPattern},
		{"missing path", Op{Kind: "grep", Path: "nope", Pattern: "x"}, CodeNotFound},
		{"through a file", Op{Kind: "grep", Path: "a.txt/x", Pattern: "x"}, CodeNotFound},
		{"unknown op", Op{Kind: "find", Pattern: "x"}, CodeInvalidArgument},
		{"negative limit", Op{Kind: "grep", Pattern: "x", Limit: -1}, CodeInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := run(t, dir, Limits{}, tc.op, false)
			if errCode(got) != tc.code {
				t.Fatalf("error = %+v, want %s", got.Error, tc.code)
			}
			if strings.Contains(got.Error.Message, dir) {
				t.Errorf("message %q holds the host path", got.Error.Message)
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	root := openRoot(t, t.TempDir())
	s := New(Limits{MaxOps: 2})
	if _, err := s.Run(context.Background(), root, make([]Op, 3), false); !errors.Is(err, ErrTooManyOps) {
		t.Errorf("3 ops: %v", err)
	}
	if _, err := s.Run(context.Background(), root, nil, false); !errors.Is(err, ErrNoOps) {
		t.Errorf("no op: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Run(ctx, root, []Op{{Kind: "ls"}}, false); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	res, err := s.Run(context.Background(), root, []Op{{Kind: "ls"}, {Kind: "grep"}}, false)
	if err != nil || len(res) != 2 || res[0].Error != nil || errCode(res[1]) != CodeInvalidPattern {
		t.Errorf("one bad op among two: %+v, %v", res, err)
	}
}

func TestGitignore(t *testing.T) {
	files := map[string]string{
		".gitignore": "*.log\n!keep.log\nbuild/\n/root-only.txt\ndocs/**/*.tmp\n# comment\n\\#hash\nspace\\ \n",
		"app.log":    "needle", "keep.log": "needle", "sub/deep.log": "needle", "sub/keep.log": "needle",
		"build/out.txt": "needle", "sub/build/out.txt": "needle", "build.txt": "needle",
		"root-only.txt": "needle", "sub/root-only.txt": "needle",
		"docs/a/b/x.tmp": "needle", "docs/x.tmp": "needle", "x.tmp": "needle",
		"#hash": "needle", "space ": "needle",
		"nested/.gitignore": "*.txt\n!important.txt\n/local/\n", "nested/a.txt": "needle", "nested/important.txt": "needle",
		"nested/local/f.md": "needle", "nested/x/local/f.md": "needle", "other/a.txt": "needle",
		".git/info/exclude": "excluded-*\n", "excluded-1": "needle", ".git/config": "needle",
		"dirfile/": "", "dironly/": "",
	}
	dir := makeTree(t, files)
	// An ignored directory is not entered: its entries would exhaust the
	// walk budget.
	for i := range 50 {
		os.WriteFile(filepath.Join(dir, "build", fmt.Sprintf("f%d", i)), []byte("needle"), 0o644)
	}
	want := []string{
		"build.txt:1", "keep.log:1", "nested/important.txt:1", "nested/x/local/f.md:1",
		"other/a.txt:1", "sub/keep.log:1", "sub/root-only.txt:1", "x.tmp:1",
	}
	got := run(t, dir, Limits{MaxEntries: 45}, Op{Kind: "grep", Pattern: "needle"}, false)
	if diff := cmp.Diff(want, paths(got)); diff != "" {
		t.Errorf("matches (-want +got):\n%s", diff)
	}
	if got.WalkLimitHit {
		t.Error("the walk entered an ignored directory")
	}
	// includeIgnored shows everything but .git.
	all := run(t, dir, Limits{}, Op{Kind: "grep", Pattern: "needle", IncludeIgnored: true}, false)
	if n := len(all.Matches); n != 70 {
		t.Errorf("includeIgnored: %d matches: %v", n, paths(all))
	}
	// An explicit ignored path is searched; rules still apply below it.
	sub := run(t, dir, Limits{}, Op{Kind: "glob", Path: "nested/local", Pattern: "*"}, false)
	if diff := cmp.Diff([]string{"nested/local/f.md"}, paths(sub)); diff != "" {
		t.Errorf("explicit ignored path (-want +got):\n%s", diff)
	}
	nested := run(t, dir, Limits{}, Op{Kind: "ls", Path: "nested", Depth: 3}, false)
	if diff := cmp.Diff([]string{"nested/.gitignore", "nested/important.txt", "nested/x", "nested/x/local", "nested/x/local/f.md"}, paths(nested)); diff != "" {
		t.Errorf("ls below a nested .gitignore (-want +got):\n%s", diff)
	}
}

func TestGitDirSkipped(t *testing.T) {
	dir := makeTree(t, map[string]string{".git/HEAD": "needle", "sub/.git": "needle", "a.txt": "needle"})
	got := run(t, dir, Limits{}, Op{Kind: "grep", Pattern: "needle"}, false)
	if diff := cmp.Diff([]string{"a.txt:1"}, paths(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, p := range []string{".git", ".git/HEAD", "sub/.git", "x/../.git/objects"} {
		for _, kind := range []string{"ls", "grep", "glob"} {
			if r := run(t, dir, Limits{}, Op{Kind: kind, Path: p, Pattern: "*"}, false); errCode(r) != CodePathDenied {
				t.Errorf("%s %s: %+v", kind, p, r.Error)
			}
		}
	}
	if r := run(t, dir, Limits{}, Op{Kind: "glob", Pattern: ".git/*"}, false); errCode(r) != CodePathDenied {
		t.Errorf("glob .git/*: %+v", r)
	}
}

func TestSymlinks(t *testing.T) {
	top := t.TempDir()
	outside := filepath.Join(top, "outside")
	os.MkdirAll(outside, 0o755)
	const marker = "OUTSIDE_MARKER_6b1f"
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte(marker+"\n"), 0o644)
	os.MkdirAll(filepath.Join(top, "proj_evil"), 0o755)
	os.WriteFile(filepath.Join(top, "proj_evil", "x.txt"), []byte(marker+"\n"), 0o644)
	proj := filepath.Join(top, "proj")
	os.MkdirAll(filepath.Join(proj, "real"), 0o755)
	os.WriteFile(filepath.Join(proj, "real", "in.txt"), []byte("inside "+marker[:7]+"\n"), 0o644)
	for link, target := range map[string]string{
		"linkdir": "real", "linkfile": "real/in.txt", "loop": ".", "real/up": "..",
		"out-dir": "../outside", "out-file": "../outside/secret.txt", "abs-out": filepath.Join(outside, "secret.txt"),
		"dangling": "../nowhere",
	} {
		if err := os.Symlink(target, filepath.Join(proj, link)); err != nil {
			t.Fatal(err)
		}
	}
	root := openRoot(t, proj)
	s := New(Limits{MaxOps: 16})
	ops := []Op{
		{Kind: "grep", Pattern: "OUTSIDE"},
		{Kind: "grep", Pattern: "OUTSIDE", IncludeIgnored: true},
		{Kind: "ls", Depth: 50},
		{Kind: "glob", Pattern: "**"},
		{Kind: "grep", Pattern: "OUTSIDE", Path: "out-dir"},
		{Kind: "grep", Pattern: "OUTSIDE", Path: "out-file"},
		{Kind: "ls", Path: "out-dir"},
		{Kind: "ls", Path: "abs-out"},
		{Kind: "grep", Pattern: "OUTSIDE", Path: "dangling"},
		{Kind: "grep", Pattern: "OUTSIDE", Path: "../proj_evil"},
	}
	res, err := s.Run(context.Background(), root, ops, true)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		out := fmt.Sprintf("%+v", r)
		if strings.Contains(out, marker) || strings.Contains(out, top) {
			t.Errorf("op %d leaked: %s", i, out)
		}
		if i >= 4 && errCode(r) != CodePathDenied {
			t.Errorf("op %d %+v: want path_denied, got %+v", i, ops[i], r)
		}
	}
	if diff := cmp.Diff([]string{"real/in.txt:1"}, paths(res[0])); diff != "" {
		t.Errorf("grep through links (-want +got):\n%s", diff)
	}
	wantLs := []Entry{
		{Path: "abs-out", Type: "symlink"}, {Path: "dangling", Type: "symlink"}, {Path: "linkdir", Type: "symlink"},
		{Path: "linkfile", Type: "symlink"}, {Path: "loop", Type: "symlink"}, {Path: "out-dir", Type: "symlink"},
		{Path: "out-file", Type: "symlink"}, {Path: "real", Type: "dir"}, {Path: "real/in.txt", Type: "file", Size: 15},
		{Path: "real/up", Type: "symlink"},
	}
	if diff := cmp.Diff(wantLs, res[2].Entries); diff != "" {
		t.Errorf("ls (-want +got):\n%s", diff)
	}
	// An explicit path through a link inside the Project is allowed.
	in := run(t, proj, Limits{}, Op{Kind: "grep", Path: "linkdir", Pattern: "inside"}, false)
	if diff := cmp.Diff([]string{"linkdir/in.txt:1"}, paths(in)); diff != "" {
		t.Errorf("explicit inside link (-want +got):\n%s", diff)
	}
}

func TestPathDenied(t *testing.T) {
	top := t.TempDir()
	proj := filepath.Join(top, "proj")
	os.MkdirAll(proj, 0o755)
	os.MkdirAll(filepath.Join(top, "proj_evil"), 0o755)
	os.WriteFile(filepath.Join(top, "proj_evil", "x"), []byte("needle"), 0o644)
	for _, p := range []string{"..", "../proj_evil", "../proj_evil/x", "/etc", "/", "a\x00b", "a/../../proj", `C:\x`, "\xff"} {
		for _, kind := range []string{"ls", "glob", "grep"} {
			r := run(t, proj, Limits{}, Op{Kind: kind, Path: p, Pattern: "*"}, true)
			if errCode(r) != CodePathDenied || len(r.Entries)+len(r.Matches) > 0 {
				t.Errorf("%s %q: %+v", kind, p, r)
			}
			if strings.Contains(r.Error.Message, top) {
				t.Errorf("%s %q: message holds the host path", kind, p)
			}
		}
	}
}

func TestSensitive(t *testing.T) {
	dir := makeTree(t, map[string]string{
		".env": "TOKEN=needle", ".env.example": "TOKEN=needle", "config/id_rsa": "needle", "config/id_rsa.pub": "needle",
		".ssh/config": "needle", "main.go": "needle",
	})
	hidden := run(t, dir, Limits{}, Op{Kind: "grep", Pattern: "needle"}, false)
	if diff := cmp.Diff([]string{".env.example:1", "config/id_rsa.pub:1", "main.go:1"}, paths(hidden)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if hidden.SensitiveHidden != 3 {
		t.Errorf("sensitiveHidden = %d, want 3", hidden.SensitiveHidden)
	}
	shown := run(t, dir, Limits{}, Op{Kind: "grep", Pattern: "needle"}, true)
	if len(shown.Matches) != 6 || shown.SensitiveHidden != 0 {
		t.Errorf("allowed: %+v", shown)
	}
	for _, op := range []Op{
		{Kind: "ls", Depth: 5}, {Kind: "glob", Pattern: "**"}, {Kind: "grep", Path: ".env", Pattern: "needle"},
		{Kind: "ls", Path: ".env"},
	} {
		r := run(t, dir, Limits{}, op, false)
		for _, p := range paths(r) {
			if strings.Contains(p, ".env:") || p == ".env" || strings.Contains(p, "id_rsa:") || strings.HasSuffix(p, "id_rsa") || strings.HasPrefix(p, ".ssh/") {
				t.Errorf("%+v shows %s", op, p)
			}
		}
		if r.SensitiveHidden == 0 {
			t.Errorf("%+v: sensitiveHidden = 0", op)
		}
	}
}

func TestBinarySkipped(t *testing.T) {
	dir := makeTree(t, map[string]string{
		"bin.dat":  "needle\x00\x01\x02",
		"late.dat": strings.Repeat("x", binaryProbeBytes) + "\x00needle\n",
		"text.txt": "needle\n",
	})
	got := run(t, dir, Limits{}, Op{Kind: "grep", Pattern: "needle"}, false)
	if diff := cmp.Diff([]string{"late.dat:1", "text.txt:1"}, paths(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got.FilesSearched != 2 {
		t.Errorf("filesSearched = %d", got.FilesSearched)
	}
	if r := run(t, dir, Limits{}, Op{Kind: "grep", Path: "bin.dat", Pattern: "needle"}, false); len(r.Matches) != 0 || r.Error != nil {
		t.Errorf("explicit binary file: %+v", r)
	}
}

// TestGrepSkipsTooLargeFiles: a sparse 8 GiB file with a text head (an
// hour of reading for a terabyte) is not read: a walk counts it in
// tooLarge, an explicit path is too_large, and either answers at once. A
// file of exactly the limit is searched.
func TestGrepSkipsTooLargeFiles(t *testing.T) {
	// A text head longer than the binary probe: the holes after it read
	// as NULs, which grep takes for text past the probe.
	dir := makeTree(t, map[string]string{
		"a/huge.log":  "needle head\n" + strings.Repeat("text head\n", binaryProbeBytes/10+1),
		"a/small.txt": "needle\n",
		"edge.txt":    "needle\n",
	})
	if err := os.Truncate(filepath.Join(dir, "a", "huge.log"), 8<<30); err != nil {
		t.Fatal(err)
	}
	limits := Limits{MaxFileBytes: int64(len("needle\n"))}
	tests := []struct {
		name         string
		limits       Limits
		op           Op
		want         []string
		wantTooLarge int
		wantCode     string
	}{
		{"walk, default limit", Limits{}, Op{Kind: "grep", Pattern: "needle"}, []string{"a/small.txt:1", "edge.txt:1"}, 1, ""},
		{"explicit file", Limits{}, Op{Kind: "grep", Path: "a/huge.log", Pattern: "needle"}, nil, 0, CodeTooLarge},
		{"file of exactly the limit", limits, Op{Kind: "grep", Path: "edge.txt", Pattern: "needle"}, []string{"edge.txt:1"}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			got := run(t, dir, tt.limits, tt.op, false)
			if el := time.Since(start); el > 500*time.Millisecond {
				t.Errorf("grep took %v: the large file was read", el)
			}
			if diff := cmp.Diff(tt.want, paths(got)); diff != "" {
				t.Errorf("matches (-want +got):\n%s", diff)
			}
			if got.TooLarge != tt.wantTooLarge {
				t.Errorf("tooLarge = %d, want %d", got.TooLarge, tt.wantTooLarge)
			}
			var code string
			if got.Error != nil {
				code = got.Error.Code
			}
			if code != tt.wantCode {
				t.Errorf("error = %+v, want code %q", got.Error, tt.wantCode)
			}
		})
	}
}

// TestScanStopsAFileGrowingPastTheLimit: fstat said 0 (or less than the
// limit) and the file grew meanwhile: the scan stops past the limit
// instead of reading to the end.
func TestScanStopsAFileGrowingPastTheLimit(t *testing.T) {
	m, err := compileMatcher("needle", false, false)
	if err != nil {
		t.Fatal(err)
	}
	p := &scanParams{m: m, maxChars: 100, maxMatches: 10, maxBytes: 1 << 20, maxFileBytes: 1 << 20}
	sc := &scanner{buf: make([]byte, bufferBytes)}
	endless := io.MultiReader(strings.NewReader("needle\n"), endlessText{})
	if _, err := sc.scan(context.Background(), p, endless, 0, "grows"); !errors.Is(err, errTooLarge) {
		t.Errorf("scan = %v, want errTooLarge", err)
	}
}

// endlessText reads as an endless run of text lines.
type endlessText struct{}

func (endlessText) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = "abc\n"[i%4]
	}
	return len(b), nil
}

func TestLongLine(t *testing.T) {
	const size = 5 << 20
	line := []byte(strings.Repeat("abcdefgh", size/8))
	copy(line[size-100:], "NEEDLE")
	copy(line[3<<20:], "é-MIDDLE-é")
	dir := makeTree(t, map[string]string{"big.txt": "first\n" + string(line) + "\nlast NEEDLE\n"})
	limits := Limits{MaxLineChars: 80}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got := run(t, dir, limits, Op{Kind: "grep", Pattern: "NEEDLE", Context: 1}, false)
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 2<<20 {
		t.Errorf("allocated %d bytes for a %d-byte line", n, size)
	}
	if len(got.Matches) != 2 {
		t.Fatalf("matches: %+v", got.Matches)
	}
	m := got.Matches[0]
	if m.Line != 2 || !strings.Contains(m.Text, "NEEDLE") || !strings.HasPrefix(m.Text, "…") || len([]rune(m.Text)) > 80 {
		t.Errorf("long line match: line %d, %q", m.Line, m.Text)
	}
	if diff := cmp.Diff([]string{"first"}, m.Before); diff != "" {
		t.Errorf("before (-want +got):\n%s", diff)
	}
	if len(m.After) != 1 || m.After[0] != "last NEEDLE" {
		t.Errorf("after: %q", m.After)
	}
	if b := got.Matches[1].Before; len(b) != 1 || len([]rune(b[0])) != 80-1 || !strings.HasSuffix(b[0], "…") {
		t.Errorf("long line as context: %q", b)
	}
	re := run(t, dir, limits, Op{Kind: "grep", Pattern: `é-M[A-Z]+-é`, Regex: true}, false)
	if len(re.Matches) != 1 || re.Matches[0].Line != 2 || !strings.Contains(re.Matches[0].Text, "é-MIDDLE-é") {
		t.Errorf("regex in a long line: %+v", re.Matches)
	}
}

func TestWalkLimit(t *testing.T) {
	files := map[string]string{}
	for i := range 5 {
		for j := range 10 {
			files[fmt.Sprintf("d%d/f%d.txt", i, j)] = "needle"
		}
	}
	dir := makeTree(t, files)
	// 5 directories, the 10 files of d0, then 5 of d1.
	got := run(t, dir, Limits{MaxEntries: 20}, Op{Kind: "grep", Pattern: "needle"}, false)
	if !got.WalkLimitHit || len(got.Matches) != 15 {
		t.Errorf("grep: walkLimitHit %v, %d matches", got.WalkLimitHit, len(got.Matches))
	}
	ls := run(t, dir, Limits{MaxEntries: 3}, Op{Kind: "ls"}, false)
	if !ls.WalkLimitHit || len(ls.Entries) != 3 {
		t.Errorf("ls: walkLimitHit %v, %d entries", ls.WalkLimitHit, len(ls.Entries))
	}
}

func TestDeterministicOrder(t *testing.T) {
	files := map[string]string{}
	var want []string
	for i := range 40 {
		for j := range 5 {
			name := fmt.Sprintf("d%d/f%d.txt", i, j)
			files[name] = strings.Repeat("x\nneedle\n", j+1)
		}
	}
	dir := makeTree(t, files)
	first := run(t, dir, Limits{Workers: 4}, Op{Kind: "grep", Pattern: "needle", Limit: 5000}, false)
	for _, m := range first.Matches {
		want = append(want, fmt.Sprintf("%s:%d", m.Path, m.Line))
	}
	if len(want) != 40*15 {
		t.Fatalf("%d matches", len(want))
	}
	for i := 1; i < len(first.Matches); i++ {
		a, b := first.Matches[i-1], first.Matches[i]
		if a.Path > b.Path || a.Path == b.Path && a.Line >= b.Line {
			t.Fatalf("out of order: %v then %v", a, b)
		}
	}
	for range 5 {
		got := run(t, dir, Limits{Workers: 4}, Op{Kind: "grep", Pattern: "needle", Limit: 77}, false)
		if diff := cmp.Diff(want[:77], paths(got)); diff != "" || !got.Truncated {
			t.Fatalf("limited run differs (truncated %v) (-want +got):\n%s", got.Truncated, diff)
		}
	}
}

func TestOutputBytesBounded(t *testing.T) {
	dir := makeTree(t, map[string]string{"a.txt": strings.Repeat(strings.Repeat("needle ", 100)+"\n", 200)})
	got := run(t, dir, Limits{MaxOutputBytes: 10_000}, Op{Kind: "grep", Pattern: "needle", Limit: 5000}, false)
	size := 0
	for _, m := range got.Matches {
		size += len(m.Path) + len(m.Text)
	}
	if !got.Truncated || size > 10_000 || len(got.Matches) == 0 {
		t.Errorf("truncated %v, %d bytes in %d matches", got.Truncated, size, len(got.Matches))
	}
}

func TestTouchedPaths(t *testing.T) {
	got := TouchedPaths([]Result{
		{Op: "ls", Path: ".", Entries: []Entry{{Path: "x/y", Type: "dir"}}},
		{Op: "grep", Path: "a", Matches: []Match{{Path: "a/b/c.go"}, {Path: "a.b/d.go"}}},
		{Op: "glob", Path: "e", Entries: []Entry{{Path: "e/f", Type: "dir"}}},
		{Op: "grep", Path: "z", Error: &OpError{}},
	})
	if diff := cmp.Diff([]string{"a.b/d.go", "a/b/c.go", "e/f"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"."}, TouchedPaths([]Result{{Op: "ls", Path: "."}})); diff != "" {
		t.Errorf("root only (-want +got):\n%s", diff)
	}
}
