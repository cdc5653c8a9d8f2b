package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func startT(t *testing.T, m *Manager, spec Spec) *Process {
	t.Helper()
	if spec.Dir == "" {
		spec.Dir = t.TempDir()
	}
	p, err := m.Start(context.Background(), "exec1", spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return p
}

func waitExit(t *testing.T, p *Process, d time.Duration) State {
	t.Helper()
	st, err := p.Wait(context.Background(), d)
	if err != nil || st.Status == StatusRunning {
		t.Fatalf("still running after %s: %+v %v", d, st, err)
	}
	return st
}

func TestExitStatusAndOutput(t *testing.T) {
	m := newTestManager(t, Options{}, false)
	tests := []struct {
		name       string
		spec       Spec
		wantCode   int // -1: killed by a signal
		wantSignal string
		wantOutput string
	}{
		{name: "true", spec: Spec{Program: "true"}, wantCode: 0},
		{name: "exit_code", spec: sh("exit 3"), wantCode: 3},
		{name: "signal", spec: sh("kill -TERM $$"), wantCode: -1, wantSignal: "SIGTERM"},
		{name: "stdout_and_stderr_combined", spec: sh("echo a; echo b >&2; echo c"), wantOutput: "a\nb\nc\n"},
		{name: "args_not_split", spec: Spec{Program: "printf", Args: []string{"%s|", "a b", "$HOME"}}, wantOutput: "a b|$HOME|"},
		{name: "output_before_background_exit", spec: sh("echo before; sleep 1000 & echo after"), wantOutput: "before\nafter\n"},
		{name: "working_directory", spec: sh("pwd"), wantOutput: "/\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			if tc.name == "working_directory" {
				spec.Dir = "/"
			}
			p := startT(t, m, spec)
			st := waitExit(t, p, 10*time.Second)
			if tc.wantCode >= 0 && (st.ExitCode == nil || *st.ExitCode != tc.wantCode) {
				t.Errorf("exit code = %v, want %d", st.ExitCode, tc.wantCode)
			}
			if tc.wantCode < 0 && (st.ExitCode != nil || st.Signal != tc.wantSignal) {
				t.Errorf("exit = %v/%q, want signal %s", st.ExitCode, st.Signal, tc.wantSignal)
			}
			if st.Status != StatusExited {
				t.Errorf("status = %q", st.Status)
			}
			if got := string(p.Head(1 << 20)); got != tc.wantOutput {
				t.Errorf("output = %q, want %q (Wait must return only once the output is in)", got, tc.wantOutput)
			}
			_ = p.Kill("close")
		})
	}
}

