package executions

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/devspace-dev/devspace/internal/cursor"
	"github.com/devspace-dev/devspace/internal/idempotency"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/store"
)

// seeingResources records, when the close reaches what an execution
// owns, whether the handle in use was closed already and whether the
// execution still resolved.
type seeingResources struct {
	nopResources
	svc     *Service
	caller  Caller
	handle  Handle
	called  bool
	handErr error
	resolve error
}

func (r *seeingResources) CloseExecutions(ctx context.Context, _ []string, _ string) {
	r.called = true
	r.handErr = r.handle.Err()
	_, r.resolve = r.svc.Resolve(ctx, r.caller)
}

// TestHandleClosesBeforeKill: every close path (revocation, Thread close,
// Project removal) cancels the handles in use before it reaches what the
// execution owns, and a call resolving meanwhile — the store still has
// the execution open — is refused.
func TestHandleClosesBeforeKill(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, filepath.Join(dir, "state"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cat, err := project.NewCatalog(key, []project.Spec{{Label: "alpha", Path: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	ref := cat.Roots()[0].Ref
	res := &seeingResources{}
	svc := New(Options{Store: st, Catalog: cat, Operations: idempotency.New(st, idempotency.Options{}),
		Cursors: cursor.New(key, cursor.Options{}), FingerKey: key, Resources: res})
	res.svc = svc
	c := Caller{GrantID: "g1", ClientID: "c1", Scopes: []string{"project:read"}, ProjectIDs: []string{ref},
		GrantEpoch: 1, GlobalEpoch: 1, SessionRef: "s1", ActorRef: "a1"}
	res.caller = c

	closes := map[string]func(t *testing.T) error{
		"revocation": func(*testing.T) error { return svc.CloseGrants(ctx, []string{"g1"}, "grant_revoked") },
		"thread close": func(t *testing.T) error {
			threads, err := svc.Threads(ctx, c)
			if err != nil || len(threads) == 0 {
				t.Fatalf("threads: %v, %v", threads, err)
			}
			th := threads[len(threads)-1]
			_, err = svc.SetThreadStatus(ctx, c, th.ThreadRef, store.ThreadClosed, th.Revision)
			return err
		},
	}
	for i, name := range []string{"thread close", "revocation"} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := svc.Open(ctx, c, ref, "op"+string(rune('a'+i)), false); err != nil {
				t.Fatal(err)
			}
			h, err := svc.Resolve(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Release()
			if h.Err() != nil {
				t.Fatalf("open handle: %v", h.Err())
			}
			*res = seeingResources{svc: svc, caller: c, handle: h}
			if err := closes[name](t); err != nil {
				t.Fatal(err)
			}
			if !res.called {
				t.Fatal("the close never reached the execution's resources")
			}
			if !errors.Is(res.handErr, ErrExecutionRequired) {
				t.Errorf("handle at kill time: %v; want closed", res.handErr)
			}
			if !errors.Is(res.resolve, ErrExecutionRequired) {
				t.Errorf("resolve during the close: %v; want %v", res.resolve, ErrExecutionRequired)
			}
			select {
			case <-h.Context().Done():
			default:
				t.Error("the handle's context is not cancelled")
			}
		})
	}
}

// TestRegistryTombstones: a close refuses new handles until the store
// holds it and closedTTL passes; released handles leave nothing behind.
func TestRegistryTombstones(t *testing.T) {
	r := newRegistry()
	l, ok := r.acquire("e1")
	if !ok {
		t.Fatal("acquire of an open execution refused")
	}
	l2, _ := r.acquire("e1")
	if l2 != l {
		t.Fatal("two handles of one execution do not share its state")
	}
	r.release("e1", l)
	r.release("e1", l2)
	if len(r.lives) != 0 {
		t.Fatalf("released handles left %d entries", len(r.lives))
	}
	l, _ = r.acquire("e1")
	r.markClosed([]string{"e1"})
	if l.ctx.Err() == nil {
		t.Fatal("close did not cancel the handle in use")
	}
	if _, ok := r.acquire("e1"); ok {
		t.Fatal("closed execution handed out again")
	}
	r.recorded([]string{"e1"})
	if _, ok := r.acquire("e1"); ok {
		t.Fatal("recorded close handed out again within closedTTL")
	}
	// Past closedTTL the next close prunes the tombstone; the store says
	// closed from then on.
	r.closed["e1"] = tombstone{recorded: r.closed["e1"].recorded.Add(-closedTTL - 1)}
	r.markClosed([]string{"e2"})
	if _, ok := r.closed["e1"]; ok {
		t.Fatal("an old recorded tombstone was kept")
	}
	if _, ok := r.closed["e2"]; !ok {
		t.Fatal("an unrecorded tombstone was pruned")
	}
}
