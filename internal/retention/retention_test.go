package retention_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/process"
	"github.com/devspace-dev/devspace/internal/retention"
	"github.com/devspace-dev/devspace/internal/store"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// rig is a real store and a real process manager's spool (no command is
// started, so no supervisor runs) on one temp state directory.
type rig struct {
	t     *testing.T
	dir   string
	clock *testutil.Clock
	st    *store.Store
	spool *process.Manager
}

func newRig(t *testing.T, maxSpool int64) *rig {
	t.Helper()
	r := &rig{t: t, dir: t.TempDir(), clock: testutil.NewClock(time.Now().UTC())}
	r.open(maxSpool)
	return r
}

// open (re)opens the store and manager, as a server start does.
func (r *rig) open(maxSpool int64) {
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
		IdleSupervisors: -1, DisableCgroup: true, MaxSpoolBytes: maxSpool})
	if err != nil {
		t.Fatal(err)
	}
	r.st, r.spool = st, m
	t.Cleanup(func() {
		_ = m.Shutdown(context.Background())
		st.Close()
	})
}

func (r *rig) retention() *retention.Retention {
	ret, err := retention.New(context.Background(), retention.Options{Store: r.st, Spool: r.spool, MaxRecords: 10})
	if err != nil {
		r.t.Fatal(err)
	}
	return ret
}

// command records a command of execution exec with output content as a
// process would have left it; finished sets its final state.
func (r *rig) command(ret *retention.Retention, ref, exec string, content []byte, finished bool) {
	t := r.t
	if err := os.WriteFile(filepath.Join(r.dir, "output", ref+".out"), content, 0o600); err != nil {
		t.Fatal(err)
	}
	r.spool.AdoptOutput(ref, int64(len(content)))
	ctx := context.Background()
	if err := ret.Started(ctx, &retention.Record{OutputRef: "out_" + ref, ProcessRef: "prc_" + ref, SpoolID: ref,
		GrantID: "g1", ExecutionID: exec, ProjectRef: "p1", StartedAt: r.clock.Now()}); err != nil {
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

func (r *rig) files() []string {
	ents, _ := os.ReadDir(filepath.Join(r.dir, "output"))
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func (r *rig) lookup(ret *retention.Retention, ref, exec string) (*retention.Record, error) {
	return ret.Lookup(context.Background(), "out_"+ref, true, "g1", exec)
}

func TestReconcileAfterCrash(t *testing.T) {
	r := newRig(t, 1<<20)
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
	if err != nil || rec.Status != process.StatusKilled || rec.KillReason != retention.ReasonServerRestart || rec.ExpiresAt == nil {
		t.Fatalf("running command after restart: %+v, %v", rec, err)
	}
	st := retention.State(rec)
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
	if _, err := r.lookup(ret, "done", "e2"); !errors.Is(err, retention.ErrNotFound) {
		t.Fatalf("another execution's lookup: %v", err)
	}
	if _, err := ret.Lookup(context.Background(), "out_done", true, "g2", "e1"); !errors.Is(err, retention.ErrNotFound) {
		t.Fatalf("another grant's lookup: %v", err)
	}
}

func TestTruncatedTailKept(t *testing.T) {
	r := newRig(t, 1<<20)
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
	if s := retention.State(rec); !s.Truncated || s.OutputBytes != 5000 {
		t.Fatalf("state: %+v", s)
	}
}

func TestSweep(t *testing.T) {
	r := newRig(t, 1000)
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
	// a running command's output is never retired.
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
	if !errors.Is(err, retention.ErrNotFound) || len(r.files()) != 0 {
		t.Fatalf("late finish: %v, files %v", err, r.files())
	}
}

func TestRecordBound(t *testing.T) {
	r := newRig(t, 1<<20)
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
