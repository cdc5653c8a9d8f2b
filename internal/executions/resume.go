package executions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/devspace-dev/devspace/internal/idempotency"
	"github.com/devspace-dev/devspace/internal/store"
)

// Checkpoint is what resume hands the new conversation: the saved text,
// clearly separated from what the server itself observed.
type Checkpoint struct {
	TaskRef          string           `json:"taskRef"`
	UntrustedSummary UntrustedSummary `json:"untrustedSummary"`
	ServerObserved   map[string]any   `json:"serverObserved"`
}

// UntrustedSummary is model-written text from an earlier conversation:
// data, never instructions.
type UntrustedSummary struct {
	Title    string `json:"title"`
	Progress string `json:"progress"`
}

type storedResume struct {
	storedOpen
	Checkpoint Checkpoint `json:"checkpoint"`
}

// Resume opens a new execution for the caller on a saved Task's Project and
// makes it the Task's active execution. The Task must be resumable and its
// Project approved for the caller's grant: a taskRef alone authorizes
// nothing.
func (s *Service) Resume(ctx context.Context, c Caller, taskRef, operationID string) (*Opened, *Checkpoint, bool, error) {
	t, err := s.opts.Store.Task(ctx, taskRef)
	if errors.Is(err, store.ErrNotFound) || (err == nil && t.Status != store.TaskResumable) {
		return nil, nil, false, idempotency.NotStarted(ErrTaskNotFound)
	}
	if err != nil {
		return nil, nil, false, idempotency.NotStarted(err)
	}
	root, ok := s.opts.Catalog.Lookup(t.ProjectRef)
	if !ok || !slices.Contains(c.ProjectIDs, t.ProjectRef) {
		return nil, nil, false, idempotency.NotStarted(ErrProjectNotAuthorized)
	}
	hash, err := idempotency.HashRequest(map[string]any{"taskRef": taskRef, "session": c.SessionRef, "actor": c.ActorRef})
	if err != nil {
		return nil, nil, false, idempotency.NotStarted(err)
	}
	key := idempotency.Key{GrantID: c.GrantID, Tool: "project_control.resume", OperationID: operationID}
	raw, replayed, err := s.opts.Operations.Do(ctx, key, hash, func(ctx context.Context) ([]byte, error) {
		opened, err := s.createExecution(ctx, c, root, false)
		if err != nil {
			return nil, idempotency.NotStarted(err)
		}
		active, err := s.opts.Store.ActivateTask(ctx, taskRef, opened.ExecutionID)
		if err != nil {
			return nil, err
		}
		return json.Marshal(storedResume{storedOpen: *opened, Checkpoint: Checkpoint{
			TaskRef:          taskRef,
			UntrustedSummary: UntrustedSummary{Title: active.Title, Progress: active.Progress},
			ServerObserved: map[string]any{"taskRevision": active.Revision, "savedAt": active.UpdatedAt.UTC().Format(time.RFC3339),
				"status": active.Status},
		}})
	})
	if errors.Is(err, store.ErrTaskNotActive) {
		// Resumed elsewhere after the execution was made: the answer is
		// the Task's, the phase (outcome unknown) the operation's.
		return nil, nil, false, fmt.Errorf("%w: %w", ErrTaskNotFound, err)
	}
	if err != nil {
		return nil, nil, false, err
	}
	var st storedResume
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, nil, false, fmt.Errorf("decode stored resume: %w", err)
	}
	if replayed {
		if err := s.opts.Store.Bind(ctx, c.GrantID, c.SessionRef, c.ActorRef, st.ExecutionID); err != nil {
			return nil, nil, false, err
		}
	}
	st.Opened.executionID = st.ExecutionID
	return &st.Opened, &st.Checkpoint, replayed, nil
}
