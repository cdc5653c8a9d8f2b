package edits

import (
	"context"
	"fmt"

	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/idempotency"
	"github.com/devspace-dev/devspace/internal/patch"
	"github.com/devspace-dev/devspace/internal/store"
	"github.com/devspace-dev/devspace/internal/undo"
)

// UndoRequest is one undo_patch call. Its JSON form is what the operation
// record's request hash covers (as undo_patch's arguments did before this
// package existed).
type UndoRequest struct {
	// OperationID is the caller's idempotency key for this undo or redo.
	OperationID string `json:"operationId"`
	// PatchOperationID names the apply_patch to undo or redo; "" means
	// the most recent one not undone (with Redo: the most recently undone
	// one).
	PatchOperationID string `json:"patchOperationId,omitempty"`
	// Redo re-applies an undone patch instead.
	Redo bool `json:"redo,omitempty"`
}

// Undone is the outcome of Undo. Its JSON form (Replayed aside) is what is
// stored for replay.
type Undone struct {
	PatchOperationID string `json:"patchOperationId"`
	Redo             bool   `json:"redo,omitempty"`
	Files            []File `json:"files"`
	// Replayed says the operation ran before and this is its stored
	// outcome: nothing was written this time.
	Replayed bool `json:"-"`
}

// Undo reverts one patch of t's execution (or, with req.Redo, re-applies
// an undone one) from its snapshot, at most once per req.OperationID. It
// changes nothing when a file the patch touched changed since
// (*patch.RestoreConflict). The change is recorded in the journal and the
// Thread like a patch.
//
// Errors, wrapping idempotency.ErrNotStarted when nothing changed:
// ErrUndoDisabled, undo.ErrNotFound, ErrNotUndoable, ErrAlreadyUndone,
// ErrNotUndone, those of patch.Restore (*RestoreConflict,
// ErrUndoConflict, ErrRollbackIncomplete, …), rootlock.ErrBusy,
// executions.ErrProjectUnavailable, and those of idempotency.Service.Do.
func (s *Service) Undo(ctx context.Context, h executions.Handle, req UndoRequest) (*Undone, error) {
	if s.opts.Snapshots == nil {
		return nil, idempotency.NotStarted(ErrUndoDisabled)
	}
	if req.PatchOperationID != "" {
		if err := idempotency.ValidateID(req.PatchOperationID); err != nil {
			return nil, idempotency.NotStarted(fmt.Errorf("patchOperationId: %w", err))
		}
	}
	out, replayed, err := once(ctx, s, h, undoTool, req.OperationID, req, func(ctx context.Context, w *workspace) (*Undone, error) {
		var snap *undo.Snapshot
		var err error
		if req.PatchOperationID != "" {
			snap, err = s.opts.Snapshots.Get(w.exec.ID, req.PatchOperationID)
		} else {
			snap, err = s.opts.Snapshots.Next(w.exec.ID, req.Redo)
		}
		if err != nil {
			return nil, idempotency.NotStarted(err)
		}
		states, dirs, err := undo.Plan(snap, req.Redo)
		if err != nil {
			return nil, idempotency.NotStarted(err)
		}
		res, err := patch.Restore(ctx, w.Root, states, dirs, patch.Options{Intents: s.opts.Intents})
		if err != nil {
			return nil, writeFailed(err)
		}
		if err := s.opts.Snapshots.MarkUndone(w.exec.ID, snap.OpID, !req.Redo); err != nil {
			s.log.ErrorContext(ctx, "mark patch undone", "err", err)
		}
		out := &Undone{PatchOperationID: snap.OpID, Redo: req.Redo, Files: make([]File, 0, len(res.Files))}
		for _, f := range res.Files {
			out.Files = append(out.Files, File{Path: f.Path, Action: f.Action, Added: f.Added, Removed: f.Removed, ContentHash: f.After})
		}
		kind := store.JournalUndone
		if req.Redo {
			kind = store.JournalRedone
		}
		s.record(ctx, w.exec.ID, kind, res, out.Files)
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	out.Replayed = replayed
	return out, nil
}
