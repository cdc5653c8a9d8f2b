package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/devspace-dev/devspace/internal/oauth"
	"github.com/devspace-dev/devspace/internal/tasks"
	"github.com/google/jsonschema-go/jsonschema"
)

type saveProgressIn struct {
	OperationID string `json:"operationId" jsonschema:"caller-chosen idempotency key (1-128 bytes); retrying with the same value replays the first result"`
	Title       string `json:"title" jsonschema:"short title of the work (at most 256 bytes)"`
	Progress    string `json:"progress" jsonschema:"what is done, what is next, open questions (at most 8 KiB); never paste logs, diffs or secrets"`
	IfMatch     *int64 `json:"ifMatch,omitempty" jsonschema:"the revision returned by the previous save in this conversation; omit on the first save"`
	Status      string `json:"status" jsonschema:"resumable (keep for later) or completed (the work is done)"`
}

func (saveProgressIn) schema(s *jsonschema.Schema) {
	s.Properties["status"].Enum = []any{"resumable", "completed"}
}

type saveProgressOut struct {
	tasks.Saved
	Replayed bool `json:"replayed,omitempty"`
}

func (o saveProgressOut) summary() string {
	if o.Status == "completed" {
		return "Saved the Task as completed."
	}
	return fmt.Sprintf("Saved progress (revision %d); a later conversation can resume it.", o.Revision)
}

func registerProgressTools(s *Server) {
	addTool(s, spec{
		name:  "save_progress",
		title: "Save progress",
		description: "Use when you reach a milestone or before the conversation ends, to leave a short progress note that a later conversation can resume (status resumable), or to mark the work done (status completed). " +
			"Avoid saving logs, diffs, command output or secrets; keep it a brief summary. " +
			"Returns the Task's taskRef and revision (pass it as ifMatch next time), never the saved text.",
		scopes: []string{oauth.ScopeRead},
		hints:  hints{idempotent: true},
	}, s.saveProgress)
}

func (s *Server) saveProgress(ctx context.Context, c *call, in *saveProgressIn) (saveProgressOut, error) {
	if err := c.requireSession(); err != nil {
		return saveProgressOut{}, err
	}
	e, _, err := s.opts.Bindings.Resolve(ctx, c.caller)
	if err != nil {
		return saveProgressOut{}, err
	}
	saved, replayed, err := s.opts.Tasks.Save(ctx, c.caller.GrantID, e, tasks.SaveRequest{OperationID: in.OperationID,
		Title: in.Title, Progress: in.Progress, IfMatch: in.IfMatch, Status: in.Status})
	if err != nil {
		te := taskError(err)
		te.OperationID = in.OperationID
		return saveProgressOut{}, te
	}
	if !replayed {
		s.opts.Bindings.Checkpoint(ctx, e.ID, "progress_saved", map[string]any{"revision": saved.Revision, "status": saved.Status})
	}
	return saveProgressOut{Saved: *saved, Replayed: replayed}, nil
}

// taskError maps tasks errors (the rest go through mapError).
func taskError(err error) *ToolError {
	var re *tasks.RevisionError
	var se *tasks.SecretError
	var te *ToolError
	switch {
	case errors.As(err, &te):
		return te
	case errors.As(err, &se):
		e := toolErr("secret_persistence_blocked", catSafety, "The text contains something that looks like a credential ("+se.Kind+"); remove it and save again.")
		e.Phase = "not_started"
		return e
	case errors.Is(err, tasks.ErrInvalid):
		return invalidInput("%v", err)
	case errors.Is(err, tasks.ErrTooLarge):
		return toolErr("task_context_too_large", catLimit, "The saved Task is too large ("+err.Error()+"); shorten it.")
	case errors.Is(err, tasks.ErrCapacity):
		return toolErr("project_task_capacity", catLimit, "This Project already has 20 resumable Tasks; complete or finish one before saving another.")
	case errors.Is(err, tasks.ErrIfMatchUnexpected):
		return toolErr("if_match_unexpected", catInput, "This is the first save in this conversation: omit ifMatch.")
	case errors.As(err, &re) && errors.Is(err, tasks.ErrIfMatchRequired):
		e := toolErr("if_match_required", catInput, fmt.Sprintf("Pass ifMatch: %d (the Task's current revision) to update it.", re.Current))
		e.Details = map[string]any{"currentRevision": re.Current}
		return e
	case errors.As(err, &re):
		e := toolErr("project_task_revision_conflict", catConflict,
			fmt.Sprintf("The Task changed (now revision %d); re-read it and retry with the same operationId and the new ifMatch.", re.Current))
		e.Details = map[string]any{"currentRevision": re.Current}
		return e
	case errors.Is(err, tasks.ErrNotActive):
		return toolErr("project_task_not_active", catState, "This Task is no longer active in this conversation (it was resumed elsewhere or completed).")
	}
	return mapError(err)
}
