package files

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/devspace-dev/devspace/internal/project"
)

// env is a temp dir holding a Project root ("proj"), a sibling with a
// prefix-sharing name ("proj_evil") and an unrelated sibling ("elsewhere").
type env struct {
	dir, proj, evil, outside string
	root                     *os.Root
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{dir: dir, proj: filepath.Join(dir, "proj"), evil: filepath.Join(dir, "proj_evil"), outside: filepath.Join(dir, "elsewhere")}
	for _, d := range []string{e.proj, e.evil, e.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(e.proj)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	e.root = root
	return e
}

// write creates rel (slash-separated, below the Project) with content.
func (e *env) write(t testing.TB, rel, content string) {
	t.Helper()
	p := e.abs(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// symlink creates the link rel (below the Project) pointing at target as given.
func (e *env) symlink(t testing.TB, target, rel string) {
	t.Helper()
	p := e.abs(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func (e *env) abs(rel string) string { return filepath.Join(e.proj, filepath.FromSlash(rel)) }

// version returns the Version of rel computed independently of the package.
func (e *env) version(t testing.TB, rel string) *Version {
	t.Helper()
	data, err := os.ReadFile(e.abs(rel))
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(e.abs(rel))
	if err != nil {
		t.Fatal(err)
	}
	return &Version{ContentHash: fmt.Sprintf("sha256:%x", sha256.Sum256(data)), MtimeNs: fi.ModTime().UnixNano()}
}

func (e *env) read(t testing.TB, r *Reader, allowSensitive bool, reqs ...Request) []Item {
	t.Helper()
	items, err := r.Read(context.Background(), e.root, reqs, allowSensitive)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if len(items) != len(reqs) {
		t.Fatalf("got %d items for %d requests", len(items), len(reqs))
	}
	return items
}

func intp(n int) *int { return &n }

func TestReadWindow(t *testing.T) {
	tenLines := "l0\nl1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\n"
	tests := []struct {
		name    string
		content string
		limits  Limits
		req     Request
		want    Item // Path, Version and Size are filled in
	}{
		{name: "whole file", content: tenLines, want: Item{Content: tenLines, Lines: 10, TotalLines: 10, LineEnding: "lf"}},
		{name: "window in the middle", content: tenLines, req: Request{Offset: 2, Limit: 3},
			want: Item{Content: "l2\nl3\nl4\n", Offset: 2, Lines: 3, TotalLines: 10, NextOffset: intp(5), LineEnding: "lf"}},
		{name: "window past the end", content: tenLines, req: Request{Offset: 8, Limit: 5},
			want: Item{Content: "l8\nl9\n", Offset: 8, Lines: 2, TotalLines: 10, LineEnding: "lf"}},
		{name: "offset at the end", content: tenLines, req: Request{Offset: 10},
			want: Item{Offset: 10, TotalLines: 10, LineEnding: "lf"}},
		{name: "offset beyond the end", content: tenLines, req: Request{Offset: 1 << 40},
			want: Item{Offset: 1 << 40, TotalLines: 10, LineEnding: "lf"}},
		{name: "huge limit", content: tenLines, req: Request{Offset: 9, Limit: 1 << 62},
			want: Item{Content: "l9\n", Offset: 9, Lines: 1, TotalLines: 10, LineEnding: "lf"}},
		{name: "default lines", content: tenLines, limits: Limits{DefaultLines: 4},
			want: Item{Content: "l0\nl1\nl2\nl3\n", Lines: 4, TotalLines: 10, NextOffset: intp(4), LineEnding: "lf"}},
		{name: "limit clamped to MaxLines", content: tenLines, limits: Limits{MaxLines: 3}, req: Request{Offset: 1, Limit: 9},
			want: Item{Content: "l1\nl2\nl3\n", Offset: 1, Lines: 3, TotalLines: 10, NextOffset: intp(4), LineEnding: "lf"}},
		{name: "CRLF", content: "a\r\nb\r\nc\r\n", req: Request{Offset: 1},
			want: Item{Content: "b\nc\n", Offset: 1, Lines: 2, TotalLines: 3, LineEnding: "crlf"}},
		{name: "mixed endings", content: "a\r\nb\nc\r\n",
			want: Item{Content: "a\nb\nc\n", Lines: 3, TotalLines: 3, LineEnding: "mixed"}},
		{name: "CR inside a line is content", content: "a\rb\n",
			want: Item{Content: "a\rb\n", Lines: 1, TotalLines: 1, LineEnding: "lf"}},
		{name: "CR at EOF without LF is content", content: "a\nb\r",
			want: Item{Content: "a\nb\r", Lines: 2, TotalLines: 2, LineEnding: "lf"}},
		{name: "no trailing newline", content: "a\nb",
			want: Item{Content: "a\nb", Lines: 2, TotalLines: 2, LineEnding: "lf"}},
		{name: "no trailing newline, last line only", content: "a\nb", req: Request{Offset: 1},
			want: Item{Content: "b", Offset: 1, Lines: 1, TotalLines: 2, LineEnding: "lf"}},
		{name: "single line without newline", content: "abc",
			want: Item{Content: "abc", Lines: 1, TotalLines: 1}},
		{name: "empty file", content: "", want: Item{}},
		{name: "only a newline", content: "\n", want: Item{Content: "\n", Lines: 1, TotalLines: 1, LineEnding: "lf"}},
		{name: "empty lines", content: "\n\n\n", req: Request{Offset: 1, Limit: 1},
			want: Item{Content: "\n", Offset: 1, Lines: 1, TotalLines: 3, NextOffset: intp(2), LineEnding: "lf"}},
		{name: "unicode", content: "héllo\n世界\n🙂\n",
			want: Item{Content: "héllo\n世界\n🙂\n", Lines: 3, TotalLines: 3, LineEnding: "lf"}},
		{name: "U+FFFD is text", content: "\uFFFD\n", want: Item{Content: "\uFFFD\n", Lines: 1, TotalLines: 1, LineEnding: "lf"}},
		{name: "per-item cap stops before a line", content: "aaaa\nbbbb\ncccc\n", limits: Limits{MaxCharsPerItem: 10},
			want: Item{Content: "aaaa\nbbbb\n", Lines: 2, TotalLines: 3, NextOffset: intp(2), Truncated: true, LineEnding: "lf"}},
		{name: "per-item cap exactly reached", content: "aaaa\nbbbb\n", limits: Limits{MaxCharsPerItem: 10},
			want: Item{Content: "aaaa\nbbbb\n", Lines: 2, TotalLines: 2, LineEnding: "lf"}},
		{name: "cap counts characters, not bytes", content: "ééééé\nx\n", limits: Limits{MaxCharsPerItem: 6},
			want: Item{Content: "ééééé\n", Lines: 1, TotalLines: 2, NextOffset: intp(1), Truncated: true, LineEnding: "lf"}},
		{name: "long line is cut", content: "0123456789abc\nx\n", limits: Limits{MaxCharsPerItem: 10},
			want: Item{Content: "0123456789", Lines: 1, TotalLines: 2, NextOffset: intp(1), Truncated: true, LineEnding: "lf"}},
		{name: "long line cut on a rune boundary", content: "ééééééé\n", limits: Limits{MaxCharsPerItem: 3},
			want: Item{Content: "ééé", Lines: 1, TotalLines: 1, Truncated: true, LineEnding: "lf"}},
		{name: "long CRLF line cut", content: "0123456789\r\n", limits: Limits{MaxCharsPerItem: 10},
			want: Item{Content: "0123456789", Lines: 1, TotalLines: 1, Truncated: true, LineEnding: "crlf"}},
		{name: "long line after kept lines", content: "ab\n0123456789abc\n", limits: Limits{MaxCharsPerItem: 10},
			want: Item{Content: "ab\n", Lines: 1, TotalLines: 2, NextOffset: intp(1), Truncated: true, LineEnding: "lf"}},
		{name: "invalid UTF-8 outside the window", content: "ok\n\xff\n", req: Request{Limit: 1},
			want: Item{Content: "ok\n", Lines: 1, TotalLines: 2, NextOffset: intp(1), LineEnding: "lf"}},
		{name: "NUL after 8 KiB outside the window", content: "ok\n" + strings.Repeat("x", 9000) + "\x00\n", req: Request{Limit: 1},
			want: Item{Content: "ok\n", Lines: 1, TotalLines: 2, NextOffset: intp(1), LineEnding: "lf"}},
		{name: "invalid UTF-8 in the window", content: "ok\n\xff\n", want: Item{Binary: true}},
		{name: "truncated rune at EOF", content: "ok\n\xc3", want: Item{Binary: true}},
		{name: "truncated rune before newline", content: "\xe4\xb8\nx\n", want: Item{Binary: true}},
		{name: "overlong encoding", content: "\xc0\xaf\n", want: Item{Binary: true}},
		{name: "surrogate", content: "\xed\xa0\x80\n", want: Item{Binary: true}},
		{name: "NUL in the first 8 KiB", content: "\x00abc\n", req: Request{Offset: 5}, want: Item{Binary: true, Offset: 5}},
		{name: "NUL after 8 KiB in the window", content: strings.Repeat("x\n", 5000) + "\x00\n", req: Request{Offset: 4999}, want: Item{Binary: true, Offset: 4999}},
		{name: "rune across a read chunk", content: strings.Repeat("a", chunkBytes-1) + "é\nnext\n", req: Request{Offset: 1},
			want: Item{Content: "next\n", Offset: 1, Lines: 1, TotalLines: 2, LineEnding: "lf"}},
		{name: "CRLF across a read chunk", content: strings.Repeat("a", chunkBytes-1) + "\r\nb\r\n", req: Request{Offset: 1},
			want: Item{Content: "b\n", Offset: 1, Lines: 1, TotalLines: 2, LineEnding: "crlf"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.write(t, "dir/f.txt", tt.content)
			tt.req.Path = "dir/f.txt"
			got := e.read(t, NewReader(tt.limits), false, tt.req)
			want := tt.want
			want.Path = "dir/f.txt"
			want.Version = e.version(t, "dir/f.txt")
			want.Size = int64(len(tt.content))
			if diff := cmp.Diff([]Item{want}, got); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadTotalCap(t *testing.T) {
	e := newEnv(t)
	e.write(t, "f", "aaaa\nbbbb\ncccc\n")
	e.write(t, "long", "0123456789abcdef\n")
	r := NewReader(Limits{MaxCharsPerItem: 10, MaxCharsTotal: 15})
	got := e.read(t, r, false,
		Request{Path: "f"},    // 10 of 10: stops before cccc
		Request{Path: "f"},    // 5 left: aaaa only
		Request{Path: "f"},    // nothing left
		Request{Path: "nope"}, // errors take no budget
	)
	v, size := e.version(t, "f"), int64(15)
	want := []Item{
		{Path: "f", Content: "aaaa\nbbbb\n", Lines: 2, TotalLines: 3, NextOffset: intp(2), Truncated: true, Version: v, Size: size, LineEnding: "lf"},
		{Path: "f", Content: "aaaa\n", Lines: 1, TotalLines: 3, NextOffset: intp(1), Truncated: true, Version: v, Size: size, LineEnding: "lf"},
		{Path: "f", Lines: 0, TotalLines: 3, NextOffset: intp(0), Truncated: true, Version: v, Size: size, LineEnding: "lf"},
		{Path: "nope", Error: &ItemError{Code: CodeNotFound, Message: "no such file in the Project"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}

	// A long line is cut only when the item has its full allowance, so the
	// same request reads the same way in any batch.
	got = e.read(t, r, false, Request{Path: "f", Limit: 2}, Request{Path: "long", Offset: 0})
	want = []Item{
		{Path: "f", Content: "aaaa\nbbbb\n", Lines: 2, TotalLines: 3, NextOffset: intp(2), Version: v, Size: size, LineEnding: "lf"},
		{Path: "long", Lines: 0, TotalLines: 1, NextOffset: intp(0), Truncated: true, Version: e.version(t, "long"), Size: 17, LineEnding: "lf"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	got = e.read(t, r, false, Request{Path: "long"})
	want = []Item{{Path: "long", Content: "0123456789", Lines: 1, TotalLines: 1, Truncated: true, Version: e.version(t, "long"), Size: 17, LineEnding: "lf"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
}

func TestReadDefaultTotalCap(t *testing.T) {
	e := newEnv(t)
	line := strings.Repeat("x", 99) + "\n" // 100 characters
	e.write(t, "big", strings.Repeat(line, 1000))
	reqs := make([]Request, 8)
	for i := range reqs {
		reqs[i] = Request{Path: "big"}
	}
	items := e.read(t, NewReader(Limits{}), false, reqs...)
	total := 0
	for i, it := range items {
		total += len(it.Content)
		if i < 3 && (it.Lines != 160 || *it.NextOffset != 160 || !it.Truncated) {
			t.Errorf("item %d: lines %d, want 160 (16,000 chars)", i, it.Lines)
		}
		if i >= 3 && (it.Lines != 0 || it.NextOffset == nil || *it.NextOffset != 0 || !it.Truncated || it.Version == nil) {
			t.Errorf("item %d past the total cap: %+v", i, it)
		}
	}
	if total != DefaultMaxCharsTotal {
		t.Errorf("total content %d, want %d", total, DefaultMaxCharsTotal)
	}
}

func TestReadRequestErrors(t *testing.T) {
	e := newEnv(t)
	e.write(t, "f", "x\n")
	r := NewReader(Limits{})
	nine := make([]Request, 9)
	for i := range nine {
		nine[i] = Request{Path: "f"}
	}
	tests := []struct {
		name  string
		items []Request
		want  error
	}{
		{"9 items", nine, ErrTooManyItems},
		{"no items", nil, ErrInvalidRequest},
		{"negative offset", []Request{{Path: "f"}, {Path: "f", Offset: -1}}, ErrInvalidRequest},
		{"negative limit", []Request{{Path: "f", Limit: -1}}, ErrInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, err := r.Read(context.Background(), e.root, tt.items, false)
			if !errors.Is(err, tt.want) || items != nil {
				t.Fatalf("Read = %v, %v; want nil, %v", items, err, tt.want)
			}
		})
	}
	if items := e.read(t, r, false, nine[:8]...); len(items) != 8 || items[7].Error != nil {
		t.Errorf("8 items: %+v", items)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Read(ctx, e.root, nine[:1], false); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
}

func TestReadFileKinds(t *testing.T) {
	e := newEnv(t)
	e.write(t, "sub/real.txt", "real\n")
	e.write(t, "top.txt", "top\n")
	e.symlink(t, "sub/real.txt", "link.txt")
	e.symlink(t, "sub", "dirlink")
	e.symlink(t, "../top.txt", "sub/up.txt")
	e.symlink(t, "link.txt", "chain.txt")
	e.symlink(t, "missing.txt", "dangling.txt")
	e.symlink(t, "a", "loop_b")
	e.symlink(t, "loop_b", "a")
	e.symlink(t, "sub/../sub/./real.txt", "dots.txt")
	notFound := func(msg string) *ItemError { return &ItemError{Code: CodeNotFound, Message: msg} }
	tests := []struct {
		path string
		want Item
	}{
		{"link.txt", Item{Path: "link.txt", Content: "real\n", Lines: 1, TotalLines: 1, Version: e.version(t, "sub/real.txt"), Size: 5, LineEnding: "lf"}},
		{"dirlink/real.txt", Item{Path: "dirlink/real.txt", Content: "real\n", Lines: 1, TotalLines: 1, Version: e.version(t, "sub/real.txt"), Size: 5, LineEnding: "lf"}},
		{"sub/up.txt", Item{Path: "sub/up.txt", Content: "top\n", Lines: 1, TotalLines: 1, Version: e.version(t, "top.txt"), Size: 4, LineEnding: "lf"}},
		{"chain.txt", Item{Path: "chain.txt", Content: "real\n", Lines: 1, TotalLines: 1, Version: e.version(t, "sub/real.txt"), Size: 5, LineEnding: "lf"}},
		{"dots.txt", Item{Path: "dots.txt", Content: "real\n", Lines: 1, TotalLines: 1, Version: e.version(t, "sub/real.txt"), Size: 5, LineEnding: "lf"}},
		{"./sub//real.txt", Item{Path: "sub/real.txt", Content: "real\n", Lines: 1, TotalLines: 1, Version: e.version(t, "sub/real.txt"), Size: 5, LineEnding: "lf"}},
		{"missing.txt", Item{Path: "missing.txt", Error: notFound("no such file in the Project")}},
		{"dangling.txt", Item{Path: "dangling.txt", Error: notFound("no such file in the Project")}},
		{"top.txt/x", Item{Path: "top.txt/x", Error: notFound("no such file in the Project")}},
		{"sub", Item{Path: "sub", Error: &ItemError{Code: CodeIsDirectory, Message: "the path is a directory; list it with inspect"}}},
		{"dirlink", Item{Path: "dirlink", Error: &ItemError{Code: CodeIsDirectory, Message: "the path is a directory; list it with inspect"}}},
		{".", Item{Path: ".", Error: &ItemError{Code: CodeIsDirectory, Message: "the path is a directory; list it with inspect"}}},
		{"", Item{Path: ".", Error: &ItemError{Code: CodeIsDirectory, Message: "the path is a directory; list it with inspect"}}},
		{"a", Item{Path: "a", Error: &ItemError{Code: CodeUnreadable, Message: "cannot read the file: too many levels of symbolic links"}}},
	}
	r := NewReader(Limits{})
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got := e.read(t, r, false, Request{Path: tt.path})
			if diff := cmp.Diff([]Item{tt.want}, got); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadTooLarge(t *testing.T) {
	e := newEnv(t)
	e.write(t, "f", "0123456789\n")
	e.write(t, "g", "0123456789")
	got := e.read(t, NewReader(Limits{MaxFileBytes: 10}), false, Request{Path: "f"}, Request{Path: "g"})
	want := []Item{
		{Path: "f", Error: &ItemError{Code: CodeTooLarge, Message: "the file is too large to read and hash; inspect it with a command such as head, tail or sed"}},
		{Path: "g", Content: "0123456789", Lines: 1, TotalLines: 1, Version: e.version(t, "g"), Size: 10},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	// Above the default limit: refused before anything is read.
	if err := os.Truncate(e.abs("f"), DefaultMaxFileBytes+1); err != nil {
		t.Fatal(err)
	}
	if got := e.read(t, NewReader(Limits{}), false, Request{Path: "f"}); got[0].Error == nil || got[0].Error.Code != CodeTooLarge {
		t.Errorf("1 GiB + 1: %+v", got[0])
	}
}

// TestReadPathDenied checks every escape yields path_denied with the same
// item whether or not the outside target exists, and that no message shows
// a host path or the outside names.
func TestReadPathDenied(t *testing.T) {
	reqs := []Request{
		{Path: "/etc/passwd"},
		{Path: "../elsewhere/secret.txt"},
		{Path: "../proj_evil/x"},
		{Path: "sub/../../elsewhere/secret.txt"},
		{Path: "x\x00y"},
		{Path: "\xff.txt"},
		{Path: `C:\x`},
		{Path: `\\server\share`},
		{Path: strings.Repeat("a/", project.MaxPathBytes)},
		{Path: "out_rel"},
		{Path: "out_abs"},
		{Path: "out_sib"},
		{Path: "out_chain"},
		{Path: "out_dir/secret.txt"},
		{Path: "in_abs"},
		{Path: "sub/out_up"},
		{Path: "out_back_in"},
	}
	build := func(t *testing.T, withTargets bool) (*env, []Item) {
		e := newEnv(t)
		e.write(t, "sub/inside.txt", "inside\n")
		if withTargets {
			for _, p := range []string{filepath.Join(e.outside, "secret.txt"), filepath.Join(e.evil, "x")} {
				if err := os.WriteFile(p, []byte("OUTSIDE-MARKER\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		e.symlink(t, "../elsewhere/secret.txt", "out_rel")
		e.symlink(t, filepath.Join(e.outside, "secret.txt"), "out_abs")
		e.symlink(t, "../proj_evil/x", "out_sib")
		e.symlink(t, "out_rel", "out_chain")
		e.symlink(t, "../elsewhere", "out_dir")
		e.symlink(t, e.abs("sub/inside.txt"), "in_abs") // absolute, even inside, is refused by os.Root
		e.symlink(t, "../../elsewhere/secret.txt", "sub/out_up")
		e.symlink(t, "../proj/sub/inside.txt", "out_back_in")
		var items []Item
		for batch := range slices.Chunk(reqs, DefaultMaxItems) {
			items = append(items, e.read(t, NewReader(Limits{}), false, batch...)...)
		}
		return e, items
	}
	e, with := build(t, true)
	_, without := build(t, false)
	if diff := cmp.Diff(with, without); diff != "" {
		t.Errorf("items differ with and without outside targets (-with +without):\n%s", diff)
	}
	for i, it := range with {
		if it.Error == nil || it.Error.Code != CodePathDenied || it.Content != "" || it.Version != nil {
			t.Errorf("%q: %+v, want path_denied", reqs[i].Path, it)
			continue
		}
		for _, bad := range []string{e.dir, "elsewhere", "secret", "evil", "passwd", "MARKER"} {
			if strings.Contains(it.Error.Message, bad) {
				t.Errorf("%q: message %q contains %q", reqs[i].Path, it.Error.Message, bad)
			}
		}
		if it.Error.DenyReason == "" {
			t.Errorf("%q: no deny reason", reqs[i].Path)
		}
	}
}

func TestReadSensitive(t *testing.T) {
	e := newEnv(t)
	e.write(t, ".env", "TOKEN=env-secret\n")
	e.write(t, ".env.example", "TOKEN=\n")
	e.write(t, ".ssh/id", "ssh-secret\n")
	e.write(t, "keys/server.pem", "pem-secret\n")
	e.symlink(t, ".env", "notes.txt")
	e.symlink(t, ".ssh", "cfg")
	e.symlink(t, "../.env", "sub/alias")
	e.symlink(t, "server.pem", "keys/readme.md")
	refused := &ItemError{Code: CodeSensitiveFile, Message: "refused: the file may hold secrets (.env, private key, credentials); send allowSensitive: true to read it"}
	tests := []struct {
		path        string
		real        string
		want        string
		refusedAlso bool // refused without allowSensitive
	}{
		{".env", ".env", "TOKEN=env-secret\n", true},
		{"notes.txt", ".env", "TOKEN=env-secret\n", true},
		{"sub/alias", ".env", "TOKEN=env-secret\n", true},
		{"cfg/id", ".ssh/id", "ssh-secret\n", true},
		{".ssh/id", ".ssh/id", "ssh-secret\n", true},
		{"keys/readme.md", "keys/server.pem", "pem-secret\n", true},
		{".env.example", ".env.example", "TOKEN=\n", false},
		{".ENV", "", "", true}, // case-insensitive, refused before the lookup
	}
	r := NewReader(Limits{})
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got := e.read(t, r, false, Request{Path: tt.path})[0]
			if tt.refusedAlso {
				if diff := cmp.Diff(Item{Path: tt.path, Error: refused}, got); diff != "" {
					t.Errorf("without allowSensitive (-want +got):\n%s", diff)
				}
			} else if got.Content != tt.want {
				t.Errorf("without allowSensitive: %+v", got)
			}
			if tt.real == "" {
				return
			}
			got = e.read(t, r, true, Request{Path: tt.path})[0]
			want := Item{Path: tt.path, Content: tt.want, Lines: 1, TotalLines: 1, Version: e.version(t, tt.real), Size: int64(len(tt.want)), LineEnding: "lf"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("with allowSensitive (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadExactBytePaths(t *testing.T) {
	e := newEnv(t)
	e.write(t, "ab.txt", "plain\n")
	e.write(t, "a\u202Eb.txt", "rtl\n")
	e.write(t, "a\u200Bb.txt", "zero-width\n")
	e.write(t, "caf\u00e9.txt", "nfc\n")
	r := NewReader(Limits{})
	tests := []struct{ path, want, code string }{
		{"ab.txt", "plain\n", ""},
		{"a\u202Eb.txt", "rtl\n", ""},
		{"a\u200Bb.txt", "zero-width\n", ""},
		{"a\u2060b.txt", "", CodeNotFound},
		{"caf\u00e9.txt", "nfc\n", ""},
		{"cafe\u0301.txt", "", CodeNotFound}, // NFD spelling is another name
	}
	for _, tt := range tests {
		got := e.read(t, r, false, Request{Path: tt.path})[0]
		if got.Path != tt.path || got.Content != tt.want || (got.Error == nil) != (tt.code == "") || (got.Error != nil && got.Error.Code != tt.code) {
			t.Errorf("%+q: %+v", tt.path, got)
		}
	}
}

// TestReadModifiedDuringRead drives the stable-read retry with a hook.
func TestReadModifiedDuringRead(t *testing.T) {
	t.Run("always changing", func(t *testing.T) {
		e := newEnv(t)
		e.write(t, "f", "a\n")
		r := NewReader(Limits{})
		calls := 0
		r.afterScan = func() {
			calls++
			f, err := os.OpenFile(e.abs("f"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Error(err)
				return
			}
			f.WriteString("b\n")
			f.Close()
		}
		got := e.read(t, r, false, Request{Path: "f"})
		want := []Item{{Path: "f", Error: &ItemError{Code: CodeUnreadable, Message: "the file kept changing while it was read; retry later"}}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("items (-want +got):\n%s", diff)
		}
		if calls != maxAttempts {
			t.Errorf("%d attempts, want %d", calls, maxAttempts)
		}
		if _, err := r.Stat(context.Background(), e.root, "f"); !errors.Is(err, ErrUnstable) {
			t.Errorf("Stat: %v, want ErrUnstable", err)
		}
	})
	t.Run("changed once", func(t *testing.T) {
		e := newEnv(t)
		e.write(t, "f", "old\n")
		r := NewReader(Limits{})
		calls := 0
		r.afterScan = func() {
			calls++
			if calls == 1 {
				// Same size, new content and mtime.
				if err := os.WriteFile(e.abs("f"), []byte("new\n"), 0o644); err != nil {
					t.Error(err)
				}
				future := time.Now().Add(time.Hour)
				if err := os.Chtimes(e.abs("f"), future, future); err != nil {
					t.Error(err)
				}
			}
		}
		got := e.read(t, r, false, Request{Path: "f"})
		want := []Item{{Path: "f", Content: "new\n", Lines: 1, TotalLines: 1, Version: e.version(t, "f"), Size: 4, LineEnding: "lf"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("items (-want +got):\n%s", diff)
		}
	})
	t.Run("replaced by rename", func(t *testing.T) {
		// The open file keeps its bytes; the result is the old version, whole.
		e := newEnv(t)
		e.write(t, "f", "old\n")
		old := e.version(t, "f")
		r := NewReader(Limits{})
		r.afterScan = func() {
			e.write(t, "f.tmp", "newer\n")
			if err := os.Rename(e.abs("f.tmp"), e.abs("f")); err != nil {
				t.Error(err)
			}
		}
		got := e.read(t, r, false, Request{Path: "f"})
		want := []Item{{Path: "f", Content: "old\n", Lines: 1, TotalLines: 1, Version: old, Size: 4, LineEnding: "lf"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("items (-want +got):\n%s", diff)
		}
	})
}

// TestReadConcurrentWriter reads a file another goroutine keeps rewriting,
// in place (same size, so only the coarse mtime can reveal a change) or by
// truncate-and-write. Every successful item's hash must be the hash of
// exactly the returned bytes (the window covers the whole LF file), so
// Content and Version never describe different states. A same-size rewrite
// within one mtime tick can still yield a torn read; its hash then matches
// no state on disk and a later ifMatch fails.
func TestReadConcurrentWriter(t *testing.T) {
	a := strings.Repeat(strings.Repeat("A", 199)+"\n", 1000)
	b := strings.Repeat(strings.Repeat("B", 199)+"\n", 1000)
	c := strings.Repeat(strings.Repeat("C", 99)+"\n", 1500)
	writers := []struct {
		name  string
		write func(f *os.File, i int) error
	}{
		{"in place", func(f *os.File, i int) error {
			_, err := f.WriteAt([]byte([]string{a, b}[i%2]), 0)
			return err
		}},
		{"truncate and write", func(f *os.File, i int) error {
			content := []string{a, c}[i%2]
			if err := f.Truncate(0); err != nil {
				return err
			}
			_, err := f.WriteAt([]byte(content), 0)
			return err
		}},
	}
	for _, tt := range writers {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.write(t, "f", a)
			r := NewReader(Limits{MaxLines: 5000, DefaultLines: 5000, MaxCharsPerItem: 1 << 20, MaxCharsTotal: 1 << 20})
			f, err := os.OpenFile(e.abs("f"), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if err := tt.write(f, i); err != nil {
						t.Error(err)
						return
					}
				}
			})
			outcomes := map[string]int{}
			for range 200 {
				it := e.read(t, r, false, Request{Path: "f"})[0]
				if it.Error != nil {
					if it.Error.Code != CodeUnreadable {
						t.Errorf("error %+v", it.Error)
					}
					outcomes["unreadable"]++
					continue
				}
				if it.Binary || it.Truncated {
					t.Fatalf("unexpected item %+v", it)
				}
				if got := hashBytes([]byte(it.Content)); got != it.Version.ContentHash {
					t.Fatalf("hash %s does not match the returned content (%d bytes, size %d)", it.Version.ContentHash, len(it.Content), it.Size)
				}
				if int64(len(it.Content)) != it.Size {
					t.Fatalf("content %d bytes, size %d", len(it.Content), it.Size)
				}
				switch it.Content {
				case "":
					outcomes["empty"]++
				case a, b, c:
					outcomes[it.Content[:1]]++
				default:
					outcomes["torn"]++
				}
			}
			close(stop)
			wg.Wait()
			t.Logf("outcomes: %v", outcomes)
		})
	}
}

// TestReadSymlinkSwap swaps a symlink between an inside target and outside
// or sensitive targets while reading it: no read may return their content.
func TestReadSymlinkSwap(t *testing.T) {
	e := newEnv(t)
	e.write(t, "inside.txt", "inside\n")
	e.write(t, ".env", "ENV-MARKER\n")
	if err := os.WriteFile(filepath.Join(e.outside, "secret.txt"), []byte("OUTSIDE-MARKER\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	targets := []string{"inside.txt", "../elsewhere/secret.txt", "inside.txt", filepath.Join(e.outside, "secret.txt"), "inside.txt", ".env"}
	e.symlink(t, "inside.txt", "link")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			tmp := e.abs("link.tmp")
			os.Remove(tmp)
			if err := os.Symlink(targets[i%len(targets)], tmp); err != nil {
				t.Error(err)
				return
			}
			if err := os.Rename(tmp, e.abs("link")); err != nil {
				t.Error(err)
				return
			}
		}
	})
	r := NewReader(Limits{})
	codes := map[string]int{}
	for range 200 {
		for _, it := range e.read(t, r, false, Request{Path: "link"}, Request{Path: "link", Offset: 0, Limit: 1}) {
			if strings.Contains(it.Content, "MARKER") {
				t.Fatalf("read returned %q", it.Content)
			}
			switch {
			case it.Error != nil:
				codes[it.Error.Code]++
			case it.Content != "inside\n":
				t.Fatalf("unexpected item %+v", it)
			default:
				codes["ok"]++
			}
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("outcomes: %v", codes)
}

func TestReadBounded(t *testing.T) {
	t.Run("10 MB single line", func(t *testing.T) {
		e := newEnv(t)
		content := strings.Repeat("x", 10_000_000)
		e.write(t, "one", content)
		r := NewReader(Limits{})
		e.read(t, r, false, Request{Path: "one"}) // warm the buffer pool
		var got []Item
		alloc := allocated(func() { got = e.read(t, r, false, Request{Path: "one"}) })
		want := []Item{{Path: "one", Content: content[:DefaultMaxCharsPerItem], Lines: 1, TotalLines: 1, Truncated: true, Version: e.version(t, "one"), Size: int64(len(content))}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("items (-want +got):\n%s", diff)
		}
		if alloc > 2<<20 {
			t.Errorf("allocated %d bytes reading a 10 MB line", alloc)
		}
		t.Logf("allocated %d bytes", alloc)
	})
	t.Run("1 GiB sparse file", func(t *testing.T) {
		if testing.Short() {
			t.Skip("hashes 1 GiB")
		}
		e := newEnv(t)
		var head strings.Builder
		for i := 0; head.Len() < 2*sniffBytes; i++ {
			fmt.Fprintf(&head, "line %d\n", i)
		}
		e.write(t, "big", head.String())
		if err := os.Truncate(e.abs("big"), 1<<30); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(e.abs("big"))
		if err != nil {
			t.Fatal(err)
		}
		r := NewReader(Limits{})
		start := time.Now()
		var got []Item
		alloc := allocated(func() { got = e.read(t, r, false, Request{Path: "big", Offset: 3, Limit: 10}) })
		elapsed := time.Since(start)
		h := sha256.New()
		h.Write([]byte(head.String()))
		if _, err := io.CopyN(h, zeros{}, 1<<30-int64(head.Len())); err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitAfter(head.String(), "\n")
		want := []Item{{
			Path: "big", Content: strings.Join(lines[3:13], ""), Offset: 3, Lines: 10,
			TotalLines: len(lines), NextOffset: intp(13), Size: 1 << 30, LineEnding: "lf",
			Version: &Version{ContentHash: fmt.Sprintf("sha256:%x", h.Sum(nil)), MtimeNs: fi.ModTime().UnixNano()},
		}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("items (-want +got):\n%s", diff)
		}
		if alloc > 2<<20 {
			t.Errorf("allocated %d bytes reading 10 lines of 1 GiB", alloc)
		}
		t.Logf("read 10 lines of 1 GiB in %v, allocated %d bytes", elapsed, alloc)
	})
}

// allocated returns the bytes allocated while f runs.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestReadConcurrentUse(t *testing.T) {
	e := newEnv(t)
	for i := range 4 {
		e.write(t, fmt.Sprintf("f%d", i), strings.Repeat(fmt.Sprintf("file %d\n", i), 5000))
	}
	r := NewReader(Limits{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for range 20 {
				items, err := r.Read(context.Background(), e.root, []Request{{Path: fmt.Sprintf("f%d", g)}, {Path: fmt.Sprintf("f%d", (g+1)%4), Offset: 100}}, false)
				if err != nil {
					t.Error(err)
					return
				}
				if !strings.HasPrefix(items[0].Content, fmt.Sprintf("file %d\n", g)) || items[0].Lines != 400 || items[1].Offset != 100 {
					t.Errorf("goroutine %d: %+v", g, items[0])
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestStat(t *testing.T) {
	e := newEnv(t)
	e.write(t, "f", "hello\n")
	e.write(t, ".env", "S=1\n")
	e.write(t, "sub/x", "x\n")
	e.symlink(t, "../elsewhere/secret.txt", "out")
	ctx := context.Background()
	r := NewReader(Limits{})
	v, err := r.Stat(ctx, e.root, "./f")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(e.version(t, "f"), v); diff != "" {
		t.Errorf("version (-want +got):\n%s", diff)
	}
	if got := e.read(t, NewReader(Limits{}), false, Request{Path: "f"})[0].Version; !cmp.Equal(v, got) {
		t.Errorf("Read version %+v, Stat %+v", got, v)
	}
	if v, err := r.Stat(ctx, e.root, ".env"); err != nil || v.ContentHash != e.version(t, ".env").ContentHash {
		t.Errorf("Stat .env = %v, %v (sensitive files are not refused)", v, err)
	}
	tests := []struct {
		rel  string
		want error
	}{
		{"missing", fs.ErrNotExist},
		{"f/x", syscall.ENOTDIR},
		{"out", project.ErrPathDenied},
		{"../elsewhere/secret.txt", project.ErrPathDenied},
		{"/etc/passwd", project.ErrPathDenied},
		{"sub", ErrIsDirectory},
	}
	for _, tt := range tests {
		_, err := r.Stat(ctx, e.root, tt.rel)
		if !errors.Is(err, tt.want) {
			t.Errorf("Stat(%q) = %v, want %v", tt.rel, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), e.dir) {
			t.Errorf("Stat(%q) error shows a host path: %v", tt.rel, err)
		}
	}
}

// hashBytes is how a Version's ContentHash is spelled: "sha256:<hex>".
func hashBytes(b []byte) string {
	return fmt.Sprintf("sha256:%x", sha256.Sum256(b))
}

func TestUTF8Stream(t *testing.T) {
	texts := []struct {
		s     string
		valid bool
	}{
		{"", true},
		{"plain ascii", true},
		{"héllo 世界 🙂 \uFFFD", true},
		{"\xff", false},
		{"a\xc3", false},
		{"\xe4\xb8", false},
		{"\xf0\x9f\x99", false},
		{"\xc0\xaf", false},
		{"\xed\xa0\x80", false},
		{"\xf4\x90\x80\x80", false},
		{"ok\x80", false},
	}
	for _, tt := range texts {
		// Every way to cut the text in two and three pieces.
		for i := 0; i <= len(tt.s); i++ {
			for j := i; j <= len(tt.s); j++ {
				var u utf8Stream
				ok := u.write([]byte(tt.s[:i])) && u.write([]byte(tt.s[i:j])) && u.write([]byte(tt.s[j:])) && u.flush()
				if ok != tt.valid {
					t.Errorf("%+q cut at %d,%d: valid %v, want %v", tt.s, i, j, ok, tt.valid)
				}
			}
		}
	}
}

// TestReadSwappedBeforeOpen replaces a checked file by a symlink to .env
// between resolving and opening it: the opened file is not the one checked,
// so the read starts over and refuses it.
func TestReadSwappedBeforeOpen(t *testing.T) {
	e := newEnv(t)
	e.write(t, ".env", "ENV-MARKER\n")
	e.write(t, "notes.txt", "notes\n")
	r := NewReader(Limits{})
	swaps := 0
	r.beforeOpen = func() {
		if fi, err := os.Lstat(e.abs("notes.txt")); err != nil || !fi.Mode().IsRegular() {
			return
		}
		swaps++
		if err := os.Remove(e.abs("notes.txt")); err != nil {
			t.Error(err)
		}
		e.symlink(t, ".env", "notes.txt")
	}
	got := e.read(t, r, false, Request{Path: "notes.txt"})
	want := []Item{{Path: "notes.txt", Error: &ItemError{Code: CodeSensitiveFile, Message: "refused: the file may hold secrets (.env, private key, credentials); send allowSensitive: true to read it"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	if swaps != 1 {
		t.Errorf("%d swaps, want 1", swaps)
	}
}
