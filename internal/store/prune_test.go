package store

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// count returns the rows of table.
func count(t *testing.T, s *Store, table, where string, args ...any) int64 {
	t.Helper()
	var n int64
	q := "SELECT COUNT(*) FROM " + table
	if where != "" {
		q += " WHERE " + where
	}
	if err := s.db.Raw(q, args...).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPruneAudit: events older than the cut-off go, and of the rest only
// the newest keep stay.
func TestPruneAudit(t *testing.T) {
	ctx := context.Background()
	s, clk := openTestStore(t)
	for i := range 10 {
		if err := s.AppendAudit(ctx, AuditEvent{Kind: fmt.Sprintf("old_%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(100 * 24 * time.Hour)
	for i := range 10 {
		if err := s.AppendAudit(ctx, AuditEvent{Kind: fmt.Sprintf("new_%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.PruneAudit(ctx, clk.Now().Add(-90*24*time.Hour), 100)
	if err != nil || n != 10 {
		t.Fatalf("by age: deleted %d (%v), want the 10 old ones", n, err)
	}
	if n, err = s.PruneAudit(ctx, clk.Now().Add(-90*24*time.Hour), 4); err != nil || n != 6 {
		t.Fatalf("by count: deleted %d (%v), want 6", n, err)
	}
	left, err := s.RecentAudit(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 4 || left[0].Kind != "new_9" || left[3].Kind != "new_6" {
		t.Errorf("left %+v, want new_9 … new_6", left)
	}
	if n, err = s.PruneAudit(ctx, clk.Now().Add(-90*24*time.Hour), 4); err != nil || n != 0 {
		t.Errorf("again: deleted %d (%v), want 0", n, err)
	}
}

// TestPruneActivity: each Thread keeps its newest entries, whatever the
// others hold.
func TestPruneActivity(t *testing.T) {
	ctx := context.Background()
	s, _ := openTestStore(t)
	for _, th := range []struct {
		ref     string
		entries int
	}{{"thr_busy", 12}, {"thr_quiet", 2}} {
		createTestExecution(t, s, "e-"+th.ref)
		if err := s.CreateThread(ctx, &Thread{Ref: th.ref, ExecutionID: "e-" + th.ref, GrantID: "g1", ActorRef: "a1", ProjectRef: "p1",
			Status: "active"}, "thread_started", "{}"); err != nil {
			t.Fatal(err)
		}
		for i := range th.entries - 1 {
			if _, err := s.AppendActivity(ctx, th.ref, "command", fmt.Sprintf(`{"n":%d}`, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	n, err := s.PruneActivity(ctx, 5)
	if err != nil || n != 7 {
		t.Fatalf("deleted %d (%v), want 7 of thr_busy's 12", n, err)
	}
	got, err := s.ActivitySince(ctx, "thr_busy", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || got[4].Data != `{"n":10}` || got[0].Data != `{"n":6}` {
		t.Errorf("thr_busy keeps %+v, want its newest 5", got)
	}
	if q := count(t, s, "thread_activity", "thread_ref = ?", "thr_quiet"); q != 2 {
		t.Errorf("thr_quiet keeps %d entries, want its 2", q)
	}
}

// TestPruneGrantTokens: each grant keeps its newest issuances; a grant
// with few keeps them all.
func TestPruneGrantTokens(t *testing.T) {
	ctx := context.Background()
	s, _ := openTestStore(t)
	for _, g := range []struct {
		id   string
		rows int
	}{{"g-loop", 20}, {"g-calm", 3}} {
		if err := s.CreateGrant(ctx, &Grant{ID: g.id, ClientID: "c1", Scopes: []string{"project:read"}, ProjectIDs: []string{"p"}}); err != nil {
			t.Fatal(err)
		}
		var parent int64
		for i := range g.rows {
			tok := &Token{GrantID: g.id, ClientID: "c1", ParentID: parent, AccessHash: fmt.Sprintf("%s-a%d", g.id, i), RefreshHash: fmt.Sprintf("%s-r%d", g.id, i)}
			if err := s.CreateToken(ctx, tok); err != nil {
				t.Fatal(err)
			}
			parent = tok.ID
		}
	}
	n, err := s.PruneGrantTokens(ctx, 8)
	if err != nil || n != 12 {
		t.Fatalf("deleted %d (%v), want 12 of g-loop's 20", n, err)
	}
	if got := count(t, s, "oauth_tokens", "grant_id = ?", "g-loop"); got != 8 {
		t.Errorf("g-loop keeps %d, want 8", got)
	}
	if got := count(t, s, "oauth_tokens", "grant_id = ?", "g-calm"); got != 3 {
		t.Errorf("g-calm keeps %d, want 3", got)
	}
	// The newest issuance still works as one: its refresh token is found.
	if _, err := s.TokenByRefreshHash(ctx, "g-loop-r19"); err != nil {
		t.Errorf("the newest issuance: %v", err)
	}
	if _, err := s.TokenByRefreshHash(ctx, "g-loop-r0"); err == nil {
		t.Error("the oldest issuance survived")
	}
}

// TestPruneClosedExecutions: a grant keeps its newest closed executions
// and every open one; the older closed ones go with their Thread,
// activity, journal and binding; another grant's are untouched.
func TestPruneClosedExecutions(t *testing.T) {
	ctx := context.Background()
	s, clk := openTestStore(t)
	open := func(grant, id string) {
		t.Helper()
		clk.Advance(time.Minute)
		if err := s.CreateExecution(ctx, &Execution{ID: id, GrantID: grant, ClientID: "c1", ProjectRef: "p1",
			SessionRef: "s-" + id, ActorRef: "a1"}); err != nil {
			t.Fatal(err)
		}
		if err := s.Bind(ctx, grant, "s-"+id, "a1", id); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateThread(ctx, &Thread{Ref: "thr-" + id, ExecutionID: id, GrantID: grant, ActorRef: "a1", ProjectRef: "p1",
			Status: "active"}, "opened", "{}"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendJournal(ctx, id, "patch", "[]", "diff"); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 4; i++ {
		open("g1", fmt.Sprintf("e%d", i))
		if _, err := s.CloseExecutions(ctx, []string{"g1"}, "test"); err != nil {
			t.Fatal(err)
		}
	}
	open("g1", "e5") // open: never pruned
	open("g2", "f1")
	if _, err := s.CloseExecutions(ctx, []string{"g2"}, "test"); err != nil {
		t.Fatal(err)
	}
	n, err := s.PruneClosedExecutions(ctx, 2)
	if err != nil || n != 2 {
		t.Fatalf("deleted %d (%v), want g1's two oldest closed", n, err)
	}
	for id, want := range map[string]bool{"e1": false, "e2": false, "e3": true, "e4": true, "e5": true, "f1": true} {
		_, err := s.ExecutionByID(ctx, id)
		if kept := err == nil; kept != want {
			t.Errorf("execution %s kept = %v (%v), want %v", id, kept, err, want)
		}
		for table, col := range map[string]string{"threads": "execution_id", "patch_journal": "execution_id", "bindings": "execution_id"} {
			if got := count(t, s, table, col+" = ?", id) > 0; got != want {
				t.Errorf("%s of %s kept = %v, want %v", table, id, got, want)
			}
		}
		if got := count(t, s, "thread_activity", "thread_ref = ?", "thr-"+id) > 0; got != want {
			t.Errorf("activity of %s kept = %v, want %v", id, got, want)
		}
	}
}
