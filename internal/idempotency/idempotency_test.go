package idempotency

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/devspace-dev/devspace/internal/fault"
	"github.com/devspace-dev/devspace/internal/store"
	"github.com/devspace-dev/devspace/internal/testutil"
)

func openStore(t *testing.T, dir string, clk *testutil.Clock) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), dir, store.Options{Now: clk.Now})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newService(t *testing.T) (*Service, *store.Store, *testutil.Clock) {
	t.Helper()
	clk := testutil.NewClock(time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC))
	st := openStore(t, t.TempDir(), clk)
	return New(st, Options{}), st, clk
}

var key = Key{GrantID: "grant-1", ExecutionID: "exec-1", Tool: "apply_patch", OperationID: "op-1"}

// counter returns an effect that counts its runs and returns result.
func counter(n *atomic.Int64, result string) func(context.Context) ([]byte, error) {
	return func(context.Context) ([]byte, error) {
		n.Add(1)
		return []byte(result), nil
	}
}

type outcome struct {
	Result   string
	Replayed bool
	Err      error
}

func do(t *testing.T, s *Service, k Key, hash string, fn func(context.Context) ([]byte, error)) outcome {
	t.Helper()
	res, replayed, err := s.Do(context.Background(), k, hash, fn)
	return outcome{string(res), replayed, err}
}

