package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func createTestExecution(t *testing.T, s *Store, id string) {
	t.Helper()
	if err := s.CreateExecution(context.Background(), &Execution{ID: id, GrantID: "g1", ClientID: "c1", ProjectRef: "p1",
		SessionRef: "s-" + id, ActorRef: "a1"}); err != nil {
		t.Fatalf("CreateExecution(%s): %v", id, err)
	}
}

func TestJournalRoom(t *testing.T) {
	ctx := context.Background()
	s, _ := openTestStore(t)
	createTestExecution(t, s, "e1")
	createTestExecution(t, s, "e2")
	lim := JournalLimits{MaxEntries: 3, MaxBytes: 1000}

	if err := s.JournalRoom(ctx, "e1", 1000, lim); err != nil {
		t.Fatalf("empty journal, entry at the byte limit: %v", err)
	}
	if err := s.JournalRoom(ctx, "e1", 1001, lim); !errors.Is(err, ErrJournalFull) {
		t.Fatalf("empty journal, entry over the byte limit: %v, want ErrJournalFull", err)
	}
	for _, n := range []int{400, 300} {
		if _, err := s.AppendJournal(ctx, "e1", JournalApplied, "[]", strings.Repeat("x", n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.JournalRoom(ctx, "e1", 300, lim); err != nil {
		t.Fatalf("700 + 300 bytes, 2 entries: %v", err)
	}
	if err := s.JournalRoom(ctx, "e1", 301, lim); !errors.Is(err, ErrJournalFull) {
		t.Fatalf("700 + 301 bytes: %v, want ErrJournalFull", err)
	}
	if _, err := s.AppendJournal(ctx, "e1", JournalApplied, "[]", "y"); err != nil {
		t.Fatal(err)
	}
	if err := s.JournalRoom(ctx, "e1", 1, lim); !errors.Is(err, ErrJournalFull) {
		t.Fatalf("3 entries of 3: %v, want ErrJournalFull", err)
	}
	// Another execution's journal is its own.
	if err := s.JournalRoom(ctx, "e2", 1000, lim); err != nil {
		t.Fatalf("other execution: %v", err)
	}
}

// TestJournalRoomUsesIndex pins the query plan: the count and sum come
// from the index alone, never from the rows and their large diffs.
func TestJournalRoomUsesIndex(t *testing.T) {
	s, _ := openTestStore(t)
	var plan []struct{ Detail string }
	if err := s.db.Raw("EXPLAIN QUERY PLAN "+journalRoomSQL, "e1").Scan(&plan).Error; err != nil {
		t.Fatal(err)
	}
	if len(plan) != 1 || !strings.Contains(plan[0].Detail, "USING COVERING INDEX patch_journal_execution") {
		t.Fatalf("query plan = %+v, want a search using the covering index patch_journal_execution", plan)
	}
}

// BenchmarkJournalRoom checks room in a journal of ten 500 KiB diffs (a
// conversation's worth of large patches), against the same count and
// sum read from the rows, as before migration 10.
func BenchmarkJournalRoom(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateExecution(ctx, &Execution{ID: "e1", GrantID: "g1", ClientID: "c1", ProjectRef: "p1", SessionRef: "s1", ActorRef: "a1"}); err != nil {
		b.Fatal(err)
	}
	diff := strings.Repeat("+a line of a large diff\n", 500<<10/24)
	for range 10 {
		if _, err := s.AppendJournal(ctx, "e1", JournalApplied, "[]", diff); err != nil {
			b.Fatal(err)
		}
	}
	lim := JournalLimits{MaxEntries: 1000, MaxBytes: 64 << 20}
	b.Run("index", func(b *testing.B) {
		for b.Loop() {
			if err := s.JournalRoom(ctx, "e1", 1, lim); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("rows", func(b *testing.B) {
		for b.Loop() {
			var room struct{ N, Total int64 }
			if err := s.db.Raw(`SELECT COUNT(*) AS n, COALESCE(SUM(bytes), 0) AS total FROM patch_journal NOT INDEXED
				WHERE execution_id = ?`, "e1").Scan(&room).Error; err != nil || room.N != 10 {
				b.Fatal(err, room)
			}
		}
	})
}

// TestRecentJournal lists entries of every execution by kind, newest
// first, with the grant and Project of their execution and a bounded
// diff prefix.
func TestRecentJournal(t *testing.T) {
	ctx := context.Background()
	s, clk := openTestStore(t)
	for _, e := range []*Execution{
		{ID: "e1", GrantID: "g1", ClientID: "c1", ProjectRef: "p1", SessionRef: "s1", ActorRef: "a1"},
		{ID: "e2", GrantID: "g2", ClientID: "c2", ProjectRef: "p2", SessionRef: "s2", ActorRef: "a2"},
	} {
		if err := s.CreateExecution(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	add := func(exec, kind, diff string) {
		t.Helper()
		clk.Advance(time.Second)
		if _, err := s.AppendJournal(ctx, exec, kind, `[{"path":"`+diff+`"}]`, diff); err != nil {
			t.Fatal(err)
		}
	}
	add("e1", JournalApplied, "one")
	add("e2", JournalApplied, "twoé")
	add("e1", JournalUndone, "three")
	add("e2", JournalRedone, "four")
	add("e1", JournalApplied, "five")
	// An entry from before kinds were recorded.
	if err := s.db.Exec(`UPDATE patch_journal SET kind = '' WHERE diff = 'one'`).Error; err != nil {
		t.Fatal(err)
	}

	type row struct{ Exec, Grant, Project, Kind, Diff string }
	list := func(kinds []string, n, diffChars int) []row {
		t.Helper()
		recs, err := s.RecentJournal(ctx, kinds, n, diffChars)
		if err != nil {
			t.Fatal(err)
		}
		out := []row{}
		for i, r := range recs {
			out = append(out, row{r.ExecutionID, r.GrantID, r.Project, r.Kind, r.Diff})
			if r.CreatedAt.IsZero() || r.Seq == 0 || r.Bytes == 0 || !strings.Contains(r.Files, `"path"`) {
				t.Errorf("record %d: %+v", i, r)
			}
			if i > 0 && recs[i-1].Seq < r.Seq {
				t.Errorf("not newest first: %d before %d", recs[i-1].Seq, r.Seq)
			}
		}
		return out
	}
	for _, tt := range []struct {
		name     string
		kinds    []string
		n, chars int
		want     []row
	}{
		{"patches", []string{JournalApplied, ""}, 10, 100, []row{
			{"e1", "g1", "p1", JournalApplied, "five"}, {"e2", "g2", "p2", JournalApplied, "twoé"}, {"e1", "g1", "p1", "", "one"}}},
		{"undos without diffs", []string{JournalUndone, JournalRedone}, 10, 0, []row{
			{"e2", "g2", "p2", JournalRedone, ""}, {"e1", "g1", "p1", JournalUndone, ""}}},
		{"bounded", []string{JournalApplied}, 1, 100, []row{{"e1", "g1", "p1", JournalApplied, "five"}}},
		{"diff prefix in characters", []string{JournalApplied}, 2, 4, []row{
			{"e1", "g1", "p1", JournalApplied, "five"}, {"e2", "g2", "p2", JournalApplied, "twoé"}}},
		{"diff prefix cut", []string{JournalApplied}, 2, 3, []row{
			{"e1", "g1", "p1", JournalApplied, "fiv"}, {"e2", "g2", "p2", JournalApplied, "two"}}},
		{"none asked", []string{JournalApplied}, 0, 10, []row{}},
		{"no kinds", nil, 10, 10, []row{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, list(tt.kinds, tt.n, tt.chars)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestRecentJournalUsesIndex pins the plan: entries are chosen and
// ordered from patch_journal_kind alone, and only the chosen rows (and
// their diffs) are read.
func TestRecentJournalUsesIndex(t *testing.T) {
	s, _ := openTestStore(t)
	var plan []struct{ Detail string }
	q := "EXPLAIN QUERY PLAN " + fmt.Sprintf(recentJournalSQL, "''")
	if err := s.db.Raw(q, []string{JournalApplied, ""}, 10).Scan(&plan).Error; err != nil {
		t.Fatal(err)
	}
	var details []string
	for _, p := range plan {
		details = append(details, p.Detail)
	}
	joined := strings.Join(details, "; ")
	if !strings.Contains(joined, "USING COVERING INDEX patch_journal_kind") || !strings.Contains(joined, "SEARCH j USING INTEGER PRIMARY KEY") ||
		strings.Contains(joined, "SCAN j") {
		t.Fatalf("query plan = %s, want the entries chosen from patch_journal_kind alone, then read by id", joined)
	}
}
