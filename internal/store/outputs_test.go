package store

import (
	"context"
	"fmt"
	"testing"
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

// BenchmarkOutputSpools: what a start's reconciliation reads, 300 records
// (a day of commands), the four columns it needs next to whole rows.
func BenchmarkOutputSpools(b *testing.B) {
	st, _ := openTestStore(b)
	insertOutputs(b, st, 300)
	ctx := context.Background()
	b.Run("whole-rows", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.ProcessOutputs(ctx); err != nil {
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
