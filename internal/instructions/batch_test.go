package instructions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// batchTree is 200 files in 10 directories (as a large apply_patch),
// with instruction files at several levels, plus the cases of
// TestForPath; it returns the paths in the order a tool would pass them.
func batchTree(t testing.TB, e env) []string {
	t.Helper()
	e.write(t, "AGENTS.md", "root\n")
	for d := range 10 {
		switch d % 3 {
		case 0:
			e.write(t, fmt.Sprintf("pkg%02d/AGENTS.md", d), fmt.Sprintf("pkg%02d\n", d))
		case 1:
			e.write(t, fmt.Sprintf("pkg%02d/AGENTS.override.md", d), fmt.Sprintf("override %02d\n", d))
			e.write(t, fmt.Sprintf("pkg%02d/AGENTS.md", d), "hidden\n")
		}
	}
	e.write(t, "pkg04/sub/CLAUDE.md", "fallback\n")
	e.write(t, "pkg05/AGENTS.md", " \n") // empty: contributes nothing
	var paths []string
	for f := range 200 {
		p := fmt.Sprintf("pkg%02d/file%03d.go", f%10, f)
		if f%40 == 4 {
			p = fmt.Sprintf("pkg04/sub/file%03d.go", f)
		}
		e.write(t, p, "package x\n")
		paths = append(paths, p)
	}
	return append(paths, "pkg04/sub", "pkg04", "new/dir/f.go", ".", "pkg09/new.go", "../bad", "pkg00/file000.go")
}

func TestBatchMatchesForPath(t *testing.T) {
	e := newEnv(t)
	paths := batchTree(t, e)
	f, _ := e.finder(t, Options{Fallbacks: []string{"CLAUDE.md"}})
	ctx := context.Background()
	b := f.Batch()
	for _, p := range paths {
		want, wantErr := f.ForPath(ctx, p)
		got, err := b.ForPath(ctx, p)
		if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Errorf("Batch.ForPath(%q) error = %v, ForPath's = %v", p, err, wantErr)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Batch.ForPath(%q) (-ForPath +Batch):\n%s", p, diff)
		}
	}
}

// TestBatchReadsEachDirectoryOnce: within a Batch, what a directory
// contributes is read once; changes made meanwhile show in the next Batch.
func TestBatchReadsEachDirectoryOnce(t *testing.T) {
	e := newEnv(t)
	e.write(t, "a/AGENTS.md", "a\n")
	e.write(t, "a/one.go", "")
	e.write(t, "a/two.go", "")
	e.write(t, "b/one.go", "")
	f, _ := e.finder(t, Options{})
	ctx := context.Background()
	b := f.Batch()
	first := map[string][]File{}
	for _, p := range []string{"a/one.go", "b/one.go"} {
		files, err := b.ForPath(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		first[p] = files
	}
	e.write(t, "a/AGENTS.md", "a changed\n")
	e.write(t, "b/AGENTS.md", "b new\n")
	for _, tt := range []struct {
		rel  string
		want []File
	}{
		{"a/two.go", first["a/one.go"]},
		{"b/two.go", first["b/one.go"]},
	} {
		got, err := b.ForPath(ctx, tt.rel)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("same Batch, ForPath(%q) read the directory again (-first read +got):\n%s", tt.rel, diff)
		}
	}
	got, err := f.Batch().ForPath(ctx, "b/two.go")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]File{repoFile("b/AGENTS.md", "b new\n")}, got); diff != "" {
		t.Errorf("new Batch (-want +got):\n%s", diff)
	}
}

func TestBatchDoesNotRememberFailures(t *testing.T) {
	e := newEnv(t)
	e.write(t, "a/AGENTS.md", "a\n")
	f, _ := e.finder(t, Options{})
	b := f.Batch()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.ForPath(ctx, "a/x.go"); !errors.Is(err, context.Canceled) {
		t.Fatalf("ForPath with a canceled context: %v, want context.Canceled", err)
	}
	got, err := b.ForPath(context.Background(), "a/x.go")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]File{repoFile("a/AGENTS.md", "a\n")}, got); diff != "" {
		t.Errorf("after a failure (-want +got):\n%s", diff)
	}
}

// BenchmarkForPath200Paths looks up the instruction files of 200 paths
// in 10 directories, one ForPath per path (as InstructionsDelta did) and
// with a Batch.
func BenchmarkForPath200Paths(b *testing.B) {
	e := env{proj: filepath.Join(b.TempDir(), "proj")}
	if err := os.Mkdir(e.proj, 0o755); err != nil {
		b.Fatal(err)
	}
	paths := batchTree(b, e)
	root, err := os.OpenRoot(e.proj)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	f, err := New(root, Options{Fallbacks: []string{"CLAUDE.md"}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("ForPath", func(b *testing.B) {
		for b.Loop() {
			for _, p := range paths {
				_, _ = f.ForPath(ctx, p)
			}
		}
	})
	b.Run("Batch", func(b *testing.B) {
		for b.Loop() {
			batch := f.Batch()
			for _, p := range paths {
				_, _ = batch.ForPath(ctx, p)
			}
		}
	})
}
