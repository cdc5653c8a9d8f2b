package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// insertOutputs records n ended commands; the i-th retains i bytes.
func insertOutputs(t testing.TB, st *Store, n int) {
	t.Helper()
	for i := range n {
		end, code := st.Now(), 0
		if err := st.InsertProcessOutput(context.Background(), &ProcessOutput{OutputRef: fmt.Sprint("out", i),
			ProcessRef: fmt.Sprint("proc", i), SpoolID: fmt.Sprint("spool", i), GrantID: "g", ExecutionID: "e",
			ProjectRef: "r", Status: "exited", ExitCode: &code, OutputBytes: int64(i), RetainedBytes: int64(i),
			Tail: []byte("tail"), StartedAt: st.Now(), EndedAt: &end, ExpiresAt: &end}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOutputSpools(t *testing.T) {
	st, _ := openTestStore(t)
	insertOutputs(t, st, 3)
	if err := st.SetProcessOutputRetained(context.Background(), "out1", 42); err != nil {
		t.Fatal(err)
	}
	got, err := st.OutputSpools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[OutputSpool]bool{{"out0", "spool0", "g", 0}: true, {"out1", "spool1", "g", 42}: true, {"out2", "spool2", "g", 2}: true}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for _, o := range got {
		if !want[o] {
			t.Errorf("unexpected %+v (want %v)", o, want)
		}
	}
}

// TestOutputUses: the earliest ended first (a command started later may
// end earlier), running commands last.
func TestOutputUses(t *testing.T) {
	st, clk := openTestStore(t)
	ctx := context.Background()
	start := clk.Now()
	for _, o := range []struct {
		ref   string
		endIn time.Duration // 0: running
	}{{"long", 3 * time.Hour}, {"running", 0}, {"short", time.Hour}, {"mid", 2 * time.Hour}} {
		clk.Advance(time.Second)
		rec := &ProcessOutput{OutputRef: o.ref, ProcessRef: "p" + o.ref, SpoolID: o.ref, GrantID: "g" + o.ref, ExecutionID: "e",
			Status: "running", RetainedBytes: int64(len(o.ref)), StartedAt: clk.Now()}
		if o.endIn > 0 {
			end := start.Add(o.endIn)
			rec.Status, rec.EndedAt, rec.ExpiresAt = "exited", &end, &end
		}
		if err := st.InsertProcessOutput(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.OutputUses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []OutputUse{{"short", "gshort", 5, true}, {"mid", "gmid", 3, true}, {"long", "glong", 4, true}, {"running", "grunning", 7, false}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("OutputUses (-want +got):\n%s", d)
	}
}

// BenchmarkOutputSpools: what a start's reconciliation reads, 300 records
// (a day of commands), the four columns it needs next to whole rows.
func BenchmarkOutputSpools(b *testing.B) {
	st, _ := openTestStore(b)
	insertOutputs(b, st, 300)
	ctx := context.Background()
	b.Run("whole-rows", func(b *testing.B) {
		for b.Loop() {
			var out []ProcessOutput
			if err := st.db.WithContext(ctx).Omit("tail").Find(&out).Error; err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("spools", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.OutputSpools(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
