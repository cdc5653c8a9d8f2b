package patch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// benchTree is 200 files of 100 lines and two equivalent patches making
// five one-line changes (plus one added line) in each: 1,000 hunks.
type benchTree struct {
	files   map[string]string
	codex   string
	unified string
}

func newBenchTree() *benchTree {
	const nFiles, nLines = 200, 100
	changed := []int{10, 30, 50, 70, 90} // 1-based lines replaced
	bt := &benchTree{files: map[string]string{}}
	var codex, unified strings.Builder
	codex.WriteString("*** Begin Patch\n")
	for f := 0; f < nFiles; f++ {
		name := fmt.Sprintf("pkg%02d/file%03d.go", f%10, f)
		lines := make([]string, nLines)
		for i := range lines {
			lines[i] = fmt.Sprintf("\tfile%03d_line%03d := compute(%d, %q) // lorem ipsum dolor", f, i+1, i, name)
		}
		bt.files[name] = strings.Join(lines, "\n") + "\n"
		fmt.Fprintf(&codex, "*** Update File: %s\n", name)
		fmt.Fprintf(&unified, "diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n", name, name, name, name)
		for j, l := range changed {
			ctxBefore, old, ctxAfter := lines[l-4:l-1], lines[l-1], lines[l:l+3]
			repl := []string{strings.Replace(old, "compute", "computeFast", 1), "\t_ = 0 // added"}
			fmt.Fprintf(&unified, "@@ -%d,7 +%d,8 @@\n", l-3, l-3+j)
			codex.WriteString("@@\n")
			for _, w := range []*strings.Builder{&codex, &unified} {
				for _, c := range ctxBefore {
					w.WriteString(" " + c + "\n")
				}
				w.WriteString("-" + old + "\n")
				for _, r := range repl {
					w.WriteString("+" + r + "\n")
				}
				for _, c := range ctxAfter {
					w.WriteString(" " + c + "\n")
				}
			}
		}
	}
	codex.WriteString("*** End Patch\n")
	bt.codex, bt.unified = codex.String(), unified.String()
	return bt
}

// reset writes the tree's files, then syncs them: a patched file has
// usually been on disk for a while, and replacing a file whose first
// writeback is still pending costs anything from almost nothing (its
// blocks were never allocated) to a wait for the I/O, which made the
// numbers swing by a factor of two.
func (bt *benchTree) reset(b *testing.B, dir string) {
	for name, content := range bt.files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	syscall.Sync()
}

func BenchmarkApply1000Hunks200Files(b *testing.B) {
	bt := newBenchTree()
	devspace := func(b *testing.B, opts func(b *testing.B) Options) {
		dir := b.TempDir()
		bt.reset(b, dir)
		root, err := os.OpenRoot(dir)
		if err != nil {
			b.Fatal(err)
		}
		defer root.Close()
		pre := map[string]Precondition{}
		for name, content := range bt.files {
			pre[name] = Precondition{Set: true, ContentHash: HashContent([]byte(content))}
		}
		o := opts(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			bt.reset(b, dir)
			b.StartTimer()
			p, err := Parse(bt.codex)
			if err != nil {
				b.Fatal(err)
			}
			res, err := Apply(context.Background(), root, p, pre, o)
			if err != nil {
				b.Fatal(err)
			}
			if len(res.Files) != 200 || res.Files[0].Added != 10 {
				b.Fatalf("unexpected result %+v", res.Files[0])
			}
		}
	}
	b.Run("devspace", func(b *testing.B) {
		devspace(b, func(*testing.B) Options { return Options{} })
	})
	// With the intent record a server keeps (three fsyncs per patch).
	b.Run("devspace-intents", func(b *testing.B) {
		devspace(b, func(b *testing.B) Options {
			in, err := OpenIntents(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			return Options{Intents: in}
		})
	})
	b.Run("git-apply", func(b *testing.B) {
		git, err := exec.LookPath("git")
		if err != nil {
			b.Skip("git not installed")
		}
		dir, patchDir := b.TempDir(), b.TempDir()
		if out, err := exec.Command(git, "init", "-q", dir).CombinedOutput(); err != nil {
			b.Fatalf("git init: %v %s", err, out)
		}
		patchFile := filepath.Join(patchDir, "bench.diff")
		if err := os.WriteFile(patchFile, []byte(bt.unified), 0o644); err != nil {
			b.Fatal(err)
		}
		bt.reset(b, dir)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			bt.reset(b, dir)
			b.StartTimer()
			cmd := exec.Command(git, "apply", patchFile)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("git apply: %v %s", err, out)
			}
		}
		b.StopTimer()
		if got, want := readBench(b, dir, "pkg00/file000.go"), strings.Count(bt.files["pkg00/file000.go"], "\n")+5; strings.Count(got, "\n") != want {
			b.Fatalf("git apply produced %d lines, want %d", strings.Count(got, "\n"), want)
		}
	})
}

func readBench(b *testing.B, dir, name string) string {
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		b.Fatal(err)
	}
	return string(data)
}
