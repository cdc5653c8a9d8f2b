package mcpserver

import (
	"context"
	"fmt"

	"github.com/devspace-dev/devspace/internal/edits"
	"github.com/devspace-dev/devspace/internal/oauth"
)

type undoPatchIn struct {
	OperationID      string `json:"operationId" jsonschema:"caller-chosen idempotency key (1-128 bytes) of this undo"`
	PatchOperationID string `json:"patchOperationId,omitempty" jsonschema:"the operationId of the apply_patch to undo (default: the most recent one not undone; with redo: the most recently undone one)"`
	Redo             bool   `json:"redo,omitempty" jsonschema:"re-apply an undone patch instead"`
}

type undoPatchOut struct {
	PatchOperationID string       `json:"patchOperationId"`
	Redo             bool         `json:"redo,omitempty"`
	Files            []edits.File `json:"files"`
	Replayed         bool         `json:"replayed,omitempty"`
}

func (o undoPatchOut) summary() string {
	verb := "Undid"
	if o.Redo {
		verb = "Redid"
	}
	return fmt.Sprintf("%s the patch %q (%d file(s)).", verb, o.PatchOperationID, len(o.Files))
}

func registerUndoTools(s *Server) {
	addTool(s, spec{
		name:  "undo_patch",
		title: "Undo or redo a patch",
		description: "Use when a patch applied in this conversation should be reverted (or an undone one re-applied with redo). " +
			"Avoid it when files were edited since the patch: undo then refuses with undo_conflict and changes nothing. " +
			"Returns the files restored; the undo appears in show_changes apply_patch_history.",
		scopes: []string{oauth.ScopeRead, oauth.ScopeWrite},
		hints:  hints{destructive: true},
	}, s.undoPatch)
}

func (s *Server) undoPatch(ctx context.Context, c *call, in *undoPatchIn) (undoPatchOut, error) {
	x, err := s.execution(ctx, c)
	if err != nil {
		return undoPatchOut{}, operationError(in.OperationID, err)
	}
	defer x.Release()
	u, err := s.opts.Edits.Undo(ctx, x, edits.UndoRequest{OperationID: in.OperationID, PatchOperationID: in.PatchOperationID, Redo: in.Redo})
	if err != nil {
		return undoPatchOut{}, operationError(in.OperationID, err)
	}
	return undoPatchOut{PatchOperationID: u.PatchOperationID, Redo: u.Redo, Files: u.Files, Replayed: u.Replayed}, nil
}
