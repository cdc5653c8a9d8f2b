package patch

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/devspace-dev/devspace/internal/testutil"
)

// resetBench writes the benchmark's files into dir, then syncs them: a
// patched file has usually been on disk for a while, and replacing a file
// whose first writeback is still pending costs anything from almost
// nothing (its blocks were never allocated) to a wait for the I/O, which
// made the numbers swing by a factor of two.
func resetBench(b *testing.B, pb *testutil.PatchBench, dir string) {
	for name, content := range pb.Files {
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
	pb := testutil.NewPatchBench("")
	devspace := func(b *testing.B, opts func(b *testing.B) Options) {
		dir := b.TempDir()
		resetBench(b, pb, dir)
		root, err := os.OpenRoot(dir)
		if err != nil {
			b.Fatal(err)
		}
		defer root.Close()
		pre := map[string]Precondition{}
		for name, content := range pb.Files {
			pre[name] = Precondition{Set: true, ContentHash: HashContent([]byte(content))}
		}
		o := opts(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			resetBench(b, pb, dir)
			b.StartTimer()
			p, err := Parse(pb.Codex)
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
			b.Fatal(err)
		}
		dir, patchDir := b.TempDir(), b.TempDir()
		if out, err := exec.Command(git, "init", "-q", dir).CombinedOutput(); err != nil {
			b.Fatalf("git init: %v %s", err, out)
		}
		patchFile := filepath.Join(patchDir, "bench.diff")
		if err := os.WriteFile(patchFile, []byte(pb.Unified), 0o644); err != nil {
			b.Fatal(err)
		}
		resetBench(b, pb, dir)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			resetBench(b, pb, dir)
			b.StartTimer()
			cmd := exec.Command(git, "apply", patchFile)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("git apply: %v %s", err, out)
			}
		}
		b.StopTimer()
		if got, want := readBench(b, dir, "pkg00/file000.go"), strings.Count(pb.Files["pkg00/file000.go"], "\n")+5; strings.Count(got, "\n") != want {
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
