package store

import (
	"context"
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

// AppendJournal records a successful patch.
func (s *Store) AppendJournal(ctx context.Context, executionID, files, diff string) (int64, error) {
	row := journalRow{ExecutionID: executionID, Files: files, Diff: diff, Bytes: int64(len(diff)), CreatedAt: s.now()}
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
