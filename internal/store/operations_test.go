package store

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/devspace-dev/devspace/internal/testutil"
)

func openTestStore(t testing.TB) (*Store, *testutil.Clock) {
	t.Helper()
	clk := testutil.NewClock(time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC))
	s, err := Open(context.Background(), t.TempDir(), Options{Now: clk.Now})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, clk
}

var opKey = OperationKey{GrantID: "g1", ExecutionID: "e1", Tool: "apply_patch", OperationID: "op-1"}

func mustReserve(t *testing.T, s *Store, key OperationKey, hash string) *Operation {
	t.Helper()
	op, created, err := s.ReserveOperation(context.Background(), key, hash, time.Hour)
	if err != nil {
		t.Fatalf("ReserveOperation(%+v): %v", key, err)
	}
	if !created {
		t.Fatalf("ReserveOperation(%+v): created = false, want true", key)
	}
	return op
}

func TestReserveOperation(t *testing.T) {
	ctx := context.Background()
	s, clk := openTestStore(t)
	now := clk.Now()
	got := mustReserve(t, s, opKey, "sha256:1")
	want := &Operation{Key: opKey, RequestHash: "sha256:1", State: OperationPending, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reserved operation (-want +got):\n%s", diff)
	}

	// A second reservation, even with another hash, returns the stored row.
	clk.Advance(time.Minute)
	again, created, err := s.ReserveOperation(ctx, opKey, "sha256:2", time.Hour)
	if err != nil || created {
		t.Fatalf("second ReserveOperation: created = %v, err = %v; want false, nil", created, err)
	}
	if diff := cmp.Diff(want, again); diff != "" {
		t.Errorf("existing operation (-want +got):\n%s", diff)
	}
	stored, err := s.Operation(ctx, opKey)
	if err != nil {
		t.Fatalf("Operation: %v", err)
	}
	if diff := cmp.Diff(want, stored); diff != "" {
		t.Errorf("stored operation (-want +got):\n%s", diff)
	}
}

func TestOperationIDExactBytes(t *testing.T) {
	ctx := context.Background()
	s, _ := openTestStore(t)
	ids := []string{"a", " a", "a ", "A", "\u00e9", "e\u0301", strings.Repeat("😀", 32)}
	for i, id := range ids {
		k := opKey
		k.OperationID = id
		mustReserve(t, s, k, "sha256:"+string(rune('0'+i)))
	}
	for i, id := range ids {
		k := opKey
		k.OperationID = id
		op, err := s.Operation(ctx, k)
		if err != nil {
			t.Fatalf("Operation(%q): %v", id, err)
		}
		if op.Key.OperationID != id || op.RequestHash != "sha256:"+string(rune('0'+i)) {
			t.Errorf("Operation(%q) = id %q hash %q", id, op.Key.OperationID, op.RequestHash)
		}
	}
	var types []string
	if err := s.db.Raw(`SELECT DISTINCT typeof(operation_id) FROM operations`).Scan(&types).Error; err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"blob"}, types); diff != "" {
		t.Errorf("operation_id storage class (-want +got):\n%s", diff)
	}
}

func TestOperationKeysIndependent(t *testing.T) {
	s, _ := openTestStore(t)
	for _, k := range []OperationKey{
		opKey,
		{GrantID: "g2", ExecutionID: "e1", Tool: "apply_patch", OperationID: "op-1"},
		{GrantID: "g1", ExecutionID: "e2", Tool: "apply_patch", OperationID: "op-1"},
		{GrantID: "g1", ExecutionID: "", Tool: "apply_patch", OperationID: "op-1"},
		{GrantID: "g1", ExecutionID: "e1", Tool: "exec_command", OperationID: "op-1"},
	} {
		mustReserve(t, s, k, "sha256:x")
	}
}

func TestOperationTransitions(t *testing.T) {
	ctx := context.Background()
	s, clk := openTestStore(t)

	mustReserve(t, s, opKey, "sha256:1")
	clk.Advance(time.Second)
	if err := s.CompleteOperation(ctx, opKey, []byte(`{"ok":true}`)); err != nil {
		t.Fatalf("CompleteOperation: %v", err)
	}
	op, err := s.Operation(ctx, opKey)
	if err != nil {
		t.Fatal(err)
	}
	done := clk.Now()
	if op.State != OperationCommitted || string(op.Result) != `{"ok":true}` || op.CompletedAt == nil || !op.CompletedAt.Equal(done) {
		t.Errorf("after complete: %+v", op)
	}
	for name, err := range map[string]error{
		"complete twice":    s.CompleteOperation(ctx, opKey, nil),
		"unknown committed": s.MarkOperationUnknown(ctx, opKey),
		"release committed": s.ReleaseOperation(ctx, opKey),
	} {
		if !errors.Is(err, ErrOperationState) {
			t.Errorf("%s: err = %v, want ErrOperationState", name, err)
		}
	}

	k2 := opKey
	k2.OperationID = "op-2"
	mustReserve(t, s, k2, "sha256:2")
	if err := s.MarkOperationUnknown(ctx, k2); err != nil {
		t.Fatalf("MarkOperationUnknown: %v", err)
	}
	if op, err := s.Operation(ctx, k2); err != nil || op.State != OperationUnknown || op.Result != nil {
		t.Errorf("after unknown: %+v, %v", op, err)
	}
	if err := s.ReleaseOperation(ctx, k2); !errors.Is(err, ErrOperationState) {
		t.Errorf("release unknown: err = %v, want ErrOperationState", err)
	}

	k3 := opKey
	k3.OperationID = "op-3"
	mustReserve(t, s, k3, "sha256:3")
	if err := s.ReleaseOperation(ctx, k3); err != nil {
		t.Fatalf("ReleaseOperation: %v", err)
	}
	if _, err := s.Operation(ctx, k3); !errors.Is(err, ErrNotFound) {
		t.Errorf("after release: err = %v, want ErrNotFound", err)
	}
	mustReserve(t, s, k3, "sha256:3") // a released key can be reserved again

	missing := opKey
	missing.OperationID = "missing"
	for name, err := range map[string]error{
		"complete": s.CompleteOperation(ctx, missing, nil),
		"unknown":  s.MarkOperationUnknown(ctx, missing),
		"release":  s.ReleaseOperation(ctx, missing),
	} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s missing: err = %v, want ErrNotFound", name, err)
		}
	}
}