func checkOutcome(t *testing.T, what string, got outcome, want outcome) {
	t.Helper()
	if !errors.Is(got.Err, want.Err) || (want.Err == nil && got.Err != nil) {
		t.Fatalf("%s: err = %v, want %v", what, got.Err, want.Err)
	}
	got.Err, want.Err = nil, nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

func TestHashRequest(t *testing.T) {
	type req struct {
		Path  string            `json:"path"`
		Env   map[string]string `json:"env"`
		Lines []int             `json:"lines"`
	}
	a, err := HashRequest(req{Path: "a", Env: map[string]string{"X": "1", "A": "2", "M": "3"}, Lines: []int{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a, "sha256:") || len(a) != len("sha256:")+64 {
		t.Errorf("hash %q is not sha256:<64 hex>", a)
	}
	for range 20 { // map iteration order must not matter
		b, _ := HashRequest(req{Path: "a", Env: map[string]string{"M": "3", "A": "2", "X": "1"}, Lines: []int{1, 2}})
		if a != b {
			t.Fatalf("equal requests hash differently: %s vs %s", a, b)
		}
	}
	for _, other := range []req{
		{Path: "a ", Env: map[string]string{"X": "1", "A": "2", "M": "3"}, Lines: []int{1, 2}},
		{Path: "a", Env: map[string]string{"X": "1", "A": "2"}, Lines: []int{1, 2}},
		{Path: "a", Env: map[string]string{"X": "1", "A": "2", "M": "3"}, Lines: []int{2, 1}},
	} {
		if b, _ := HashRequest(other); a == b {
			t.Errorf("different request %+v hashes equal", other)
		}
	}
	if _, err := HashRequest(func() {}); err == nil {
		t.Error("HashRequest of a func succeeded")
	}
}

func TestDoReplay(t *testing.T) {
	s, _, _ := newService(t)
	var n atomic.Int64
	checkOutcome(t, "first", do(t, s, key, "sha256:a", counter(&n, "result-1")), outcome{Result: "result-1"})
	checkOutcome(t, "retry", do(t, s, key, "sha256:a", counter(&n, "result-2")), outcome{Result: "result-1", Replayed: true})
	if n.Load() != 1 {
		t.Errorf("fn ran %d times, want 1", n.Load())
	}
}

func TestDoEmptyResultReplays(t *testing.T) {
	s, _, _ := newService(t)
	var n atomic.Int64
	checkOutcome(t, "first", do(t, s, key, "sha256:a", counter(&n, "")), outcome{})
	checkOutcome(t, "retry", do(t, s, key, "sha256:a", counter(&n, "")), outcome{Replayed: true})
	if n.Load() != 1 {
		t.Errorf("fn ran %d times, want 1", n.Load())
	}
}

func TestDoConflict(t *testing.T) {
	s, _, _ := newService(t)
	var n atomic.Int64
	do(t, s, key, "sha256:a", counter(&n, "r"))
	checkOutcome(t, "different request", do(t, s, key, "sha256:b", counter(&n, "r")), outcome{Err: ErrConflict})
	if n.Load() != 1 {
		t.Errorf("fn ran %d times, want 1", n.Load())
	}
}

func TestDoConcurrentIdentical(t *testing.T) {
	s, _, _ := newService(t)
	var n atomic.Int64
	release := make(chan struct{})
	fn := func(context.Context) ([]byte, error) {
		n.Add(1)
		<-release // hold the first call so the others pile up behind it
		return []byte("once"), nil
	}
	const callers = 50
	results := make([]outcome, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() { results[i] = do(t, s, key, "sha256:a", fn) })
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	if n.Load() != 1 {
		t.Fatalf("fn ran %d times, want 1", n.Load())
	}
	fresh := 0
	for i, r := range results {
		if r.Err != nil || r.Result != "once" {
			t.Errorf("caller %d: %+v", i, r)
		}
		if !r.Replayed {
			fresh++
		}
	}
	if fresh != 1 {
		t.Errorf("%d callers got replayed=false, want 1", fresh)
	}
}

func TestDoWaiterHonoursContext(t *testing.T) {
	s, _, _ := newService(t)
	started := make(chan struct{})
	release := make(chan struct{})
	ownerDone := make(chan struct{})
	go func() {
		defer close(ownerDone)
		s.Do(context.Background(), key, "sha256:a", func(context.Context) ([]byte, error) {
			close(started)
			<-release
			return nil, nil
		})
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, _, err := s.Do(ctx, key, "sha256:a", func(context.Context) ([]byte, error) {
		t.Error("waiter ran fn")
		return nil, nil
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiter err = %v, want DeadlineExceeded", err)
	}
	close(release)
	<-ownerDone
}

func TestDoCrashLeavesOutcomeUnknown(t *testing.T) {
	dir := t.TempDir()
	clk := testutil.NewClock(time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC))
	st, err := store.Open(context.Background(), dir, store.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	// The first process reserved the key and died while the effect ran.
	if _, created, err := st.ReserveOperation(context.Background(), store.OperationKey(key), "sha256:a", DefaultTTL); err != nil || !created {
		t.Fatalf("ReserveOperation: created = %v, err = %v", created, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	s := New(openStore(t, dir, clk), Options{})
	var n atomic.Int64
	checkOutcome(t, "after restart", do(t, s, key, "sha256:a", counter(&n, "r")), outcome{Err: ErrOutcomeUnknown})
	checkOutcome(t, "again", do(t, s, key, "sha256:a", counter(&n, "r")), outcome{Err: ErrOutcomeUnknown})
	checkOutcome(t, "other request", do(t, s, key, "sha256:b", counter(&n, "r")), outcome{Err: ErrConflict})
	if n.Load() != 0 {
		t.Errorf("fn ran %d times after a crash, want 0", n.Load())
	}
}

func TestDoFailureMarksUnknown(t *testing.T) {
	s, st, _ := newService(t)
	boom := errors.New("disk full half way")
	var n atomic.Int64
	fail := func(context.Context) ([]byte, error) { n.Add(1); return nil, boom }
	checkOutcome(t, "failing effect", do(t, s, key, "sha256:a", fail), outcome{Err: boom})
	checkOutcome(t, "retry", do(t, s, key, "sha256:a", fail), outcome{Err: ErrOutcomeUnknown})
	if n.Load() != 1 {
		t.Errorf("fn ran %d times, want 1", n.Load())
	}
	op, err := st.Operation(context.Background(), store.OperationKey(key))
	if err != nil || op.State != store.OperationUnknown {
		t.Errorf("record: %+v, %v; want state unknown", op, err)
	}
}

func TestDoNotStartedReleases(t *testing.T) {
	s, st, _ := newService(t)
	notStarted := fmt.Errorf("file_version_conflict: %w", ErrNotStarted)
	var n atomic.Int64
	checkOutcome(t, "not started", do(t, s, key, "sha256:a", func(context.Context) ([]byte, error) {
		n.Add(1)
		return nil, notStarted
	}), outcome{Err: ErrNotStarted})
	if _, err := st.Operation(context.Background(), store.OperationKey(key)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("record after ErrNotStarted: err = %v, want ErrNotFound", err)
	}
	// The retry runs, and may even carry a different request.
	checkOutcome(t, "retry", do(t, s, key, "sha256:b", counter(&n, "ok")), outcome{Result: "ok"})
	if n.Load() != 2 {
		t.Errorf("fn ran %d times, want 2", n.Load())
	}
}

func TestDoPanicMarksUnknown(t *testing.T) {
	s, _, _ := newService(t)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("panic was swallowed")
			}
		}()
		s.Do(context.Background(), key, "sha256:a", func(context.Context) ([]byte, error) { panic("bug") })
	}()
	var n atomic.Int64
	checkOutcome(t, "after panic", do(t, s, key, "sha256:a", counter(&n, "r")), outcome{Err: ErrOutcomeUnknown})
}

func TestDoCancelledCallerStillRecords(t *testing.T) {
	s, _, _ := newService(t)
	ctx, cancel := context.WithCancel(context.Background())
	res, _, err := s.Do(ctx, key, "sha256:a", func(context.Context) ([]byte, error) {
		cancel() // the client went away while the effect completed
		return []byte("done"), nil
	})
	if err != nil || string(res) != "done" {
		t.Fatalf("Do = %q, %v", res, err)
	}
	var n atomic.Int64
	checkOutcome(t, "retry", do(t, s, key, "sha256:a", counter(&n, "again")), outcome{Result: "done", Replayed: true})
}

func TestDoResultTooLarge(t *testing.T) {
	s, _, _ := newService(t)
	var n atomic.Int64
	big := func(context.Context) ([]byte, error) {
		n.Add(1)
		return bytes.Repeat([]byte("x"), MaxResultBytes+1), nil
	}
	checkOutcome(t, "too large", do(t, s, key, "sha256:a", big), outcome{Err: ErrResultTooLarge})
	checkOutcome(t, "retry", do(t, s, key, "sha256:a", big), outcome{Err: ErrOutcomeUnknown})
	if n.Load() != 1 {
		t.Errorf("fn ran %d times, want 1", n.Load())
	}
	k := key
	k.OperationID = "op-limit"
	res, _, err := s.Do(context.Background(), k, "sha256:a", func(context.Context) ([]byte, error) {
		return bytes.Repeat([]byte("x"), MaxResultBytes), nil
	})
	if err != nil || len(res) != MaxResultBytes {
		t.Errorf("result of exactly the limit: %d bytes, %v", len(res), err)
	}
}

func TestDoKeysIndependent(t *testing.T) {
	s, _, _ := newService(t)
	var n atomic.Int64
	keys := []Key{
		key,
		{GrantID: "grant-2", ExecutionID: "exec-1", Tool: "apply_patch", OperationID: "op-1"},
		{GrantID: "grant-1", ExecutionID: "exec-2", Tool: "apply_patch", OperationID: "op-1"},
		{GrantID: "grant-1", ExecutionID: "", Tool: "apply_patch", OperationID: "op-1"},
		{GrantID: "grant-1", ExecutionID: "exec-1", Tool: "exec_command", OperationID: "op-1"},
		{GrantID: "grant-1", ExecutionID: "exec-1", Tool: "apply_patch", OperationID: " op-1"},
		{GrantID: "grant-1", ExecutionID: "exec-1", Tool: "apply_patch", OperationID: "op-1 "},
		{GrantID: "grant-1", ExecutionID: "exec-1", Tool: "apply_patch", OperationID: "OP-1"},
	}
	for i, k := range keys {
		want := fmt.Sprintf("r%d", i)
		// Each key uses another request hash too: no cross-key conflict.
		checkOutcome(t, fmt.Sprintf("key %+v", k), do(t, s, k, "sha256:"+want, counter(&n, want)), outcome{Result: want})
	}
	for i, k := range keys {
		want := fmt.Sprintf("r%d", i)
		checkOutcome(t, fmt.Sprintf("replay %+v", k), do(t, s, k, "sha256:"+want, counter(&n, "x")), outcome{Result: want, Replayed: true})
	}
	if n.Load() != int64(len(keys)) {
		t.Errorf("fn ran %d times, want %d", n.Load(), len(keys))
	}
}

func TestDoInvalidInput(t *testing.T) {
	s, _, _ := newService(t)
	never := func(context.Context) ([]byte, error) { t.Error("fn ran"); return nil, nil }
	for name, k := range map[string]Key{
		"empty id":  {GrantID: "g", Tool: "t"},
		"nul id":    {GrantID: "g", Tool: "t", OperationID: "a\x00"},
		"long id":   {GrantID: "g", Tool: "t", OperationID: strings.Repeat("a", 129)},
		"bad utf-8": {GrantID: "g", Tool: "t", OperationID: "\xff"},
	} {
		if _, _, err := s.Do(context.Background(), k, "sha256:a", never); !errors.Is(err, ErrInvalidID) {
			t.Errorf("%s: err = %v, want ErrInvalidID", name, err)
		}
	}
	for name, k := range map[string]Key{"no grant": {Tool: "t", OperationID: "x"}, "no tool": {GrantID: "g", OperationID: "x"}} {
		if _, _, err := s.Do(context.Background(), k, "sha256:a", never); err == nil {
			t.Errorf("%s: Do succeeded", name)
		}
	}
	if _, _, err := s.Do(context.Background(), key, "", never); err == nil {
		t.Error("empty request hash: Do succeeded")
	}
}

func TestPrune(t *testing.T) {
	s, _, clk := newService(t)
	var n atomic.Int64
	do(t, s, key, "sha256:a", counter(&n, "first"))

	clk.Advance(DefaultTTL - time.Second)
	if got, err := s.Prune(context.Background()); err != nil || got != 0 {
		t.Fatalf("Prune before TTL = %d, %v; want 0", got, err)
	}
	checkOutcome(t, "before TTL", do(t, s, key, "sha256:a", counter(&n, "second")), outcome{Result: "first", Replayed: true})

	clk.Advance(time.Second)
	if got, err := s.Prune(context.Background()); err != nil || got != 1 {
		t.Fatalf("Prune at TTL = %d, %v; want 1", got, err)
	}
	// The record is gone: the same key is a new operation.
	checkOutcome(t, "after TTL", do(t, s, key, "sha256:b", counter(&n, "third")), outcome{Result: "third"})
	if n.Load() != 2 {
		t.Errorf("fn ran %d times, want 2", n.Load())
	}
}

func TestTTLOption(t *testing.T) {
	clk := testutil.NewClock(time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC))
	s := New(openStore(t, t.TempDir(), clk), Options{TTL: time.Minute})
	var n atomic.Int64
	do(t, s, key, "sha256:a", counter(&n, "first"))
	clk.Advance(time.Minute)
	// Expired but not pruned: still treated as gone.
	checkOutcome(t, "after custom TTL", do(t, s, key, "sha256:a", counter(&n, "second")), outcome{Result: "second"})
}

// TestDoSaysItsPhase: each way an effect fails says the phase its record
// holds (fault.PhaseOf), and the retry with the same key answers
// accordingly: not started runs again; anything else is outcome unknown,
// and the retry is refused with ErrOutcomeUnknown. A coded error of the
// effect keeps its code; an uncoded one answers operation_outcome_unknown.
func TestDoSaysItsPhase(t *testing.T) {
	coded := fault.New("project_execution_required", "project execution required")
	tests := []struct {
		name  string
		fn    func(context.Context) ([]byte, error)
		code  string
		phase fault.Phase
	}{
		{"not started", func(context.Context) ([]byte, error) { return nil, NotStarted(coded) },
			"project_execution_required", fault.NotStarted},
		{"failed part way, coded", func(context.Context) ([]byte, error) { return nil, fmt.Errorf("add to table: %w", coded) },
			"project_execution_required", fault.OutcomeUnknown},
		{"failed part way, uncoded", func(context.Context) ([]byte, error) { return nil, errors.New("disk I/O error") },
			"operation_outcome_unknown", fault.OutcomeUnknown},
		{"result too large", func(context.Context) ([]byte, error) { return bytes.Repeat([]byte("x"), MaxResultBytes+1), nil },
			"operation_outcome_unknown", fault.OutcomeUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, _ := newService(t)
			_, _, err := s.Do(context.Background(), key, "sha256:a", tt.fn)
			code, _ := fault.CodeOf(err)
			phase, _ := fault.PhaseOf(err)
			if code != tt.code || phase != tt.phase {
				t.Fatalf("%v: code %q, phase %q; want %q, %q", err, code, phase, tt.code, tt.phase)
			}
			var ran bool
			_, _, err = s.Do(context.Background(), key, "sha256:a", func(context.Context) ([]byte, error) { ran = true; return nil, nil })
			retry, _ := fault.PhaseOf(err)
			switch {
			case phase == fault.NotStarted && (!ran || err != nil):
				t.Errorf("retry after not started: ran %v, %v", ran, err)
			case phase == fault.OutcomeUnknown && (ran || !errors.Is(err, ErrOutcomeUnknown) || retry != fault.OutcomeUnknown):
				t.Errorf("retry after outcome unknown: ran %v, %v (phase %q)", ran, err, retry)
			}
		})
	}
}

// TestGrantResultBytes: one grant's stored results are bounded. Past
// GrantBytes its oldest results are dropped (down to three quarters):
// their retries are answered "outcome unknown" and never run again; its
// newest replay; another grant's records are untouched; and a new Service
// over the same store counts what the grant already holds.
func TestGrantResultBytes(t *testing.T) {
	clk := testutil.NewClock(time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC))
	st := openStore(t, t.TempDir(), clk)
	s := New(st, Options{GrantBytes: 10_000})
	result := strings.Repeat("r", 3_000)
	keyOf := func(grant string, i int) Key {
		return Key{GrantID: grant, ExecutionID: "exec-1", Tool: "exec_command", OperationID: fmt.Sprintf("op-%d", i)}
	}
	var runs atomic.Int64
	other := keyOf("grant-2", 0)
	checkOutcome(t, "other grant", do(t, s, other, "h", counter(&runs, result)), outcome{Result: result})
	for i := range 4 { // 12,000 bytes: past 10,000 at the fourth
		clk.Advance(time.Second)
		checkOutcome(t, fmt.Sprintf("op-%d", i), do(t, s, keyOf("grant-1", i), "h", counter(&runs, result)), outcome{Result: result})
	}
	if n, err := st.OperationResultBytes(context.Background(), "grant-1"); err != nil || n > 7_500 {
		t.Fatalf("grant-1 holds %d bytes (%v), want at most 7,500", n, err)
	}
	before := runs.Load()
	for i, want := range []outcome{
		{Err: ErrOutcomeUnknown}, {Err: ErrOutcomeUnknown}, // dropped, the oldest
		{Result: result, Replayed: true}, {Result: result, Replayed: true},
	} {
		checkOutcome(t, fmt.Sprintf("retry of op-%d", i), do(t, s, keyOf("grant-1", i), "h", counter(&runs, result)), want)
	}
	checkOutcome(t, "other grant's retry", do(t, s, other, "h", counter(&runs, result)), outcome{Result: result, Replayed: true})
	if runs.Load() != before {
		t.Fatalf("a retry ran its effect again (%d runs, want %d)", runs.Load(), before)
	}

	// A restart: the new Service counts what grant-1 holds (6,000) first.
	s = New(st, Options{GrantBytes: 10_000})
	for i := 4; i < 6; i++ {
		clk.Advance(time.Second)
		checkOutcome(t, fmt.Sprintf("op-%d", i), do(t, s, keyOf("grant-1", i), "h", counter(&runs, result)), outcome{Result: result})
	}
	if n, err := st.OperationResultBytes(context.Background(), "grant-1"); err != nil || n > 7_500 {
		t.Fatalf("after a restart grant-1 holds %d bytes (%v), want at most 7,500", n, err)
	}
	if n, err := st.OperationResultBytes(context.Background(), "grant-2"); err != nil || n != 3_000 {
		t.Errorf("grant-2 holds %d bytes (%v), want its 3,000", n, err)
	}
}