func TestWaitBounded(t *testing.T) {
	m := newTestManager(t, Options{}, false)
	p := startT(t, m, Spec{Program: "sleep", Args: []string{"0.5"}})
	st, err := p.Wait(context.Background(), 50*time.Millisecond)
	if err != nil || st.Status != StatusRunning || st.EndedAt != (time.Time{}) {
		t.Fatalf("Wait(50ms) = %+v, %v; want running", st, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Wait(ctx, time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with a done ctx = %v", err)
	}
	st = waitExit(t, p, 10*time.Second)
	if st.ExitCode == nil || *st.ExitCode != 0 || st.EndedAt.Sub(st.StartedAt) < 400*time.Millisecond {
		t.Errorf("state = %+v", st)
	}
	waitDone(t, p, 5*time.Second)
}

func TestSpawnFailure(t *testing.T) {
	m := newTestManager(t, Options{}, false)
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk")
	if err := os.WriteFile(junk, []byte{0x7f, 'E', 'L', 'F', 0, 1, 2, 3}, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		spec Spec
		want error
	}{
		{name: "program_not_in_path", spec: Spec{Program: "devspace-no-such-program", Dir: dir}, want: ErrSpawn},
		{name: "absolute_missing", spec: Spec{Program: "/nonexistent/bin/tool", Dir: dir}, want: ErrSpawn},
		{name: "missing_directory", spec: Spec{Program: "true", Dir: filepath.Join(dir, "missing")}, want: ErrSpawn},
		{name: "not_an_executable", spec: Spec{Program: "./junk", Dir: dir}, want: ErrSpawn},
		{name: "both_modes", spec: Spec{Program: "true", Shell: true, Command: "true", Dir: dir}, want: ErrInvalidSpec},
		{name: "no_mode", spec: Spec{Dir: dir}, want: ErrInvalidSpec},
		{name: "command_without_shell", spec: Spec{Command: "true", Dir: dir}, want: ErrInvalidSpec},
		{name: "relative_directory", spec: Spec{Program: "true", Dir: "rel"}, want: ErrInvalidSpec},
		{name: "timeout_too_long", spec: Spec{Program: "true", Dir: dir, Timeout: 7 * time.Hour}, want: ErrInvalidSpec},
		{name: "nul_in_argument", spec: Spec{Program: "echo", Args: []string{"a\x00b"}, Dir: dir}, want: ErrInvalidSpec},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := m.Start(context.Background(), "exec1", tc.spec)
			if !errors.Is(err, tc.want) || p != nil {
				t.Fatalf("Start = %v, %v; want %v", p, err, tc.want)
			}
			if strings.Contains(err.Error(), dir) {
				t.Errorf("error reveals a host path: %v", err)
			}
		})
	}
	if n := m.Running(); n != 0 {
		t.Errorf("Running = %d after failed starts", n)
	}
	entries, _ := os.ReadDir(m.opts.SpoolDir)
	if len(entries) != 0 {
		t.Errorf("failed starts left %d spool files", len(entries))
	}
	assertNoZombies(t)
}

func TestLimits(t *testing.T) {
	m := newTestManager(t, Options{MaxLive: 3, MaxPerGroup: 2}, false)
	start := func(group string) (*Process, error) {
		return m.Start(context.Background(), group, Spec{Program: "sleep", Args: []string{"1000"}, Dir: "/"})
	}
	a1, _ := start("a")
	if _, err := start("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := start("a"); !errors.Is(err, ErrTooMany) {
		t.Errorf("third in group = %v, want ErrTooMany", err)
	}
	if _, err := start("b"); err != nil {
		t.Fatal(err)
	}
	if _, err := start("c"); !errors.Is(err, ErrAllBusy) {
		t.Errorf("fourth live = %v, want ErrAllBusy", err)
	}
	if err := a1.Kill("close"); err != nil {
		t.Fatal(err)
	}
	if _, err := start("c"); err != nil {
		t.Errorf("after a kill: %v", err)
	}
	if n := m.KillGroup("a", "close") + m.KillGroup("b", "close") + m.KillGroup("c", "close"); n != 3 {
		t.Errorf("killed %d, want 3", n)
	}
	if m.Running() != 0 {
		t.Errorf("Running = %d", m.Running())
	}
}