func TestCompleteOperationEmptyResult(t *testing.T) {
	ctx := context.Background()
	s, _ := openTestStore(t)
	mustReserve(t, s, opKey, "sha256:1")
	if err := s.CompleteOperation(ctx, opKey, nil); err != nil {
		t.Fatal(err)
	}
	op, err := s.Operation(ctx, opKey)
	if err != nil {
		t.Fatal(err)
	}
	if op.State != OperationCommitted || len(op.Result) != 0 {
		t.Errorf("got %+v", op)
	}
}

func TestCompleteOperationTooLarge(t *testing.T) {
	ctx := context.Background()
	s, _ := openTestStore(t)
	mustReserve(t, s, opKey, "sha256:1")
	err := s.CompleteOperation(ctx, opKey, make([]byte, MaxOperationResultBytes+1))
	if !errors.Is(err, ErrOperationResultTooLarge) {
		t.Fatalf("err = %v, want ErrOperationResultTooLarge", err)
	}
	if op, err := s.Operation(ctx, opKey); err != nil || op.State != OperationPending {
		t.Errorf("after refused result: %+v, %v; want pending", op, err)
	}
	if err := s.CompleteOperation(ctx, opKey, make([]byte, MaxOperationResultBytes)); err != nil {
		t.Errorf("result of exactly the limit: %v", err)
	}
}

func TestPruneOperations(t *testing.T) {
	ctx := context.Background()
	s, clk := openTestStore(t)
	start := clk.Now()
	mustReserve(t, s, opKey, "sha256:1") // expires start+1h
	clk.Advance(30 * time.Minute)
	k2 := opKey
	k2.OperationID = "op-2"
	mustReserve(t, s, k2, "sha256:2") // expires start+90m

	for _, tt := range []struct {
		at   time.Duration
		want int64
	}{
		{59 * time.Minute, 0},
		{time.Hour, 1},
		{89 * time.Minute, 0},
		{2 * time.Hour, 1},
	} {
		n, err := s.PruneOperations(ctx, start.Add(tt.at))
		if err != nil {
			t.Fatalf("PruneOperations: %v", err)
		}
		if n != tt.want {
			t.Errorf("PruneOperations(start+%v) = %d, want %d", tt.at, n, tt.want)
		}
	}
}

func TestReserveReplacesExpired(t *testing.T) {
	ctx := context.Background()
	s, clk := openTestStore(t)
	mustReserve(t, s, opKey, "sha256:1")
	if err := s.CompleteOperation(ctx, opKey, []byte("old")); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour - time.Nanosecond)
	if _, created, err := s.ReserveOperation(ctx, opKey, "sha256:2", time.Hour); err != nil || created {
		t.Fatalf("before expiry: created = %v, err = %v", created, err)
	}
	clk.Advance(time.Nanosecond)
	op := mustReserve(t, s, opKey, "sha256:2")
	if op.State != OperationPending || op.Result != nil || op.RequestHash != "sha256:2" {
		t.Errorf("replaced row: %+v", op)
	}
	stored, err := s.Operation(ctx, opKey)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(op, stored); diff != "" {
		t.Errorf("stored replaced row (-want +got):\n%s", diff)
	}
}

func TestOperationInvalidKey(t *testing.T) {
	ctx := context.Background()
	s, _ := openTestStore(t)
	for name, k := range map[string]OperationKey{
		"empty grant": {Tool: "t", OperationID: "x"},
		"empty tool":  {GrantID: "g", OperationID: "x"},
		"empty id":    {GrantID: "g", Tool: "t"},
		"nul":         {GrantID: "g", Tool: "t", OperationID: "a\x00b"},
		"bad utf-8":   {GrantID: "g", Tool: "t", OperationID: "\xff"},
		"129 bytes":   {GrantID: "g", Tool: "t", OperationID: strings.Repeat("a", 129)},
	} {
		if _, _, err := s.ReserveOperation(ctx, k, "sha256:1", time.Hour); !errors.Is(err, ErrInvalidOperationKey) {
			t.Errorf("%s: ReserveOperation err = %v, want ErrInvalidOperationKey", name, err)
		}
		if _, err := s.Operation(ctx, k); !errors.Is(err, ErrInvalidOperationKey) {
			t.Errorf("%s: Operation err = %v, want ErrInvalidOperationKey", name, err)
		}
	}
	k := opKey
	k.OperationID = strings.Repeat("a", MaxOperationIDBytes)
	mustReserve(t, s, k, "sha256:1")
}

func TestReserveOperationConcurrent(t *testing.T) {
	s, _ := openTestStore(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	created := 0
	for range 20 {
		wg.Go(func() {
			_, c, err := s.ReserveOperation(context.Background(), opKey, "sha256:1", time.Hour)
			if err != nil {
				t.Error(err)
				return
			}
			if c {
				mu.Lock()
				created++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if created != 1 {
		t.Errorf("%d reservations created a row, want exactly 1", created)
	}
}
