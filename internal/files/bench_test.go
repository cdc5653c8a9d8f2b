package files

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func BenchmarkRead4KiB(b *testing.B) { benchmarkRead(b, 4<<10) }

func BenchmarkRead1MiB(b *testing.B) { benchmarkRead(b, 1<<20) }

// benchmarkRead reads a text file of size bytes (80-character lines) with the
// default window, beside os.ReadFile of the same file as a baseline.
func benchmarkRead(b *testing.B, size int) {
	dir := b.TempDir()
	line := strings.Repeat("x", 79) + "\n"
	content := strings.Repeat(line, size/len(line)+1)[:size]
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	b.Run("files.Reader", func(b *testing.B) {
		r := NewReader(Limits{})
		reqs := []Request{{Path: "f.txt"}}
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			items, err := r.Read(context.Background(), root, reqs, false)
			if err != nil || items[0].Error != nil {
				b.Fatal(err, items[0].Error)
			}
		}
	})
	b.Run("baseline-os.ReadFile", func(b *testing.B) {
		p := filepath.Join(dir, "f.txt")
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := os.ReadFile(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
