package store

import (
	"context"
	"errors"
	"strings"
	"testing"
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
