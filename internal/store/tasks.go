package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Task states. A pruned Task keeps only its metadata (terminal marker).
const (
	TaskResumable = "resumable"
	TaskCompleted = "completed"
	TaskPruned    = "pruned"
)

// Task errors owned by the store.
var (
	// ErrTaskCapacity: the Project already has the maximum of resumable Tasks.
	ErrTaskCapacity = errors.New("too many resumable tasks")
	// ErrTaskRevision: the Task changed since the revision the caller read.
	ErrTaskRevision = errors.New("task revision conflict")
	// ErrTaskNotActive: the Task is bound to another execution, or is no
	// longer resumable.
	ErrTaskNotActive = errors.New("task not active in this execution")
)

// Task is a saved progress snapshot of one Project.
type Task struct {
	Ref               string
	ProjectRef        string
	Title             string
	Progress          string
	Status            string
	Revision          int64
	ActiveExecutionID string
	CreatedAt         time.Time
	UpdatedAt         time.Time
	CompletedAt       *time.Time
}

type taskRow struct {
	TaskRef           string `gorm:"primaryKey"`
	ProjectRef        string
	Title             string
	Progress          string
	Status            string
	Revision          int64
	ActiveExecutionID string
	CreatedAt         time.Time
	UpdatedAt         time.Time
	CompletedAt       *time.Time
}

func (taskRow) TableName() string { return "tasks" }

func (r taskRow) toTask() *Task {
	return &Task{Ref: r.TaskRef, ProjectRef: r.ProjectRef, Title: r.Title, Progress: r.Progress, Status: r.Status,
		Revision: r.Revision, ActiveExecutionID: r.ActiveExecutionID, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		CompletedAt: r.CompletedAt}
}

// TaskLimits bound saved Tasks per Project.
type TaskLimits struct {
	MaxResumable    int // 20
	RetainCompleted int // 80
}

// CreateTask inserts t (revision 1) and links it as the execution's Task,
// refusing with ErrTaskCapacity when the Project already has
// MaxResumable resumable Tasks.
func (s *Store) CreateTask(ctx context.Context, t *Task, executionID string, lim TaskLimits) error {
	now := s.now()
	t.CreatedAt, t.UpdatedAt, t.Revision, t.ActiveExecutionID = now, now, 1, executionID
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if t.Status == TaskResumable {
			var n int64
			if err := tx.Model(&taskRow{}).Where("project_ref = ? AND status = ?", t.ProjectRef, TaskResumable).Count(&n).Error; err != nil {
				return err
			}
			if int(n) >= lim.MaxResumable {
				return ErrTaskCapacity
			}
		}
		if t.Status == TaskCompleted {
			t.CompletedAt = &now
		}
		row := taskRow{TaskRef: t.Ref, ProjectRef: t.ProjectRef, Title: t.Title, Progress: t.Progress, Status: t.Status,
			Revision: 1, ActiveExecutionID: executionID, CreatedAt: now, UpdatedAt: now, CompletedAt: t.CompletedAt}
		if err := tx.Create(&row).Error; err != nil {
			return fmt.Errorf("create task: %w", err)
		}
		if err := tx.Model(&executionRow{}).Where("id = ?", executionID).Update("task_ref", t.Ref).Error; err != nil {
			return err
		}
		return pruneCompleted(tx, t.ProjectRef, lim.RetainCompleted)
	})
}

// UpdateTask saves new content for the Task linked to executionID if its
// revision is still expectedRevision, returning the updated Task.
func (s *Store) UpdateTask(ctx context.Context, ref, executionID string, expectedRevision int64, title, progress, status string, lim TaskLimits) (*Task, error) {
	var out *Task
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var row taskRow
		if err := tx.Where("task_ref = ?", ref).Take(&row).Error; err != nil {
			return notFound(err)
		}
		if row.Status != TaskResumable || row.ActiveExecutionID != executionID {
			return ErrTaskNotActive
		}
		if row.Revision != expectedRevision {
			return ErrTaskRevision
		}
		now := s.now()
		upd := map[string]any{"title": title, "progress": progress, "status": status, "revision": row.Revision + 1, "updated_at": now}
		if status == TaskCompleted {
			upd["completed_at"] = now
		}
		if err := tx.Model(&taskRow{}).Where("task_ref = ? AND revision = ?", ref, row.Revision).Updates(upd).Error; err != nil {
			return err
		}
		if err := tx.Where("task_ref = ?", ref).Take(&row).Error; err != nil {
			return err
		}
		out = row.toTask()
		return pruneCompleted(tx, row.ProjectRef, lim.RetainCompleted)
	})
	return out, err
}

// pruneCompleted turns all but the newest keep completed Tasks of a
// Project into terminal markers: content cleared, metadata kept.
func pruneCompleted(tx *gorm.DB, projectRef string, keep int) error {
	var refs []string
	if err := tx.Model(&taskRow{}).Where("project_ref = ? AND status = ?", projectRef, TaskCompleted).
		Order("completed_at DESC, task_ref").Offset(keep).Pluck("task_ref", &refs).Error; err != nil {
		return err
	}
	if len(refs) == 0 {
		return nil
	}
	return tx.Model(&taskRow{}).Where("task_ref IN ?", refs).
		Updates(map[string]any{"status": TaskPruned, "title": "", "progress": "", "active_execution_id": ""}).Error
}

// Task returns a Task by ref, or ErrNotFound.
func (s *Store) Task(ctx context.Context, ref string) (*Task, error) {
	var row taskRow
	if err := s.db.WithContext(ctx).Where("task_ref = ?", ref).Take(&row).Error; err != nil {
		return nil, notFound(err)
	}
	return row.toTask(), nil
}

// ResumableTasks lists a Project's resumable Tasks, newest first, at most
// limit.
func (s *Store) ResumableTasks(ctx context.Context, projectRef string, limit int) ([]*Task, error) {
	var rows []taskRow
	if err := s.db.WithContext(ctx).Where("project_ref = ? AND status = ?", projectRef, TaskResumable).
		Order("updated_at DESC, task_ref").Limit(limit).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]*Task, len(rows))
	for i, r := range rows {
		out[i] = r.toTask()
	}
	return out, nil
}

// CountResumableTasks counts resumable Tasks per projectRef.
func (s *Store) CountResumableTasks(ctx context.Context, projectRefs []string) (map[string]int, error) {
	type cnt struct {
		ProjectRef string
		N          int
	}
	var rows []cnt
	out := map[string]int{}
	if len(projectRefs) == 0 {
		return out, nil
	}
	if err := s.db.WithContext(ctx).Model(&taskRow{}).Select("project_ref, COUNT(*) AS n").
		Where("project_ref IN ? AND status = ?", projectRefs, TaskResumable).Group("project_ref").Scan(&rows).Error; err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.ProjectRef] = r.N
	}
	return out, nil
}

// ActivateTask points a resumable Task at a new execution (resume) and
// links the execution to it.
func (s *Store) ActivateTask(ctx context.Context, ref, executionID string) (*Task, error) {
	var out *Task
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Model(&taskRow{}).Where("task_ref = ? AND status = ?", ref, TaskResumable).
			Updates(map[string]any{"active_execution_id": executionID})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrTaskNotActive
		}
		if err := tx.Model(&executionRow{}).Where("id = ?", executionID).Update("task_ref", ref).Error; err != nil {
			return err
		}
		var row taskRow
		if err := tx.Where("task_ref = ?", ref).Take(&row).Error; err != nil {
			return err
		}
		out = row.toTask()
		return nil
	})
	return out, err
}