func TestStdinPipe(t *testing.T) {
	m := newTestManager(t, Options{}, false)
	t.Run("initial_stdin_closed", func(t *testing.T) {
		p := startT(t, m, Spec{Program: "cat", Stdin: []byte("abc\n"), CloseStdin: true})
		st := waitExit(t, p, 10*time.Second)
		if got := string(p.Head(100)); got != "abc\n" || *st.ExitCode != 0 {
			t.Errorf("output %q, state %+v", got, st)
		}
	})
	t.Run("dev_null", func(t *testing.T) {
		p := startT(t, m, Spec{Program: "cat", CloseStdin: true})
		st := waitExit(t, p, 10*time.Second)
		if *st.ExitCode != 0 || !st.StdinClosed {
			t.Errorf("state %+v", st)
		}
		if err := p.WriteStdin([]byte("x"), nil); !errors.Is(err, ErrNotRunning) {
			t.Errorf("WriteStdin after exit = %v", err)
		}
	})
	t.Run("revision_conflict", func(t *testing.T) {
		p := startT(t, m, Spec{Program: "cat"})
		st := p.State()
		stale := st.Revision - 1
		if err := p.WriteStdin([]byte("lost\n"), &stale); !errors.Is(err, ErrRevisionConflict) {
			t.Fatalf("stale revision: %v", err)
		}
		rev := st.Revision
		if err := p.WriteStdin([]byte("one\n"), &rev); err != nil {
			t.Fatalf("current revision: %v", err)
		}
		if err := p.WriteStdin([]byte("two\n"), &rev); !errors.Is(err, ErrRevisionConflict) {
			t.Fatalf("reused revision after a write: %v", err)
		}
		waitOutput(t, p, "one\n", 10*time.Second)
		p.CloseStdin()
		if err := p.WriteStdin([]byte("late"), nil); !errors.Is(err, ErrStdinClosed) {
			t.Errorf("after CloseStdin: %v", err)
		}
		st = waitExit(t, p, 10*time.Second)
		if got := string(p.Head(100)); got != "one\n" || *st.ExitCode != 0 {
			t.Errorf("output %q, state %+v", got, st)
		}
	})
	t.Run("not_reading", func(t *testing.T) {
		p := startT(t, m, Spec{Program: "sleep", Args: []string{"1000"}})
		big := bytes.Repeat([]byte("x"), MaxStdinBytes)
		var err error
		for i := 0; i < 8 && err == nil; i++ {
			err = p.WriteStdin(big, nil)
		}
		if !errors.Is(err, ErrStdinFull) {
			t.Errorf("queue never filled: %v", err)
		}
		if err := p.WriteStdin(append(big, 'x'), nil); !errors.Is(err, ErrStdinFull) {
			t.Errorf("oversized write: %v", err)
		}
		if err := p.Kill("close"); err != nil {
			t.Fatal(err)
		}
	})
}

