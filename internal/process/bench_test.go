package process

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkExecTrue compares running `true` through the Manager (Start,
// then Wait until the exit is known: what exec_command needs before it can
// answer) with a bare os/exec run in the same process. Both report their
// p50 and p90 in microseconds. The wait for the previous tree's teardown
// (reaping, returning its supervisor to the pool), which a tool call does
// not wait for, happens outside the clock.
func BenchmarkExecTrue(b *testing.B) {
	// "spaced" leaves 100 ms between commands (untimed), as a model's
	// turns do: the next launcher is ready by then. Back to back, each
	// command waits for its launcher (a Go binary) to start.
	// "cgroup" gives each command its own cgroup (skipped where none is
	// delegated): a command waits for nothing there, because its launcher
	// was started in it.
	for _, tc := range []struct {
		name           string
		off            bool
		spaced, cgroup bool
	}{{"devspace", false, false, false}, {"devspace-sandbox-off", true, false, false},
		{"devspace-spaced", false, true, false}, {"devspace-sandbox-off-spaced", true, true, false},
		{"devspace-cgroup", false, false, true}, {"devspace-cgroup-spaced", false, true, true}} {
		b.Run(tc.name, func(b *testing.B) {
			m := newTestManager(b, Options{Sandbox: SandboxOptions{Off: tc.off}}, tc.cgroup)
			ctx := context.Background()
			spec := Spec{Program: "true", Dir: b.TempDir(), Env: BaseEnv(nil), CloseStdin: true}
			var last *Process
			measure(b, func() {
				if last != nil {
					<-last.Done()
					_ = last.Remove()
				}
				if tc.spaced {
					time.Sleep(100 * time.Millisecond)
				}
			}, func() {
				p, err := m.Start(ctx, "bench", spec)
				if err != nil {
					b.Fatal(err)
				}
				st, err := p.Wait(ctx, 10*time.Second)
				if err != nil || st.Status != StatusExited {
					b.Fatalf("%+v %v", st, err)
				}
				last = p
			})
		})
	}
	b.Run("os-exec", func(b *testing.B) {
		measure(b, func() {}, func() {
			if err := exec.Command("true").Run(); err != nil {
				b.Fatal(err)
			}
		})
	})
}

func measure(b *testing.B, setup, f func()) {
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		setup()
		b.StartTimer()
		t := time.Now()
		f()
		d = append(d, time.Since(t))
	}
	b.StopTimer()
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(d[len(d)*9/10].Microseconds()), "p90-µs")
}

// BenchmarkOutputThroughput streams a 64 MiB file through the spool
// (pipe and pty) next to `cat bigfile > /dev/null` and `cat bigfile | cat
// > /dev/null` (the same bytes through a pipe to a reader that keeps
// nothing), and through a pty next to script(1).
func BenchmarkOutputThroughput(b *testing.B) {
	const size = 64 << 20
	big := filepath.Join(b.TempDir(), "bigfile")
	if err := os.WriteFile(big, bytes.Repeat([]byte("0123456789abcdef"), size/16), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := "cat " + big
	for _, tc := range []struct {
		name string
		tty  bool
	}{{"pipe", false}, {"pty", true}} {
		b.Run(tc.name, func(b *testing.B) {
			m := newTestManager(b, Options{}, false)
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				p, err := m.Start(context.Background(), "bench", Spec{Shell: true, Command: cmd, Dir: "/", TTY: tc.tty})
				if err != nil {
					b.Fatal(err)
				}
				<-p.Done()
				if st := p.State(); st.OutputBytes < size {
					b.Fatalf("%+v", st)
				}
				_ = p.Remove()
			}
		})
	}
	// script(1) (util-linux) is the pty baseline: a terminal whose reader
	// keeps nothing.
	for name, baseline := range map[string]string{"cat-dev-null": cmd + " >/dev/null", "cat-pipe-cat": cmd + " | cat >/dev/null",
		"pty-script": "script -qc '" + cmd + "' /dev/null >/dev/null"} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				if err := exec.Command("sh", "-c", baseline).Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
