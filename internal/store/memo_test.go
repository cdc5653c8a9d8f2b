package store

import (
	"context"
	"testing"
)

// TestMemo: a read is remembered until the next write through the Store,
// whatever table it writes; a write that commits while the read runs
// leaves the entry stale at once; a read-only Store remembers nothing.
func TestMemo(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	memo := NewMemo[string, map[string]int](2)
	loads := 0
	counts := func(during func()) map[string]int {
		t.Helper()
		v, err := memo.Get(s, "alpha", func() (map[string]int, error) {
			loads++
			v, err := s.CountResumableTasks(ctx, []string{"alpha"})
			if during != nil {
				during()
			}
			return v, err
		})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	save := func(ref string) {
		t.Helper()
		if err := s.CreateTask(ctx, &Task{Ref: ref, ProjectRef: "alpha", Title: ref, Status: TaskResumable}, "exe_none", TaskLimits{MaxResumable: 20, RetainCompleted: 80}); err != nil {
			t.Fatal(err)
		}
	}
	if n := counts(nil)["alpha"]; n != 0 || loads != 1 {
		t.Fatalf("first read: %d tasks, %d loads", n, loads)
	}
	if counts(nil); loads != 1 {
		t.Fatalf("a read with nothing written since loaded again (%d loads)", loads)
	}
	save("tsk_1")
	if n := counts(nil)["alpha"]; n != 1 || loads != 2 {
		t.Fatalf("after a write: %d tasks, %d loads", n, loads)
	}
	// A write of another table invalidates too.
	if err := s.AppendAudit(ctx, AuditEvent{Kind: "test"}); err != nil {
		t.Fatal(err)
	}
	if counts(nil); loads != 3 {
		t.Fatalf("a write to another table kept the entry (%d loads)", loads)
	}
	// A write during the load: the value read before it is not served.
	save("tsk_2")
	counts(func() { save("tsk_3") })
	if n := counts(nil)["alpha"]; n != 3 || loads != 5 {
		t.Fatalf("after a write during the load: %d tasks, %d loads", n, loads)
	}

	ro, err := OpenReadOnly(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	roLoads := 0
	for range 2 {
		if _, err := memo.Get(ro, "alpha", func() (map[string]int, error) { roLoads++; return nil, nil }); err != nil {
			t.Fatal(err)
		}
	}
	if roLoads != 2 {
		t.Errorf("a read-only Store's read was remembered (%d loads for 2 reads)", roLoads)
	}
}
