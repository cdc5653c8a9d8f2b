// Package tasks implements saved Tasks: bounded progress snapshots of a
// Project that a later conversation can resume. A Task is never a
// transcript, log, diff or credential; responses never echo its body.
package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/fault"
	"github.com/devspace-dev/devspace/internal/idempotency"
	"github.com/devspace-dev/devspace/internal/ids"
	"github.com/devspace-dev/devspace/internal/secret"
	"github.com/devspace-dev/devspace/internal/store"
)

// Limits (docs/design.md §7).
const (
	MaxTitleBytes    = 256
	MaxProgressBytes = 8 << 10
	MaxJSONBytes     = 12000
	MaxResumable     = 20
	RetainCompleted  = 80
	ListLimit        = 20
)

// Errors owned by this package, each with its code.
var (
	ErrIfMatchUnexpected = fault.New("if_match_unexpected", "first save must omit ifMatch")
	ErrIfMatchRequired   = fault.New("if_match_required", "ifMatch revision required")
	ErrRevisionConflict  = fault.New("project_task_revision_conflict", "task revision conflict")
	ErrTooLarge          = fault.New("task_context_too_large", "task context too large")
	ErrCapacity          = fault.New("project_task_capacity", "too many resumable tasks")
	ErrNotActive         = fault.New("project_task_not_active", "task not active here")
	ErrInvalid           = fault.New("invalid_tool_input", "invalid task field")
)

// RevisionError carries the current revision for if_match_required and
// revision conflicts.
type RevisionError struct {
	Err     error
	Current int64
}

func (e *RevisionError) Error() string {
	return fmt.Sprintf("%v (current revision %d)", e.Err, e.Current)
}

// Unwrap returns ErrIfMatchRequired or ErrRevisionConflict, which say
// the code.
func (e *RevisionError) Unwrap() error { return e.Err }

// Details give the current revision: details.currentRevision.
func (e *RevisionError) Details() map[string]any { return map[string]any{"currentRevision": e.Current} }

// SaveRequest is one save_progress call.
type SaveRequest struct {
	OperationID string
	Title       string
	Progress    string
	IfMatch     *int64
	Status      string // resumable or completed
}

// Saved is what save_progress returns: never the body.
type Saved struct {
	TaskRef  string `json:"taskRef"`
	Revision int64  `json:"revision"`
	Status   string `json:"status"`
	SavedAt  string `json:"savedAt"`
}

// Service is safe for concurrent use.
type Service struct {
	st          *store.Store
	ops         *idempotency.Service
	checkpoints Checkpointer
	counts      *store.Memo[string, map[string]int] // Counts by its refs
}

// Checkpointer records a sanitized entry on an execution's Thread
// (executions.Activity).
type Checkpointer interface {
	Checkpoint(ctx context.Context, executionID, kind string, data map[string]any)
}

// New builds a Service; a save is checkpointed on the execution's Thread.
func New(st *store.Store, ops *idempotency.Service, checkpoints Checkpointer) *Service {
	return &Service{st: st, ops: ops, checkpoints: checkpoints, counts: store.NewMemo[string, map[string]int](256)}
}

var limits = store.TaskLimits{MaxResumable: MaxResumable, RetainCompleted: RetainCompleted}

// Validate checks the bounds of a save request (exact bytes; nothing
// trimmed).
func Validate(r SaveRequest) error {
	switch {
	case r.Status != store.TaskResumable && r.Status != store.TaskCompleted:
		return fmt.Errorf("%w: status must be resumable or completed", ErrInvalid)
	case r.Title == "":
		return fmt.Errorf("%w: title is required", ErrInvalid)
	case strings.ContainsRune(r.Title, 0) || strings.ContainsRune(r.Progress, 0):
		return fmt.Errorf("%w: title and progress must not contain NUL", ErrInvalid)
	case !utf8.ValidString(r.Title) || !utf8.ValidString(r.Progress):
		return fmt.Errorf("%w: title and progress must be valid UTF-8", ErrInvalid)
	case len(r.Title) > MaxTitleBytes:
		return fmt.Errorf("%w: title is %d bytes; the limit is %d", ErrTooLarge, len(r.Title), MaxTitleBytes)
	case len(r.Progress) > MaxProgressBytes:
		return fmt.Errorf("%w: progress is %d bytes; the limit is %d", ErrTooLarge, len(r.Progress), MaxProgressBytes)
	}
	b, _ := json.Marshal(map[string]string{"title": r.Title, "progress": r.Progress})
	if len(b) > MaxJSONBytes {
		return fmt.Errorf("%w: title and progress encode to %d bytes of JSON; the limit is %d", ErrTooLarge, len(b), MaxJSONBytes)
	}
	return nil
}