func TestPTY(t *testing.T) {
	m := newTestManager(t, Options{}, false)
	t.Run("cat_interrupt", func(t *testing.T) {
		p := startT(t, m, Spec{Program: "cat", TTY: true})
		if err := p.WriteStdin([]byte("hello-pty\n"), nil); err != nil {
			t.Fatal(err)
		}
		waitOutput(t, p, "hello-pty\r\nhello-pty\r\n", 10*time.Second) // echo, then cat
		if err := p.Interrupt(); err != nil {
			t.Fatal(err)
		}
		st := waitExit(t, p, 10*time.Second)
		if st.Signal != "SIGINT" || st.Status != StatusExited || !st.Interrupted {
			t.Errorf("state %+v", st)
		}
		waitDone(t, p, 5*time.Second)
	})
	t.Run("cat_eof", func(t *testing.T) {
		p := startT(t, m, Spec{Program: "cat", TTY: true, Stdin: []byte("line\n"), CloseStdin: true})
		st := waitExit(t, p, 10*time.Second)
		if st.ExitCode == nil || *st.ExitCode != 0 {
			t.Errorf("state %+v, output %q", st, p.Head(200))
		}
	})
	t.Run("interactive_bash", func(t *testing.T) {
		p := startT(t, m, Spec{Program: "bash", Args: []string{"--norc", "--noprofile", "-i"}, TTY: true})
		if err := p.WriteStdin([]byte("echo $((40+2))-ok\n"), nil); err != nil {
			t.Fatal(err)
		}
		waitOutput(t, p, "42-ok", 10*time.Second)
		if err := p.WriteStdin([]byte("sleep 1000; echo slept-$?\n"), nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		if err := p.Interrupt(); err != nil {
			t.Fatal(err)
		}
		// The foreground sleep dies; interactive bash survives and goes on.
		if err := p.WriteStdin([]byte("echo after-$((6*7))\n"), nil); err != nil {
			t.Fatal(err)
		}
		waitOutput(t, p, "after-42", 10*time.Second)
		if strings.Contains(string(p.Head(1<<20)), "slept-0") {
			t.Errorf("the interrupt did not reach the foreground job: %q", p.Head(4096))
		}
		if err := p.WriteStdin([]byte("exit 7\n"), nil); err != nil {
			t.Fatal(err)
		}
		st := waitExit(t, p, 10*time.Second)
		if st.ExitCode == nil || *st.ExitCode != 7 {
			t.Errorf("state %+v, output %q", st, p.Head(4096))
		}
		waitDone(t, p, 5*time.Second)
	})
}

func TestOutputFlood(t *testing.T) {
	floods := []struct {
		name string
		spec Spec
		unit string
	}{
		{name: "yes", spec: Spec{Program: "yes"}, unit: "y\n"},
		{name: "stderr_only", spec: sh("yes err >&2"), unit: "err\n"},
		{name: "ansi_under_pty", spec: Spec{Program: "yes", Args: []string{"\x1b[31mred\x1b[0m"}, TTY: true}, unit: "\x1b[31mred\x1b[0m\r\n"},
	}
	for _, f := range floods {
		t.Run(f.name, func(t *testing.T) {
			m := newTestManager(t, Options{}, false)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			spec := f.spec
			spec.MaxOutputBytes = 1 << 20
			p := startT(t, m, spec)
			deadline := time.Now().Add(3 * time.Second)
			for p.State().OutputBytes < 64<<20 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			if err := p.Kill("close"); err != nil {
				t.Fatal(err)
			}
			st := p.State()
			delta := int64(after.HeapInuse) - int64(before.HeapInuse)
			t.Logf("%s: produced %d MiB, retained %d bytes, heap in use %+d KiB", f.name, st.OutputBytes>>20, st.RetainedBytes, delta>>10)
			if st.RetainedBytes != 1<<20 || p.Size() != 1<<20 || !st.Truncated || st.OutputBytes <= 2<<20 {
				t.Errorf("state %+v", st)
			}
			fi, err := os.Stat(p.out.path)
			if err != nil || fi.Size() != 1<<20 {
				t.Errorf("spool file: %v, %v", fi, err)
			}
			if delta > 8<<20 {
				t.Errorf("heap grew by %d KiB", delta>>10)
			}
			tail := p.Tail(4 * len(f.unit))
			if len(tail) != 4*len(f.unit) || !strings.Contains(string(tail), f.unit) {
				t.Errorf("Tail = %q", tail)
			}
			if err := p.Remove(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(p.out.path); !os.IsNotExist(err) {
				t.Errorf("Remove left the spool: %v", err)
			}
		})
	}
}

func TestKillOnOutputLimit(t *testing.T) {
	met := &testMetrics{}
	m := newTestManager(t, Options{Metrics: met}, false)
	p := startT(t, m, Spec{Program: "yes", MaxOutputBytes: 64 << 10, KillOnOutputLimit: true})
	waitDone(t, p, 10*time.Second)
	st := p.State()
	if st.Status != StatusKilled || st.KillReason != ReasonOutputLimit || !st.Truncated {
		t.Errorf("state %+v", st)
	}
	met.mu.Lock()
	defer met.mu.Unlock()
	if met.kills[ReasonOutputLimit] != 1 {
		t.Errorf("kills %v", met.kills)
	}
}

func TestLargeOutput(t *testing.T) {
	m := newTestManager(t, Options{}, false)
	const size = 50 << 20
	start := time.Now()
	p := startT(t, m, sh("head -c 50M /dev/urandom"))
	st := waitExit(t, p, 25*time.Second)
	elapsed := time.Since(start)
	t.Logf("50 MiB through the pipe in %s (%.0f MiB/s)", elapsed, float64(size>>20)/elapsed.Seconds())
	if st.RetainedBytes != size || st.OutputBytes != size || st.Truncated || *st.ExitCode != 0 {
		t.Errorf("state %+v", st)
	}
	last, err := p.ReadAt(size-10, 100)
	if err != nil || len(last) != 10 {
		t.Errorf("ReadAt near the end = %d bytes, %v", len(last), err)
	}
	if _, err := p.ReadAt(size, 1); err != io.EOF {
		t.Errorf("ReadAt(size) = %v, want io.EOF", err)
	}
	tail := p.Tail(1000)
	if !bytes.Equal(tail, mustReadAt(t, p, size-1000, 1000)) {
		t.Error("Tail differs from the end of the spool")
	}
	waitDone(t, p, 5*time.Second)
}

func mustReadAt(t *testing.T, p *Process, off int64, n int) []byte {
	t.Helper()
	b, err := p.ReadAt(off, n)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSpoolBudget: the spool's total and each owner's share bound what
// spool files keep; past either, a command keeps its first 64 KiB and its
// last, and the reason is counted. Remove gives the bytes back, and the
// retention is told when a bound is near (SpoolPressure).
func TestSpoolBudget(t *testing.T) {
	met := &testMetrics{}
	m := newTestManager(t, Options{MaxSpoolBytes: 512 << 10, SpoolShareBytes: 256 << 10, Metrics: met}, false)
	run := func(owner string, n int, cap int64) *Process {
		t.Helper()
		spec := sh(fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x; printf END", n-3))
		spec.Tenant, spec.MaxOutputBytes = owner, cap
		p := startT(t, m, spec)
		waitDone(t, p, 10*time.Second)
		return p
	}
	const head = 64 << 10
	type want struct {
		size      int64
		truncated bool
	}
	check := func(name string, p *Process, w want) {
		t.Helper()
		st := p.State()
		if got := (want{p.Size(), st.Truncated}); got != w || st.OutputBytes != 200000 {
			t.Errorf("%s: kept %+v of %d bytes, want %+v", name, got, st.OutputBytes, w)
		}
		if b := p.Head(1); string(b) != "x" {
			t.Errorf("%s: head %q", name, b)
		}
		if b := p.Tail(3); string(b) != "END" {
			t.Errorf("%s: tail %q", name, b)
		}
	}
	a1 := run("a", 200000, 0)
	check("a's first command", a1, want{200000, false})
	select {
	case <-m.SpoolPressure():
		t.Errorf("pressure signalled with every bound far")
	default:
	}
	a2 := run("a", 200000, 0)
	check("a's second command, past its share", a2, want{head, true})
	select {
	case <-m.SpoolPressure():
	default:
		t.Errorf("no pressure signalled past a share")
	}
	b1 := run("b", 200000, 0)
	check("b's command beside a over its share", b1, want{200000, false})
	c1 := run("c", 200000, 0)
	check("c's command past the total", c1, want{head, true})
	if got, want := m.OwnerRetainedBytes(), map[string]int64{"a": 200000 + head, "b": 200000, "c": head}; !maps.Equal(got, want) {
		t.Errorf("per owner: %v, want %v", got, want)
	}
	if got, want := m.RetainedBytes(), int64(400000+2*head); got != want {
		t.Errorf("retained %d, want %d", got, want)
	}
	if err := a1.Remove(); err != nil {
		t.Fatal(err)
	}
	if a3 := run("a", 100000, 0); a3.Size() != 100000 {
		t.Errorf("share not returned by Remove: kept %d of 100000", a3.Size())
	}
	if d := run("d", 5000, 1000); d.Size() != 1000 || !d.State().Truncated {
		t.Errorf("command cap: kept %d of 5000, want 1000", d.Size())
	}
	met.mu.Lock()
	defer met.mu.Unlock()
	if want := map[string]int{TruncatedGrantShare: 1, TruncatedSpoolFull: 1, TruncatedCommandCap: 1}; !maps.Equal(met.truncation, want) {
		t.Errorf("truncations counted: %v, want %v", met.truncation, want)
	}
}
