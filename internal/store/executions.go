package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Execution is a logical context on one Project, opened under a grant for
// one host session and Actor.
type Execution struct {
	ID                   string
	GrantID              string
	ClientID             string
	ProjectRef           string
	RootFingerprint      string
	GrantEpoch           int64
	GlobalEpoch          int64
	Scopes               []string
	SessionRef           string
	ActorRef             string
	InstructionsRevision string
	InstructionsPending  bool   // root instruction pages not all delivered yet
	TaskRef              string // the saved Task this execution works on, if any
	WorktreePath         string // managed worktree the tools work in ("" = the Project root)
	WorktreeBase         string // commit the worktree branched from
	CreatedAt            time.Time
	ClosedAt             *time.Time
	CloseReason          string
}

type executionRow struct {
	ID                   string `gorm:"primaryKey"`
	GrantID              string
	ClientID             string
	ProjectRef           string
	RootFingerprint      string
	GrantEpoch           int64
	GlobalEpoch          int64
	Scopes               string
	SessionRef           string
	ActorRef             string
	InstructionsRevision string
	InstructionsPending  bool
	TaskRef              string
	WorktreePath         string
	WorktreeBase         string
	CreatedAt            time.Time
	ClosedAt             *time.Time
	CloseReason          string
}

func (executionRow) TableName() string { return "executions" }

func (r executionRow) toExecution() *Execution {
	return &Execution{ID: r.ID, GrantID: r.GrantID, ClientID: r.ClientID, ProjectRef: r.ProjectRef,
		RootFingerprint: r.RootFingerprint, GrantEpoch: r.GrantEpoch, GlobalEpoch: r.GlobalEpoch,
		Scopes: strings.Fields(r.Scopes), SessionRef: r.SessionRef, ActorRef: r.ActorRef,
		InstructionsRevision: r.InstructionsRevision, InstructionsPending: r.InstructionsPending, TaskRef: r.TaskRef,
		WorktreePath: r.WorktreePath, WorktreeBase: r.WorktreeBase,
		CreatedAt: r.CreatedAt, ClosedAt: r.ClosedAt, CloseReason: r.CloseReason}
}

type bindingRow struct {
	GrantID     string `gorm:"primaryKey"`
	SessionRef  string `gorm:"primaryKey"`
	ActorRef    string `gorm:"primaryKey"`
	ExecutionID string
	UpdatedAt   time.Time
}

func (bindingRow) TableName() string { return "bindings" }

// CreateExecution stores e and binds (grant, session, actor) to it,
// replacing any earlier binding of that triple, in one transaction.
func (s *Store) CreateExecution(ctx context.Context, e *Execution) error {
	if e.CreatedAt.IsZero() {
		e.CreatedAt = s.now()
	}
	row := executionRow{ID: e.ID, GrantID: e.GrantID, ClientID: e.ClientID, ProjectRef: e.ProjectRef,
		RootFingerprint: e.RootFingerprint, GrantEpoch: e.GrantEpoch, GlobalEpoch: e.GlobalEpoch,
		Scopes: strings.Join(e.Scopes, " "), SessionRef: e.SessionRef, ActorRef: e.ActorRef,
		InstructionsRevision: e.InstructionsRevision, InstructionsPending: e.InstructionsPending, CreatedAt: e.CreatedAt,
		WorktreePath: e.WorktreePath, WorktreeBase: e.WorktreeBase}
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			return fmt.Errorf("create execution: %w", err)
		}
		return bind(tx, e.GrantID, e.SessionRef, e.ActorRef, e.ID, e.CreatedAt)
	})
}

func bind(tx *gorm.DB, grantID, sessionRef, actorRef, executionID string, at time.Time) error {
	b := bindingRow{GrantID: grantID, SessionRef: sessionRef, ActorRef: actorRef, ExecutionID: executionID, UpdatedAt: at}
	return tx.Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "grant_id"}, {Name: "session_ref"}, {Name: "actor_ref"}},
		DoUpdates: clause.AssignmentColumns([]string{"execution_id", "updated_at"}),
	}).Create(&b).Error
}

// Bind points (grant, session, actor) at an existing execution.
func (s *Store) Bind(ctx context.Context, grantID, sessionRef, actorRef, executionID string) error {
	return bind(s.db.WithContext(ctx), grantID, sessionRef, actorRef, executionID, s.now())
}

