package mcpserver

import (
	"context"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/devspace-dev/devspace/internal/oauth"
	"github.com/devspace-dev/devspace/internal/tasks"
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
	x, err := s.execution(ctx, c)
	if err != nil {
		return saveProgressOut{}, err
	}
	defer x.Release()
	saved, replayed, err := s.opts.Tasks.Save(ctx, x, tasks.SaveRequest{OperationID: in.OperationID,
		Title: in.Title, Progress: in.Progress, IfMatch: in.IfMatch, Status: in.Status})
	if err != nil {
		return saveProgressOut{}, operationError(in.OperationID, err)
	}
	return saveProgressOut{Saved: *saved, Replayed: replayed}, nil
}
