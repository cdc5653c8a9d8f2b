package commands_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/commands"
	"github.com/devspace-dev/devspace/internal/process"
	"github.com/devspace-dev/devspace/internal/store"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// spoolRig is a real store and a real process manager's spool (no command is
// started, so no supervisor runs) on one temp state directory.
type spoolRig struct {
	t     testing.TB
	dir   string
	clock *testutil.Clock
	st    *store.Store
	spool *process.Manager
	share int64 // one grant's share of the spool; 0 is the default
}

func newSpoolRig(t *testing.T, maxSpool int64) *spoolRig {
	t.Helper()
	return newSpoolRigShare(t, maxSpool, 0)
}

// newSpoolRigShare is newSpoolRig where a grant's share of the spool is share.
func newSpoolRigShare(t testing.TB, maxSpool, share int64) *spoolRig {
	t.Helper()
	r := &spoolRig{t: t, dir: t.TempDir(), clock: testutil.NewClock(time.Now().UTC()), share: share}
	r.open(maxSpool)
	return r
}

// open (re)opens the store and manager, as a server start does.
func (r *spoolRig) open(maxSpool int64) {
	t := r.t
	if r.st != nil {
		// A crashed server's state lock ends with its process.
		r.st.Close()
	}
	st, err := store.Open(context.Background(), r.dir, store.Options{Now: r.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	m, err := process.New(process.Options{SupervisorPath: "/bin/false", SpoolDir: filepath.Join(r.dir, "output"),
		IdleSupervisors: -1, DisableCgroup: true, MaxSpoolBytes: maxSpool, SpoolShareBytes: r.share})
	if err != nil {
		t.Fatal(err)
	}
	r.st, r.spool = st, m
	t.Cleanup(func() {
		_ = m.Shutdown(context.Background())
		st.Close()
	})
}

func (r *spoolRig) retention() *commands.OutputRecords {
	ret, err := commands.NewOutputRecords(context.Background(), commands.OutputRecordsOptions{Store: r.st, Spool: r.spool, MaxRecords: 10})
	if err != nil {
		r.t.Fatal(err)
	}
	return ret
}

// command records a command of grant g1's execution exec with output
// content as a process would have left it; finished sets its final state.
func (r *spoolRig) command(ret *commands.OutputRecords, ref, exec string, content []byte, finished bool) {
	r.t.Helper()
	r.commandOf(ret, "g1", ref, exec, content, finished)
}

// commandOf is command for grant's execution exec.
func (r *spoolRig) commandOf(ret *commands.OutputRecords, grant, ref, exec string, content []byte, finished bool) {
	t := r.t
	t.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, "output", ref+".out"), content, 0o600); err != nil {
		t.Fatal(err)
	}
	r.spool.AdoptOutput(ref, grant, int64(len(content)))
	ctx := context.Background()
	if err := ret.Started(ctx, &commands.OutputRecord{OutputRef: "out_" + ref, ProcessRef: "prc_" + ref, SpoolID: ref,
		GrantID: grant, ExecutionID: exec, ProjectRef: "p1", StartedAt: r.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	if finished {
		code := 0
		st := process.State{Status: process.StatusExited, ExitCode: &code, EndedAt: r.clock.Now(), Revision: 7,
			OutputBytes: int64(len(content)), RetainedBytes: int64(len(content))}
		if err := ret.Finished(ctx, "out_"+ref, ref, st, nil); err != nil {
			t.Fatal(err)
		}
	}
}

func (r *spoolRig) files() []string {
	ents, _ := os.ReadDir(filepath.Join(r.dir, "output"))
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func (r *spoolRig) lookup(ret *commands.OutputRecords, ref, exec string) (*commands.OutputRecord, error) {
	return ret.Lookup(context.Background(), "out_"+ref, true, "g1", exec)
}

func TestReconcileAfterCrash(t *testing.T) {
	r := newSpoolRig(t, 1<<20)
	ret := r.retention()
	r.command(ret, "done", "e1", []byte("finished output\n"), true)
	r.command(ret, "running", "e1", []byte("partial"), false)
	r.command(ret, "lost", "e1", []byte("gone"), true)
	// What a crash leaves: the running command's file grew past its
	// record, another's file is lost, and a file has no record at all.
	if err := os.WriteFile(filepath.Join(r.dir, "output", "running.out"), []byte("partial and more"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(r.dir, "output", "lost.out"))
	os.WriteFile(filepath.Join(r.dir, "output", "stray.out"), []byte("no record"), 0o600)

	r.open(1 << 20)
	ret = r.retention()
	if got := r.files(); !slices.Equal(got, []string{"done.out", "running.out"}) {
		t.Fatalf("files after reconcile: %v", got)
	}
	if got, want := r.spool.RetainedBytes(), int64(len("finished output\n")+len("partial and more")); got != want {
		t.Fatalf("budget after reconcile = %d, want %d", got, want)
	}
	rec, err := r.lookup(ret, "running", "e1")
	if err != nil || rec.Status != process.StatusKilled || rec.KillReason != commands.ReasonServerRestart || rec.ExpiresAt == nil {
		t.Fatalf("running command after restart: %+v, %v", rec, err)
	}
	st := commands.RecordState(rec)
	if st.RetainedBytes != 16 || st.OutputBytes != 16 {
		t.Fatalf("state: %+v", st)
	}
	if b, _ := ret.Output(rec).ReadAt(0, 100); string(b) != "partial and more" {
		t.Fatalf("output: %q", b)
	}
	rec, err = r.lookup(ret, "lost", "e1")
	if err != nil || rec.RetainedBytes != 0 {
		t.Fatalf("lost file: %+v, %v", rec, err)
	}
	if _, err := r.lookup(ret, "done", "e2"); !errors.Is(err, commands.ErrNoOutputRecord) {
		t.Fatalf("another execution's lookup: %v", err)
	}
	if _, err := ret.Lookup(context.Background(), "out_done", true, "g2", "e1"); !errors.Is(err, commands.ErrNoOutputRecord) {
		t.Fatalf("another grant's lookup: %v", err)
	}
}

func TestTruncatedTailKept(t *testing.T) {
	r := newSpoolRig(t, 1<<20)
	ret := r.retention()
	r.command(ret, "big", "e1", []byte("head of it"), false)
	tail := bytes.Repeat([]byte("z"), 1000)
	st := process.State{Status: process.StatusExited, EndedAt: r.clock.Now(), OutputBytes: 5000, RetainedBytes: 10, Truncated: true}
	if err := ret.Finished(context.Background(), "out_big", "big", st, tail); err != nil {
		t.Fatal(err)
	}
	r.open(1 << 20)
	ret = r.retention()
	rec, err := r.lookup(ret, "big", "e1")
	if err != nil {
		t.Fatal(err)
	}
	out := ret.Output(rec)
	if got := out.Tail(10); string(got) != "zzzzzzzzzz" {
		t.Fatalf("tail: %q", got)
	}
	if got := out.Head(4); string(got) != "head" {
		t.Fatalf("head: %q", got)
	}
	if s := commands.RecordState(rec); !s.Truncated || s.OutputBytes != 5000 {
		t.Fatalf("state: %+v", s)
	}
}

func TestSweep(t *testing.T) {
	r := newSpoolRigShare(t, 1000, 1000) // one grant, whose share is the whole spool
	ret := r.retention()
	ctx := context.Background()
	// Expiry: 24 h after the end.
	r.command(ret, "old", "e1", []byte("x"), true)
	r.clock.Advance(23 * time.Hour)
	r.command(ret, "young", "e1", []byte("y"), true)
	r.clock.Advance(2 * time.Hour)
	if err := ret.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got := r.files(); !slices.Equal(got, []string{"young.out"}) {
		t.Fatalf("after expiry: %v", got)
	}
	// Near the cap (over 90%) the oldest ended output goes until 75%;
	// a running command's output is never retired. (With one grant the
	// share's rule does it; TestSweepGrantShare has several.)
	r.command(ret, "running", "e1", bytes.Repeat([]byte("r"), 300), false)
	r.clock.Advance(time.Second)
	r.command(ret, "a", "e1", bytes.Repeat([]byte("a"), 300), true)
	r.clock.Advance(time.Second)
	r.command(ret, "b", "e1", bytes.Repeat([]byte("b"), 300), true)
	if err := ret.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got := r.files(); !slices.Equal(got, []string{"b.out", "running.out"}) {
		t.Fatalf("after the cap sweep: %v (budget %d)", got, r.spool.RetainedBytes())
	}
	if got := r.spool.RetainedBytes(); got != 600 {
		t.Fatalf("budget = %d", got)
	}
	// Closed executions: retired by RetireExecutions, or by the sweep when
	// the close happened while the server was away.
	if err := r.st.CreateExecution(ctx, &store.Execution{ID: "e1", GrantID: "g1", SessionRef: "s", ActorRef: "a"}); err != nil {
		t.Fatal(err)
	}
	r.command(ret, "e2cmd", "e2", []byte("e2"), true)
	if _, err := r.st.CloseExecutions(ctx, []string{"g1"}, "test"); err != nil {
		t.Fatal(err)
	}
	if err := ret.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got := r.files(); !slices.Equal(got, []string{"e2cmd.out"}) {
		t.Fatalf("after closing e1: %v", got)
	}
	if err := ret.RetireExecutions(ctx, []string{"e2"}); err != nil {
		t.Fatal(err)
	}
	if got := r.files(); len(got) != 0 || r.spool.RetainedBytes() != 0 {
		t.Fatalf("after retiring e2: %v, budget %d", got, r.spool.RetainedBytes())
	}
	// A command finishing after its execution was retired loses its file.
	r.command(ret, "late", "e3", []byte("late"), false)
	if err := ret.RetireExecutions(ctx, []string{"e3"}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(r.dir, "output", "late.out"), []byte("late"), 0o600)
	err := ret.Finished(ctx, "out_late", "late", process.State{Status: process.StatusExited, EndedAt: r.clock.Now()}, nil)
	if !errors.Is(err, commands.ErrNoOutputRecord) || len(r.files()) != 0 {
		t.Fatalf("late finish: %v, files %v", err, r.files())
	}
}

func TestRecordBound(t *testing.T) {
	r := newSpoolRig(t, 1<<20)
	ret := r.retention()
	for i := range 12 {
		r.clock.Advance(time.Second)
		r.command(ret, fmt.Sprintf("c%02d", i), "e1", []byte("x"), true)
	}
	r.command(ret, "running", "e1", []byte("r"), false)
	if err := ret.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	// 13 records, bound 10: the earliest ended go until 9 remain; the
	// running command stays.
	want := []string{"c04.out", "c05.out", "c06.out", "c07.out", "c08.out", "c09.out", "c10.out", "c11.out", "running.out"}
	if got := r.files(); !slices.Equal(got, want) {
		t.Fatalf("files after the record bound: %v", got)
	}
}

// TestSweepGrantShare (issue 31): a grant near its share of the spool
// loses its own earliest ended output, never another grant's; its running
// command's bytes count but are not retired. Near the spool's total the
// grant holding the most pays first, and nobody pays while a grant is
// over its share by a running command's output. Past the record bound
// the grant holding the most records pays. Each is counted by reason.
func TestSweepGrantShare(t *testing.T) {
	type cmd struct {
		grant, ref string
		size       int
		running    bool
	}
	for _, tt := range []struct {
		name string
		cmds []cmd
		want []string // the files left
		// retired counts outputs_retired by reason.
		retired map[string]int
	}{{
		// The spool is 10,000 bytes, a share 2,500: g1 holds 3,500 (its
		// running command's 1,000 included), over 90% of its share, and
		// loses its earliest ended output until it holds 75% of it; g2,
		// within its share, keeps everything, its older output too.
		name: "share",
		cmds: []cmd{{"g2", "g2old", 2000, false}, {"g1", "a", 1000, false}, {"g1", "b", 1000, false},
			{"g1", "run", 1000, true}, {"g1", "c", 500, false}},
		want:    []string{"c", "g2old", "run"},
		retired: map[string]int{commands.RetiredGrantShare: 2},
	}, {
		// Five grants within their shares hold 10,000: down to 7,500, the
		// one holding the most pays each time (ties: the smaller ID).
		name: "total",
		cmds: []cmd{{"g1", "g1a", 1000, false}, {"g1", "g1b", 1000, false}, {"g2", "g2a", 500, false}, {"g2", "g2b", 1500, false},
			{"g3", "g3a", 2000, false}, {"g4", "g4a", 1000, false}, {"g4", "g4b", 1000, false}, {"g5", "g5a", 1000, false}, {"g5", "g5b", 1000, false}},
		want:    []string{"g1b", "g2b", "g4a", "g4b", "g5a", "g5b"},
		retired: map[string]int{commands.RetiredSpoolFull: 3},
	}, {
		// g1 is over its share with a running command's output alone: the
		// grants within their shares do not pay for it.
		name: "over by running output",
		cmds: []cmd{{"g1", "run", 2600, true}, {"g2", "g2a", 2200, false}, {"g3", "g3a", 2200, false}, {"g4", "g4a", 2200, false}},
		want: []string{"g2a", "g3a", "g4a", "run"},
	}, {
		// 12 records, bound 10: down to 9, from the grant holding the
		// most records (g1's 8 against g2's 4), earliest ended first.
		name: "records",
		cmds: []cmd{{"g2", "g2a", 1, false}, {"g1", "g1a", 1, false}, {"g1", "g1b", 1, false}, {"g1", "g1c", 1, false},
			{"g2", "g2b", 1, false}, {"g1", "g1d", 1, false}, {"g1", "g1e", 1, false}, {"g1", "g1f", 1, false},
			{"g2", "g2c", 1, false}, {"g1", "g1g", 1, false}, {"g1", "g1h", 1, false}, {"g2", "g2d", 1, false}},
		want:    []string{"g1d", "g1e", "g1f", "g1g", "g1h", "g2a", "g2b", "g2c", "g2d"},
		retired: map[string]int{commands.RetiredRecordBound: 3},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			r := newSpoolRig(t, 10000)
			met := &retiredCounts{n: map[string]int{}}
			ret, err := commands.NewOutputRecords(context.Background(), commands.OutputRecordsOptions{Store: r.st, Spool: r.spool, MaxRecords: 10, Metrics: met})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range tt.cmds {
				r.clock.Advance(time.Second)
				r.commandOf(ret, c.grant, c.ref, "e_"+c.grant, bytes.Repeat([]byte("x"), c.size), !c.running)
			}
			if err := ret.Sweep(context.Background()); err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, f := range tt.want {
				want = append(want, f+".out")
			}
			if got := r.files(); !slices.Equal(got, want) {
				t.Errorf("files left: %v, want %v", got, want)
			}
			if tt.retired == nil {
				tt.retired = map[string]int{}
			}
			if !maps.Equal(met.n, tt.retired) {
				t.Errorf("retired: %v, want %v", met.n, tt.retired)
			}
		})
	}
}

// retiredCounts is a commands.OutputMetrics.
type retiredCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *retiredCounts) OutputsRetired(reason string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[reason] += n
}

// BenchmarkSweepNearShare: the sweep a grant's pressure asks for (at most
// once a second) at the record bound, 10,000 records of 21 grants, when
// it retires nothing: the grant near its share holds only a running
// command's output.
func BenchmarkSweepNearShare(b *testing.B) {
	r := newSpoolRigShare(b, 1<<30, 0)
	ret, err := commands.NewOutputRecords(context.Background(), commands.OutputRecordsOptions{Store: r.st, Spool: r.spool})
	if err != nil {
		b.Fatal(err)
	}
	for i := range commands.DefaultMaxOutputRecords - 1 {
		r.commandOf(ret, fmt.Sprint("g", i%20), fmt.Sprint("c", i), "e", []byte("x"), true)
	}
	r.commandOf(ret, "g20", "running", "e", []byte("r"), false)
	r.spool.AdoptOutput("running", "g20", 250<<20) // over 90% of the 256 MiB share
	ctx := context.Background()
	for b.Loop() {
		if err := ret.Sweep(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if n := len(r.files()); n != commands.DefaultMaxOutputRecords {
		b.Fatalf("%d files left, want all %d", n, commands.DefaultMaxOutputRecords)
	}
}
