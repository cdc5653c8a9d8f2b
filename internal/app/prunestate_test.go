package app_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/store"
)

// TestServerPrunesItsState: what grows with every call of a grant —
// idempotency records, token issuances, audit events, Thread activity —
// is pruned by the running server (at start, then every 10 minutes): an
// expired record, an audit event 100 days old, a grant's issuances beyond
// its newest 64, its closed executions beyond its newest 200 and a
// Thread's activity beyond its newest 1,000 are gone after a restart, and
// what is still needed stays.
func TestServerPrunesItsState(t *testing.T) {
	ctx := context.Background()
	env := apptest.Start(t, apptest.Options{})
	env.Stop()

	now := time.Now()
	at := now
	st, err := store.Open(ctx, env.StateDir, store.Options{Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	at = now.Add(-48 * time.Hour)
	expired := store.OperationKey{GrantID: "g-loop", ExecutionID: "e1", Tool: "apply_patch", OperationID: "old"}
	live := store.OperationKey{GrantID: "g-loop", ExecutionID: "e1", Tool: "apply_patch", OperationID: "new"}
	if _, _, err := st.ReserveOperation(ctx, expired, "sha256:old", 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendAudit(ctx, store.AuditEvent{At: now.Add(-100 * 24 * time.Hour), Kind: "ancient"}); err != nil {
		t.Fatal(err)
	}
	at = now
	if _, _, err := st.ReserveOperation(ctx, live, "sha256:new", 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendAudit(ctx, store.AuditEvent{Kind: "recent"}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateGrant(ctx, &store.Grant{ID: "g-loop", ClientID: "c1", Scopes: []string{"project:read"}, ProjectIDs: []string{"p"}}); err != nil {
		t.Fatal(err)
	}
	later := now.Add(time.Hour)
	var parent int64
	for i := range 70 {
		tok := &store.Token{GrantID: "g-loop", ClientID: "c1", ParentID: parent, AccessHash: fmt.Sprintf("a%d", i),
			RefreshHash: fmt.Sprintf("r%d", i), AccessExpiresAt: &later, RefreshExpiresAt: &later}
		if err := st.CreateToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		parent = tok.ID
	}
	if err := st.CreateExecution(ctx, &store.Execution{ID: "e1", GrantID: "g-loop", ClientID: "c1", ProjectRef: "p1",
		SessionRef: "s1", ActorRef: "a1"}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateThread(ctx, &store.Thread{Ref: "thr_1", ExecutionID: "e1", GrantID: "g-loop", ActorRef: "a1", ProjectRef: "p1",
		Status: "active"}, "thread_started", "{}"); err != nil {
		t.Fatal(err)
	}
	for i := range 1_100 {
		if _, err := st.AppendActivity(ctx, "thr_1", "command", fmt.Sprintf(`{"n":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	// 205 closed conversations of another grant, one at a time.
	for i := range 205 {
		at = now.Add(time.Duration(i) * time.Second)
		if err := st.CreateExecution(ctx, &store.Execution{ID: fmt.Sprintf("x%03d", i), GrantID: "g-sessions", ClientID: "c1",
			ProjectRef: "p1", SessionRef: fmt.Sprintf("s%03d", i), ActorRef: "a1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.CloseExecutions(ctx, []string{"g-sessions"}, "test"); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	env.Restart() // the first round runs at once in the background
	deadline := time.Now().Add(10 * time.Second)
	for {
		events, err := env.App.AuditEvents(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		gone := true
		for _, e := range events {
			gone = gone && e.Kind != "ancient"
		}
		if gone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the 100-day-old audit event is still there: %+v", events)
		}
		time.Sleep(20 * time.Millisecond)
	}
	env.Stop() // waits for the round under way

	st, err = store.Open(ctx, env.StateDir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Operation(ctx, expired); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the expired record: %v, want it pruned", err)
	}
	if _, err := st.Operation(ctx, live); err != nil {
		t.Errorf("the live record: %v", err)
	}
	if _, err := st.TokenByRefreshHash(ctx, "r5"); err == nil {
		t.Error("an issuance beyond the grant's newest 64 survived")
	}
	if _, err := st.TokenByRefreshHash(ctx, "r69"); err != nil {
		t.Errorf("the grant's newest issuance: %v", err)
	}
	if _, err := st.TokenByRefreshHash(ctx, "r6"); err != nil {
		t.Errorf("the 64th newest issuance: %v", err)
	}
	acts, err := st.ActivitySince(ctx, "thr_1", 0, 5_000)
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 1_000 || acts[len(acts)-1].Data != `{"n":1099}` {
		t.Errorf("the Thread keeps %d entries (last %+v), want its newest 1,000", len(acts), acts[len(acts)-1])
	}
	if _, err := st.ExecutionByID(ctx, "x004"); err == nil {
		t.Error("a closed execution beyond the grant's newest 200 survived")
	}
	if _, err := st.ExecutionByID(ctx, "x005"); err != nil {
		t.Errorf("the 200th newest closed execution: %v", err)
	}
	if _, err := st.ExecutionByID(ctx, "e1"); err != nil {
		t.Errorf("the other grant's execution: %v", err)
	}
	events, err := st.RecentAudit(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	recent := false
	for _, e := range events {
		recent = recent || e.Kind == "recent"
	}
	if !recent {
		t.Errorf("the recent audit event was pruned: %+v", events)
	}
}