// Save creates or updates the execution's Task. Replays of the same
// operationId with the same request return the stored result. A title or
// progress holding a literal credential is refused with a *secret.Error
// before anything is stored, the operation record included.
func (s *Service) Save(ctx context.Context, h executions.Handle, r SaveRequest) (*Saved, bool, error) {
	e := h.Execution()
	if err := Validate(r); err != nil {
		return nil, false, idempotency.NotStarted(err)
	}
	if err := errors.Join(secret.Check("title", r.Title), secret.Check("progress", r.Progress)); err != nil {
		return nil, false, idempotency.NotStarted(err)
	}
	hash, err := idempotency.HashRequest(map[string]any{"title": r.Title, "progress": r.Progress, "ifMatch": r.IfMatch, "status": r.Status})
	if err != nil {
		return nil, false, idempotency.NotStarted(err)
	}
	key := idempotency.Key{GrantID: h.Caller().GrantID, ExecutionID: e.ID, Tool: "save_progress", OperationID: r.OperationID}
	raw, replayed, err := s.ops.Do(ctx, key, hash, func(ctx context.Context) ([]byte, error) {
		if err := h.Err(); err != nil {
			return nil, idempotency.NotStarted(err)
		}
		saved, err := s.save(ctx, e, r)
		if err != nil {
			return nil, idempotency.NotStarted(err)
		}
		return json.Marshal(saved)
	})
	if err != nil {
		return nil, false, err
	}
	var out Saved
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, false, err
	}
	if !replayed {
		s.checkpoints.Checkpoint(ctx, e.ID, "progress_saved", map[string]any{"revision": out.Revision, "status": out.Status})
	}
	return &out, replayed, nil
}

func (s *Service) save(ctx context.Context, e *store.Execution, r SaveRequest) (*Saved, error) {
	// The execution row read at resolve time may predate a first save in
	// this execution; read the link again.
	cur, err := s.st.ExecutionByID(ctx, e.ID)
	if err != nil {
		return nil, err
	}
	if cur.TaskRef == "" {
		if r.IfMatch != nil {
			return nil, ErrIfMatchUnexpected
		}
		t := &store.Task{Ref: ids.New("tsk_", 12), ProjectRef: e.ProjectRef, Title: r.Title, Progress: r.Progress, Status: r.Status}
		if err := s.st.CreateTask(ctx, t, e.ID, limits); err != nil {
			if errors.Is(err, store.ErrTaskCapacity) {
				return nil, ErrCapacity
			}
			return nil, err
		}
		return savedOf(t), nil
	}
	t, err := s.st.Task(ctx, cur.TaskRef)
	if err != nil {
		return nil, err
	}
	if r.IfMatch == nil {
		return nil, &RevisionError{Err: ErrIfMatchRequired, Current: t.Revision}
	}
	updated, err := s.st.UpdateTask(ctx, t.Ref, e.ID, *r.IfMatch, r.Title, r.Progress, r.Status, limits)
	switch {
	case errors.Is(err, store.ErrTaskRevision):
		return nil, &RevisionError{Err: ErrRevisionConflict, Current: t.Revision}
	case errors.Is(err, store.ErrTaskNotActive):
		return nil, ErrNotActive
	case err != nil:
		return nil, err
	}
	return savedOf(updated), nil
}

func savedOf(t *store.Task) *Saved {
	return &Saved{TaskRef: t.Ref, Revision: t.Revision, Status: t.Status, SavedAt: t.UpdatedAt.UTC().Format(time.RFC3339)}
}

// Summary is a listed Task (title only; never the progress body).
type Summary struct {
	TaskRef   string `json:"taskRef"`
	Title     string `json:"title"`
	UpdatedAt string `json:"updatedAt"`
	Revision  int64  `json:"revision"`
}

// List returns a Project's resumable Tasks (≤ ListLimit, newest first).
func (s *Service) List(ctx context.Context, projectRef string) ([]Summary, error) {
	ts, err := s.st.ResumableTasks(ctx, projectRef, ListLimit)
	if err != nil {
		return nil, err
	}
	out := make([]Summary, 0, len(ts))
	for _, t := range ts {
		out = append(out, Summary{TaskRef: t.Ref, Title: t.Title, UpdatedAt: t.UpdatedAt.UTC().Format(time.RFC3339), Revision: t.Revision})
	}
	return out, nil
}

// Counts returns resumable Task counts per projectRef (list_projects asks
// on every call; the answer is remembered until the next write). The map
// is shared: callers must not modify it.
func (s *Service) Counts(ctx context.Context, refs []string) (map[string]int, error) {
	return s.counts.Get(s.st, strings.Join(refs, "\x00"), func() (map[string]int, error) {
		return s.st.CountResumableTasks(ctx, refs)
	})
}
