package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/devspace-dev/devspace/internal/fault"
)

// ErrJournalFull is returned when an execution's patch journal is at its
// bounds; the caller should open a new execution (patch_journal_full).
var ErrJournalFull = fault.New("patch_journal_full", "patch journal full")

// JournalLimits bound one execution's journal.
type JournalLimits struct {
	MaxEntries int   // 1000
	MaxBytes   int64 // 64 MiB of diff text
}

// Journal entry kinds: what changed the files. Entries written before
// the kind was recorded (schema version 12) have none ("").
const (
	JournalApplied = "patch_applied" // apply_patch
	JournalUndone  = "patch_undone"  // undo_patch
	JournalRedone  = "patch_redone"  // undo_patch with redo
)

// JournalEntry is one successful patch of an execution.
type JournalEntry struct {
	Seq       int64
	Files     string // JSON list of {path, action, added, removed}
	Diff      string // unified diff text
	CreatedAt time.Time
}

type journalRow struct {
	ID          int64 `gorm:"primaryKey;autoIncrement"`
	ExecutionID string
	Files       string
	Diff        string
	Bytes       int64
	CreatedAt   time.Time
	Kind        string
}

func (journalRow) TableName() string { return "patch_journal" }

// journalRoomSQL is answered from the index patch_journal_execution
// alone (migration 10), never from the rows and their diffs.
const journalRoomSQL = `SELECT COUNT(*) AS n, COALESCE(SUM(bytes), 0) AS total FROM patch_journal WHERE execution_id = ?`

// JournalRoom reports whether one more entry of size bytes fits.
func (s *Store) JournalRoom(ctx context.Context, executionID string, size int64, lim JournalLimits) error {
	var room struct{ N, Total int64 }
	if err := s.db.WithContext(ctx).Raw(journalRoomSQL, executionID).Scan(&room).Error; err != nil {
		return err
	}
	if int(room.N) >= lim.MaxEntries || room.Total+size > lim.MaxBytes {
		return ErrJournalFull
	}
	return nil
}

// AppendJournal records a successful patch, undo or redo (kind, one of
// JournalApplied, JournalUndone and JournalRedone).
func (s *Store) AppendJournal(ctx context.Context, executionID, kind, files, diff string) (int64, error) {
	row := journalRow{ExecutionID: executionID, Files: files, Diff: diff, Bytes: int64(len(diff)), CreatedAt: s.now(), Kind: kind}
	err := s.emergency(func() error {
		row.ID = 0
		return s.db.WithContext(ctx).Session(&gorm.Session{}).Create(&row).Error
	})
	return row.ID, err
}

// Journal returns an execution's entries, oldest first.
func (s *Store) Journal(ctx context.Context, executionID string) ([]JournalEntry, error) {
	var rows []journalRow
	if err := s.db.WithContext(ctx).Where("execution_id = ?", executionID).Order("id").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]JournalEntry, len(rows))
	for i, r := range rows {
		out[i] = JournalEntry{Seq: r.ID, Files: r.Files, Diff: r.Diff, CreatedAt: r.CreatedAt}
	}
	return out, nil
}

// JournalRecord is a journal entry in the Owner's view: whose execution
// made it, on which Project. Diff is at most the bound asked for; Bytes is
// the whole diff's size.
type JournalRecord struct {
	Seq                           int64
	ExecutionID, GrantID, Project string
	Kind, Files, Diff             string
	Bytes                         int64
	CreatedAt                     time.Time
}

// recentJournalSQL lists entries of some kinds, newest first. The
// entries, and all they list but the file list and the diff, come from
// the index patch_journal_kind alone (migration 12): a column after the
// diff in the row would cost a walk of the diff's overflow pages. Only
// the rows chosen are read, for the file list (before the diff) and the
// diff when asked (%s is its expression).
const recentJournalSQL = `SELECT k.id AS seq, k.execution_id, e.grant_id, e.project_ref AS project, k.kind, j.files, %s AS diff,
	k.bytes, k.created_at
	FROM (SELECT id, execution_id, kind, created_at, bytes FROM patch_journal INDEXED BY patch_journal_kind
		WHERE kind IN ? ORDER BY id DESC LIMIT ?) k
	JOIN patch_journal j ON j.id = k.id JOIN executions e ON e.id = k.execution_id
	ORDER BY k.id DESC`

// RecentJournal returns up to n entries of any execution whose kind is one
// of kinds ("" for the entries written before kinds were recorded), newest
// first, with at most diffChars characters of each diff (none when zero).
// It never returns more than 1,000 entries.
func (s *Store) RecentJournal(ctx context.Context, kinds []string, n, diffChars int) ([]JournalRecord, error) {
	n = min(max(n, 0), 1000)
	if n == 0 || len(kinds) == 0 {
		return []JournalRecord{}, nil
	}
	diff := "''"
	args := []any{kinds, n}
	if diffChars > 0 {
		diff = "substr(j.diff, 1, ?)"
		args = append([]any{diffChars}, args...)
	}
	var out []JournalRecord
	if err := s.db.WithContext(ctx).Raw(fmt.Sprintf(recentJournalSQL, diff), args...).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("recent patch journal: %w", err)
	}
	if out == nil {
		out = []JournalRecord{}
	}
	return out, nil
}
