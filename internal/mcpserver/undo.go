package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/devspace-dev/devspace/internal/oauth"
	"github.com/devspace-dev/devspace/internal/operation"
	"github.com/devspace-dev/devspace/internal/patch"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/rootlock"
	"github.com/devspace-dev/devspace/internal/undo"
)

type undoPatchIn struct {
	OperationID      string `json:"operationId" jsonschema:"caller-chosen idempotency key (1-128 bytes) of this undo"`
	PatchOperationID string `json:"patchOperationId,omitempty" jsonschema:"the operationId of the apply_patch to undo (default: the most recent one not undone; with redo: the most recently undone one)"`
	Redo             bool   `json:"redo,omitempty" jsonschema:"re-apply an undone patch instead"`
}

func (in *undoPatchIn) validate() error {
	if err := operation.ValidateID(in.OperationID); err != nil {
		return invalidInput("operationId must be 1-128 bytes of UTF-8 without NUL")
	}
	if in.PatchOperationID != "" {
		if err := operation.ValidateID(in.PatchOperationID); err != nil {
			return invalidInput("patchOperationId must be 1-128 bytes of UTF-8 without NUL")
		}
	}
	return nil
}

type undoPatchOut struct {
	PatchOperationID string        `json:"patchOperationId"`
	Redo             bool          `json:"redo,omitempty"`
	Files            []patchedFile `json:"files"`
	Replayed         bool          `json:"replayed,omitempty"`
}

func (o undoPatchOut) summary() string {
	verb := "Undid"
	if o.Redo {
		verb = "Redid"
	}
	return fmt.Sprintf("%s the patch %q (%d file(s)).", verb, o.PatchOperationID, len(o.Files))
}

func registerUndoTools(s *Server) {
	if s.opts.Undo == nil {
		return
	}
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
	fail := func(err error) (undoPatchOut, error) {
		te := s.undoError(err)
		te.OperationID = in.OperationID
		if te.Phase == "" {
			te.Phase = "not_started"
		}
		return undoPatchOut{}, te
	}
	w, err := s.openWorkspace(ctx, c, rootlock.Patch)
	if err != nil {
		return fail(err)
	}
	defer w.close()
	hash, err := operation.HashRequest(in)
	if err != nil {
		return undoPatchOut{}, err
	}
	key := operation.Key{GrantID: c.caller.GrantID, ExecutionID: w.exec.ID, Tool: "undo_patch", OperationID: in.OperationID}
	raw, replayed, err := s.opts.Operations.Do(ctx, key, hash, func(ctx context.Context) ([]byte, error) {
		var snap *undo.Snapshot
		var err error
		if in.PatchOperationID != "" {
			snap, err = s.opts.Undo.Get(w.exec.ID, in.PatchOperationID)
		} else {
			snap, err = s.opts.Undo.Next(w.exec.ID, in.Redo)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", operation.ErrNotStarted, err)
		}
		states, dirs, err := undo.Plan(snap, in.Redo)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", operation.ErrNotStarted, err)
		}
		res, err := patch.Restore(ctx, w.root, states, dirs, patch.Options{Intents: s.opts.PatchIntents})
		if err != nil {
			if errors.Is(err, patch.ErrRollbackIncomplete) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %w", operation.ErrNotStarted, err)
		}
		if err := s.opts.Undo.MarkUndone(w.exec.ID, snap.OpID, !in.Redo); err != nil {
			s.log.ErrorContext(ctx, "mark patch undone", "err", err)
		}
		out := undoPatchOut{PatchOperationID: snap.OpID, Redo: in.Redo, Files: []patchedFile{}}
		for _, f := range res.Files {
			out.Files = append(out.Files, patchedFile{Path: f.Path, Action: f.Action, Added: f.Added, Removed: f.Removed, ContentHash: f.After})
		}
		kind := "patch_undone"
		if in.Redo {
			kind = "patch_redone"
		}
		s.journalAndCheckpoint(ctx, w, kind, patch.Entry{OpID: in.OperationID, Result: res}, out.Files)
		return json.Marshal(out)
	})
	if err != nil {
		return fail(err)
	}
	var out undoPatchOut
	if err := json.Unmarshal(raw, &out); err != nil {
		return undoPatchOut{}, err
	}
	out.Replayed = replayed
	return out, nil
}

// snapshotResolver resolves a Project-relative path to its real path
// inside root (project.RealPath: os.Root's rules, the last element
// followed too), so snapshots can refuse files that are sensitive behind
// a symlink. Used for classification only.
func snapshotResolver(root *os.Root) undo.Resolver {
	return func(p string) (string, error) {
		real, _, err := project.RealPath(root, p)
		return real, err
	}
}

func (s *Server) undoError(err error) *ToolError {
	var rc *patch.RestoreConflict
	switch {
	case errors.As(err, &rc):
		e := toolErr("undo_conflict", catConflict, "Files changed since that patch; nothing was undone. Edit them with apply_patch instead.", "show_changes")
		e.Details = map[string]any{"paths": rc.Paths()}
		return e
	case errors.Is(err, patch.ErrUndoConflict):
		return toolErr("undo_conflict", catConflict, "Files changed since that patch; nothing was undone.", "show_changes")
	case errors.Is(err, undo.ErrNotFound):
		return toolErr("undo_not_found", catState, "There is no patch of this conversation to undo (or redo).", "show_changes")
	case errors.Is(err, undo.ErrNotUndoable):
		return toolErr("undo_unavailable", catState, "That patch cannot be undone ("+err.Error()+"); change the files with apply_patch instead.")
	case errors.Is(err, undo.ErrAlreadyUndone), errors.Is(err, undo.ErrNotUndone):
		return toolErr("undo_state_conflict", catConflict, "That patch is already in the requested state ("+err.Error()+").")
	}
	return s.patchError(err)
}
