package instructions

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// ForPath is Batch.ForPath reading every directory afresh, the reference
// the Batch tests compare against.
func (f *Finder) ForPath(ctx context.Context, rel string) ([]File, error) {
	return f.forPath(ctx, rel, f.chooseIn)
}

// env is a temp dir holding a Project root ("proj") and a sibling directory
// outside it ("outside").
type env struct {
	proj, outside string
}

func newEnv(t *testing.T) env {
	t.Helper()
	dir := t.TempDir()
	e := env{proj: filepath.Join(dir, "proj"), outside: filepath.Join(dir, "outside")}
	for _, d := range []string{e.proj, e.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// write creates rel (slash-separated, below the Project) with content.
func (e env) write(t testing.TB, rel, content string) {
	t.Helper()
	p := filepath.Join(e.proj, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (e env) mkdir(t *testing.T, rel string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(e.proj, filepath.FromSlash(rel)), 0o755); err != nil {
		t.Fatal(err)
	}
}

// symlink creates the link rel (below the Project) pointing at target as given.
func (e env) symlink(t *testing.T, target, rel string) {
	t.Helper()
	p := filepath.Join(e.proj, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func (e env) finder(t *testing.T, opts Options) (*Finder, *os.Root) {
	t.Helper()
	root, err := os.OpenRoot(e.proj)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	f, err := New(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	return f, root
}

func repoFile(path, content string) File {
	return NewFile(path, TrustRepository, []byte(content))
}

func TestRootChoice(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, e env)
		opts  Options
		want  []File
	}{
		{
			name:  "none",
			setup: func(t *testing.T, e env) { e.write(t, "README.md", "hello\n") },
		},
		{
			name:  "AGENTS.md only",
			setup: func(t *testing.T, e env) { e.write(t, "AGENTS.md", "use tabs\n") },
			want:  []File{repoFile("AGENTS.md", "use tabs\n")},
		},
		{
			name: "override replaces AGENTS.md",
			setup: func(t *testing.T, e env) {
				e.write(t, "AGENTS.md", "base\n")
				e.write(t, "AGENTS.override.md", "override\n")
			},
			want: []File{repoFile("AGENTS.override.md", "override\n")},
		},
		{
			name:  "lower-case variant",
			setup: func(t *testing.T, e env) { e.write(t, "agents.md", "lower\n") },
			want:  []File{repoFile("agents.md", "lower\n")},
		},
		{
			name:  "upper-case extension",
			setup: func(t *testing.T, e env) { e.write(t, "AGENTS.MD", "upper ext\n") },
			want:  []File{repoFile("AGENTS.MD", "upper ext\n")},
		},
		{
			name: "case variants taken in byte order",
			setup: func(t *testing.T, e env) {
				e.write(t, "agents.md", "lower\n")
				e.write(t, "Agents.md", "title\n")
				e.write(t, "AGENTS.md", "upper\n")
			},
			want: []File{repoFile("AGENTS.md", "upper\n")},
		},
		{
			name: "case variants without the canonical name",
			setup: func(t *testing.T, e env) {
				e.write(t, "agents.MD", "lower\n")
				e.write(t, "Agents.md", "title\n")
			},
			want: []File{repoFile("Agents.md", "title\n")},
		},
		{
			name: "unusable first variant falls through to the next",
			setup: func(t *testing.T, e env) {
				e.mkdir(t, "AGENTS.md")
				e.write(t, "agents.md", "lower\n")
			},
			want: []File{repoFile("agents.md", "lower\n")},
		},
		{
			name: "override case variant wins",
			setup: func(t *testing.T, e env) {
				e.write(t, "AGENTS.md", "base\n")
				e.write(t, "agents.OVERRIDE.md", "override\n")
			},
			want: []File{repoFile("agents.OVERRIDE.md", "override\n")},
		},
		{
			name:  "non-ASCII look-alike does not match",
			setup: func(t *testing.T, e env) { e.write(t, "AGENTſ.md", "long s\n") },
		},
		{
			name:  "fallback ignored unless configured",
			setup: func(t *testing.T, e env) { e.write(t, "CLAUDE.md", "claude\n") },
		},
		{
			name:  "configured fallback, case-insensitive",
			setup: func(t *testing.T, e env) { e.write(t, "claude.md", "claude\n") },
			opts:  Options{Fallbacks: []string{"CLAUDE.md"}},
			want:  []File{repoFile("claude.md", "claude\n")},
		},
		{
			name: "fallbacks in configured order",
			setup: func(t *testing.T, e env) {
				e.write(t, "GEMINI.md", "gemini\n")
				e.write(t, "CLAUDE.md", "claude\n")
			},
			opts: Options{Fallbacks: []string{"CLAUDE.md", "GEMINI.md"}},
			want: []File{repoFile("CLAUDE.md", "claude\n")},
		},
		{
			name: "AGENTS.md beats a fallback",
			setup: func(t *testing.T, e env) {
				e.write(t, "CLAUDE.md", "claude\n")
				e.write(t, "AGENTS.md", "agents\n")
			},
			opts: Options{Fallbacks: []string{"CLAUDE.md"}},
			want: []File{repoFile("AGENTS.md", "agents\n")},
		},
		{
			name: "fallback repeating a default name is dropped",
			setup: func(t *testing.T, e env) {
				e.write(t, "AGENTS.md", "agents\n")
			},
			opts: Options{Fallbacks: []string{"agents.md"}},
			want: []File{repoFile("AGENTS.md", "agents\n")},
		},
		{
			name: "symlink leaving the root ignored",
			setup: func(t *testing.T, e env) {
				writeOutside(t, e, "secret.md", "outside secret\n")
				e.symlink(t, "../outside/secret.md", "AGENTS.md")
			},
		},
		{
			name: "escaping override falls through to AGENTS.md",
			setup: func(t *testing.T, e env) {
				writeOutside(t, e, "secret.md", "outside secret\n")
				e.symlink(t, "../outside/secret.md", "AGENTS.override.md")
				e.write(t, "AGENTS.md", "agents\n")
			},
			want: []File{repoFile("AGENTS.md", "agents\n")},
		},
		{
			name: "symlink through an escaping directory ignored",
			setup: func(t *testing.T, e env) {
				writeOutside(t, e, "AGENTS.md", "outside secret\n")
				e.symlink(t, "..", "up")
				e.symlink(t, "up/outside/AGENTS.md", "AGENTS.md")
			},
		},
		{
			name: "symlink inside the root followed",
			setup: func(t *testing.T, e env) {
				e.write(t, "docs/guide.md", "guide\n")
				e.symlink(t, "docs/guide.md", "AGENTS.md")
			},
			want: []File{repoFile("AGENTS.md", "guide\n")},
		},
		{
			name: "absolute symlink ignored even when it points inside",
			setup: func(t *testing.T, e env) {
				e.write(t, "docs/guide.md", "guide\n")
				e.symlink(t, filepath.Join(e.proj, "docs", "guide.md"), "AGENTS.md")
			},
		},
		{
			name:  "dangling symlink ignored",
			setup: func(t *testing.T, e env) { e.symlink(t, "missing.md", "AGENTS.md") },
		},
		{
			name: "dangling override falls through",
			setup: func(t *testing.T, e env) {
				e.symlink(t, "missing.md", "AGENTS.override.md")
				e.write(t, "AGENTS.md", "agents\n")
			},
			want: []File{repoFile("AGENTS.md", "agents\n")},
		},
		{
			name:  "directory named AGENTS.md ignored",
			setup: func(t *testing.T, e env) { e.write(t, "AGENTS.md/inner.md", "inner\n") },
		},
		{
			name: "symlink to a directory ignored",
			setup: func(t *testing.T, e env) {
				e.mkdir(t, "docs")
				e.symlink(t, "docs", "AGENTS.md")
			},
		},
		{
			name: "empty override silences AGENTS.md",
			setup: func(t *testing.T, e env) {
				e.write(t, "AGENTS.override.md", "")
				e.write(t, "AGENTS.md", "agents\n")
			},
		},
		{
			name:  "white-space-only file contributes nothing",
			setup: func(t *testing.T, e env) { e.write(t, "AGENTS.md", " \n\t\n") },
		},
		{
			name:  "NUL-only file contributes nothing",
			setup: func(t *testing.T, e env) { e.write(t, "AGENTS.md", "\x00\x00") },
		},
		{
			name:  "invalid UTF-8 and NUL sanitized",
			setup: func(t *testing.T, e env) { e.write(t, "AGENTS.md", "a\x00b\xff\xfec\n") },
			want: []File{{
				Path:    "AGENTS.md",
				Trust:   TrustRepository,
				Content: "ab\uFFFDc\n",
				Hash:    digest("ab\uFFFDc\n"),
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			tt.setup(t, e)
			f, _ := e.finder(t, tt.opts)
			got, err := f.Root(context.Background())
			if err != nil {
				t.Fatalf("Root: %v", err)
			}
			if diff := cmp.Diff(tt.want, got.Files); diff != "" {
				t.Errorf("Root files (-want +got):\n%s", diff)
			}
			if len(tt.want) == 0 {
				if diff := cmp.Diff(&Set{}, got); diff != "" {
					t.Errorf("Root of no files is not an empty Set (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func writeOutside(t *testing.T, e env, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.outside, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRootRefusesEscapingSymlink checks the mechanism the Finder relies on:
// the os.Root itself refuses to open a symlink leading out.
func TestRootRefusesEscapingSymlink(t *testing.T) {
	e := newEnv(t)
	writeOutside(t, e, "secret.md", "outside secret\n")
	e.symlink(t, "../outside/secret.md", "AGENTS.md")
	_, root := e.finder(t, Options{})
	if _, err := root.Stat("AGENTS.md"); err == nil {
		t.Error("root.Stat of an escaping symlink succeeded")
	}
	if h, err := root.Open("AGENTS.md"); err == nil {
		h.Close()
		t.Error("root.Open of an escaping symlink succeeded")
	}
}

func TestRootUnreadableFileIgnored(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads files regardless of their mode")
	}
	e := newEnv(t)
	e.write(t, "AGENTS.override.md", "secret\n")
	e.write(t, "AGENTS.md", "agents\n")
	if err := os.Chmod(filepath.Join(e.proj, "AGENTS.override.md"), 0); err != nil {
		t.Fatal(err)
	}
	f, _ := e.finder(t, Options{})
	got, err := f.Root(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]File{repoFile("AGENTS.md", "agents\n")}, got.Files); diff != "" {
		t.Errorf("Root files (-want +got):\n%s", diff)
	}
}

func TestRootTruncatesLargeFile(t *testing.T) {
	// "x" then two-byte runes: byte MaxFileBytes-1 starts a rune whose second
	// byte lies beyond the cap, so the cut must drop that byte too.
	body := "x" + strings.Repeat("é", MaxFileBytes)
	e := newEnv(t)
	e.write(t, "AGENTS.md", body)
	f, _ := e.finder(t, Options{})
	set, err := f.Root(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Files) != 1 {
		t.Fatalf("got %d files, want 1", len(set.Files))
	}
	got := set.Files[0]
	want := File{
		Path:      "AGENTS.md",
		Trust:     TrustRepository,
		Content:   body[:MaxFileBytes-1] + TruncationMarker,
		Truncated: true,
	}
	want.Hash = digest(want.Content)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("truncated file (-want +got):\n%s", diff)
	}
	if !utf8.ValidString(got.Content) {
		t.Error("truncated content is not valid UTF-8")
	}
}

func TestNewFileAtCapNotTruncated(t *testing.T) {
	data := strings.Repeat("a", MaxFileBytes)
	got := NewFile("AGENTS.md", TrustRepository, []byte(data))
	if got.Truncated || got.Content != data {
		t.Errorf("file of exactly MaxFileBytes: Truncated=%v, len(Content)=%d", got.Truncated, len(got.Content))
	}
}

func TestTruncationMarkerNamesLimit(t *testing.T) {
	if !strings.Contains(TruncationMarker, " "+strconv.Itoa(MaxFileBytes)+" bytes") {
		t.Errorf("TruncationMarker %q does not name MaxFileBytes %d", TruncationMarker, MaxFileBytes)
	}
}

func TestRevision(t *testing.T) {
	e := newEnv(t)
	e.write(t, "AGENTS.md", "one\n")
	f, _ := e.finder(t, Options{})
	small, _ := e.finder(t, Options{PageBytes: MinPageBytes})
	ctx := context.Background()

	root := func(f *Finder) *Set {
		t.Helper()
		s, err := f.Root(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first := root(f)
	if !strings.HasPrefix(first.Revision, "sha256:") || len(first.Revision) != len("sha256:")+64 {
		t.Errorf("Revision = %q, want sha256:<64 hex>", first.Revision)
	}
	if again := root(f); again.Revision != first.Revision {
		t.Errorf("Revision changed without a change: %q then %q", first.Revision, again.Revision)
	}
	if other := root(small); other.Revision != first.Revision {
		t.Errorf("Revision depends on the page size: %q vs %q", first.Revision, other.Revision)
	}
	e.write(t, "AGENTS.md", "two\n")
	if changed := root(f); changed.Revision == first.Revision {
		t.Errorf("Revision %q unchanged after the file changed", changed.Revision)
	}
	e.write(t, "AGENTS.override.md", "two\n")
	if renamed := root(f); renamed.Revision == first.Revision {
		t.Errorf("Revision unchanged after another file was chosen")
	}
}

func TestForPath(t *testing.T) {
	e := newEnv(t)
	e.write(t, "AGENTS.md", "root\n")
	e.write(t, "a/AGENTS.md", "a\n")
	e.write(t, "a/b/AGENTS.md", "b\n")
	e.write(t, "a/b/c.go", "package c\n")
	e.write(t, "a/b/d/AGENTS.md", "d base\n")
	e.write(t, "a/b/d/AGENTS.override.md", "d override\n")
	e.write(t, "x/y.go", "package y\n")
	writeOutside(t, e, "AGENTS.md", "outside secret\n")
	e.symlink(t, "../outside", "out")
	e.symlink(t, "a", "link")

	a, ab, abd := repoFile("a/AGENTS.md", "a\n"), repoFile("a/b/AGENTS.md", "b\n"), repoFile("a/b/d/AGENTS.override.md", "d override\n")
	tests := []struct {
		rel  string
		want []File
	}{
		{"a/b/c.go", []File{a, ab}},
		{"a/b", []File{a, ab}},
		{"a/b/d/new.go", []File{a, ab, abd}},
		{"a/b/AGENTS.md", []File{a, ab}},
		{"a/new/deeper/f.go", []File{a}},
		{"a", []File{a}},
		{"c.go", []File{}},
		{"AGENTS.md", []File{}},
		{".", []File{}},
		{"x/y.go", []File{}},
		{"out/f.go", []File{}},
		{"out", []File{}},
		{"link/b/c.go", []File{repoFile("link/AGENTS.md", "a\n"), repoFile("link/b/AGENTS.md", "b\n")}},
	}
	f, _ := e.finder(t, Options{})
	for _, tt := range tests {
		t.Run(tt.rel, func(t *testing.T) {
			got, err := f.ForPath(context.Background(), tt.rel)
			if err != nil {
				t.Fatalf("ForPath(%q): %v", tt.rel, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ForPath(%q) (-want +got):\n%s", tt.rel, diff)
			}
		})
	}
}

func TestForPathBadPath(t *testing.T) {
	e := newEnv(t)
	e.write(t, "a/AGENTS.md", "a\n")
	f, _ := e.finder(t, Options{})
	for _, rel := range []string{
		"../x", "/etc/passwd", "a/../../x", "a/../x", "a\x00b", "", "a//b", "./a", "a/./b", "a/", "/", "..", "\xff",
	} {
		got, err := f.ForPath(context.Background(), rel)
		if !errors.Is(err, ErrBadPath) {
			t.Errorf("ForPath(%q) = %v, %v; want an error wrapping ErrBadPath", rel, got, err)
		}
	}
}

func TestCanceledContext(t *testing.T) {
	e := newEnv(t)
	e.write(t, "AGENTS.md", "root\n")
	e.write(t, "a/AGENTS.md", "a\n")
	f, _ := e.finder(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Root(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Root with a canceled context: %v, want context.Canceled", err)
	}
	if _, err := f.ForPath(ctx, "a/b.go"); !errors.Is(err, context.Canceled) {
		t.Errorf("ForPath with a canceled context: %v, want context.Canceled", err)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	e := newEnv(t)
	root, err := os.OpenRoot(e.proj)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	tests := []struct {
		name string
		root *os.Root
		opts Options
	}{
		{"nil root", nil, Options{}},
		{"page too small", root, Options{PageBytes: MinPageBytes - 1}},
		{"negative page", root, Options{PageBytes: -1}},
		{"empty fallback", root, Options{Fallbacks: []string{""}}},
		{"dot fallback", root, Options{Fallbacks: []string{".."}}},
		{"fallback with slash", root, Options{Fallbacks: []string{"docs/AGENTS.md"}}},
		{"fallback with backslash", root, Options{Fallbacks: []string{`docs\AGENTS.md`}}},
		{"fallback with NUL", root, Options{Fallbacks: []string{"A\x00.md"}}},
		{"fallback with newline", root, Options{Fallbacks: []string{"A\n.md"}}},
		{"fallback invalid UTF-8", root, Options{Fallbacks: []string{"\xff.md"}}},
		{"fallback too long", root, Options{Fallbacks: []string{strings.Repeat("a", 256)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if f, err := New(tt.root, tt.opts); err == nil {
				t.Errorf("New = %v, nil; want an error", f)
			}
		})
	}
}

func TestConcurrentUse(t *testing.T) {
	e := newEnv(t)
	e.write(t, "AGENTS.md", "root\n")
	e.write(t, "a/b/AGENTS.md", "b\n")
	f, _ := e.finder(t, Options{})
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if _, err := f.Root(ctx); err != nil {
					t.Error(err)
					return
				}
				if _, err := f.ForPath(ctx, "a/b/c.go"); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