// BoundExecution returns the execution bound to (grant, session, actor), or
// ErrNotFound when there is no binding.
func (s *Store) BoundExecution(ctx context.Context, grantID, sessionRef, actorRef string) (*Execution, error) {
	var row executionRow
	err := s.db.WithContext(ctx).Table("executions").
		Joins("JOIN bindings ON bindings.execution_id = executions.id").
		Where("bindings.grant_id = ? AND bindings.session_ref = ? AND bindings.actor_ref = ?", grantID, sessionRef, actorRef).
		Select("executions.*").Take(&row).Error
	if err != nil {
		return nil, notFound(err)
	}
	return row.toExecution(), nil
}

// ExecutionByID returns an execution, or ErrNotFound.
func (s *Store) ExecutionByID(ctx context.Context, id string) (*Execution, error) {
	var row executionRow
	if err := s.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return nil, notFound(err)
	}
	return row.toExecution(), nil
}

// SetInstructionsDelivered records that every root instruction page of the
// execution was delivered for revision.
func (s *Store) SetInstructionsDelivered(ctx context.Context, executionID, revision string) error {
	return s.db.WithContext(ctx).Model(&executionRow{}).Where("id = ? AND instructions_revision = ?", executionID, revision).
		Update("instructions_pending", false).Error
}

// CloseExecutions closes the open executions of the given grants and
// returns their IDs.
func (s *Store) CloseExecutions(ctx context.Context, grantIDs []string, reason string) ([]string, error) {
	if len(grantIDs) == 0 {
		return nil, nil
	}
	var ids []string
	err := s.emergency(func() error {
		return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := tx.Model(&executionRow{}).Where("grant_id IN ? AND closed_at IS NULL", grantIDs).Pluck("id", &ids).Error; err != nil {
				return err
			}
			if len(ids) == 0 {
				return nil
			}
			return tx.Model(&executionRow{}).Where("id IN ?", ids).
				Updates(map[string]any{"closed_at": s.now(), "close_reason": reason}).Error
		})
	})
	return ids, err
}

// OpenExecutionsOf returns the IDs of the grants' open executions (a read:
// it works on a full disk).
func (s *Store) OpenExecutionsOf(ctx context.Context, grantIDs []string) ([]string, error) {
	var ids []string
	if len(grantIDs) == 0 {
		return nil, nil
	}
	err := s.db.WithContext(ctx).Model(&executionRow{}).Where("grant_id IN ? AND closed_at IS NULL", grantIDs).Pluck("id", &ids).Error
	return ids, err
}

// CloseExecutionsOfProjects closes open executions on Projects no longer in
// keep (configuration changed) and returns their IDs.
func (s *Store) CloseExecutionsOfProjects(ctx context.Context, keep []string, reason string) ([]string, error) {
	var ids []string
	q := s.db.WithContext(ctx).Model(&executionRow{}).Where("closed_at IS NULL")
	if len(keep) > 0 {
		q = q.Where("project_ref NOT IN ?", keep)
	}
	if err := q.Pluck("id", &ids).Error; err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return ids, s.db.WithContext(ctx).Model(&executionRow{}).Where("id IN ?", ids).
		Updates(map[string]any{"closed_at": s.now(), "close_reason": reason}).Error
}

// CountOpenExecutions returns the number of executions not closed.
func (s *Store) CountOpenExecutions(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.WithContext(ctx).Model(&executionRow{}).Where("closed_at IS NULL").Count(&n).Error
	return n, err
}

// MarkInstructionsDelivered records nested instruction files (path → hash)
// as delivered to the execution and returns those that were new.
func (s *Store) MarkInstructionsDelivered(ctx context.Context, executionID string, files map[string]string) (map[string]bool, error) {
	fresh := map[string]bool{}
	if len(files) == 0 {
		return fresh, nil
	}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for path, hash := range files {
			res := tx.Exec(`INSERT INTO delivered_instructions(execution_id, path, hash, delivered_at) VALUES (?, ?, ?, ?)
				ON CONFLICT DO NOTHING`, executionID, path, hash, s.now())
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected > 0 {
				fresh[path] = true
			}
		}
		return nil
	})
	return fresh, err
}
