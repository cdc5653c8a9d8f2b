package store

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
)

// Thread states.
const (
	ThreadActive    = "active"
	ThreadArchived  = "archived"
	ThreadCompleted = "completed"
	ThreadClosed    = "closed"
)

// ErrThreadRevision: the Thread changed since the caller's revision.
var ErrThreadRevision = errors.New("thread revision conflict")

// Thread is the Actor-private record of one execution's work.
type Thread struct {
	Ref         string
	ExecutionID string
	GrantID     string
	ActorRef    string
	ProjectRef  string
	Status      string
	Revision    int64
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

type threadRow struct {
	ThreadRef   string `gorm:"primaryKey"`
	ExecutionID string
	GrantID     string
	ActorRef    string
	ProjectRef  string
	Status      string
	Revision    int64
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

func (threadRow) TableName() string { return "threads" }

func (r threadRow) toThread() *Thread {
	return &Thread{Ref: r.ThreadRef, ExecutionID: r.ExecutionID, GrantID: r.GrantID, ActorRef: r.ActorRef,
		ProjectRef: r.ProjectRef, Status: r.Status, Revision: r.Revision, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// Activity is one journal entry of a Thread; Seq increases.
type Activity struct {
	Seq  int64
	Kind string
	Data string // sanitized JSON object
	At   time.Time
}

type activityRow struct {
	ID        int64 `gorm:"primaryKey;autoIncrement"`
	ThreadRef string
	Kind      string
	Data      string
	At        time.Time
}

func (activityRow) TableName() string { return "thread_activity" }

// CreateThread inserts the Thread of an execution with its first activity.
// A second Thread for the same execution fails (write-once mapping).
func (s *Store) CreateThread(ctx context.Context, t *Thread, kind, data string) error {
	now := s.now()
	t.CreatedAt, t.UpdatedAt, t.Revision, t.Status = now, now, 1, ThreadActive
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		row := threadRow{ThreadRef: t.Ref, ExecutionID: t.ExecutionID, GrantID: t.GrantID, ActorRef: t.ActorRef,
			ProjectRef: t.ProjectRef, Status: t.Status, Revision: 1, CreatedAt: now, UpdatedAt: now}
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		return tx.Create(&activityRow{ThreadRef: t.Ref, Kind: kind, Data: data, At: now}).Error
	})
}

// ThreadOfExecution returns the Thread of an execution, or ErrNotFound.
func (s *Store) ThreadOfExecution(ctx context.Context, executionID string) (*Thread, error) {
	var row threadRow
	if err := s.db.WithContext(ctx).Where("execution_id = ?", executionID).Take(&row).Error; err != nil {
		return nil, notFound(err)
	}
	return row.toThread(), nil
}

// ThreadFor returns a Thread only when it belongs to grantID and actorRef;
// anything else is ErrNotFound (indistinguishable from absent).
func (s *Store) ThreadFor(ctx context.Context, ref, grantID, actorRef string) (*Thread, error) {
	var row threadRow
	if err := s.db.WithContext(ctx).Where("thread_ref = ? AND grant_id = ? AND actor_ref = ?", ref, grantID, actorRef).
		Take(&row).Error; err != nil {
		return nil, notFound(err)
	}
	return row.toThread(), nil
}

// Threads lists an Actor's Threads under a grant, newest first.
func (s *Store) Threads(ctx context.Context, grantID, actorRef string, limit int) ([]*Thread, error) {
	var rows []threadRow
	if err := s.db.WithContext(ctx).Where("grant_id = ? AND actor_ref = ?", grantID, actorRef).
		Order("updated_at DESC, thread_ref").Limit(limit).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]*Thread, len(rows))
	for i, r := range rows {
		out[i] = r.toThread()
	}
	return out, nil
}

// AppendActivity adds a journal entry and touches the Thread; it returns
// the entry's sequence number.
func (s *Store) AppendActivity(ctx context.Context, threadRef, kind, data string) (int64, error) {
	var seq int64
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		a := activityRow{ThreadRef: threadRef, Kind: kind, Data: data, At: s.now()}
		if err := tx.Create(&a).Error; err != nil {
			return err
		}
		seq = a.ID
		return tx.Model(&threadRow{}).Where("thread_ref = ?", threadRef).Update("updated_at", a.At).Error
	})
	return seq, err
}

// ActivitySince returns up to limit entries with Seq > since, oldest first.
func (s *Store) ActivitySince(ctx context.Context, threadRef string, since int64, limit int) ([]Activity, error) {
	var rows []activityRow
	if err := s.db.WithContext(ctx).Where("thread_ref = ? AND id > ?", threadRef, since).Order("id").Limit(limit).
		Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]Activity, len(rows))
	for i, r := range rows {
		out[i] = Activity{Seq: r.ID, Kind: r.Kind, Data: r.Data, At: r.At}
	}
	return out, nil
}

// SetThreadStatus changes a Thread's status if its revision is still
// expected, recording the change as activity, and returns the new Thread.
func (s *Store) SetThreadStatus(ctx context.Context, ref string, expected int64, status string) (*Thread, error) {
	var out *Thread
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		now := s.now()
		res := tx.Model(&threadRow{}).Where("thread_ref = ? AND revision = ?", ref, expected).
			Updates(map[string]any{"status": status, "revision": expected + 1, "updated_at": now})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrThreadRevision
		}
		if err := tx.Create(&activityRow{ThreadRef: ref, Kind: "thread_" + status, Data: "{}", At: now}).Error; err != nil {
			return err
		}
		var row threadRow
		if err := tx.Where("thread_ref = ?", ref).Take(&row).Error; err != nil {
			return err
		}
		out = row.toThread()
		return nil
	})
	return out, err
}

// CloseExecution closes one execution (Thread close).
func (s *Store) CloseExecution(ctx context.Context, id, reason string) error {
	return s.db.WithContext(ctx).Model(&executionRow{}).Where("id = ? AND closed_at IS NULL", id).
		Updates(map[string]any{"closed_at": s.now(), "close_reason": reason}).Error
}
