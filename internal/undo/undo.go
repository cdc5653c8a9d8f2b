// Package undo keeps exact before/after snapshots of the files each
// successful apply_patch touched, and decides what undoing or redoing one
// means. It knows nothing about MCP: undo_patch takes a snapshot from the
// Store, turns it into patch.FileState values with Plan, applies them
// with patch.Restore (which refuses with patch.ErrUndoConflict when a
// file drifted) and then marks the snapshot with Store.MarkUndone.
//
// Sensitive files (project.IsSensitive on the path and on its real path)
// are never written to the store: a patch that touched one is recorded as
// a stub that cannot be undone, so "the latest patch" never silently
// skips it.
package undo

import (
	"fmt"
	"io/fs"
	"time"

	"github.com/devspace-dev/devspace/internal/fault"
	"github.com/devspace-dev/devspace/internal/patch"
)

// Sentinel errors. This package owns them, each with its code; callers
// test with errors.Is.
var (
	// ErrNotFound: the execution has no snapshot with that operation ID
	// (it was never recorded, belongs to another execution, or was
	// dropped by the bounds).
	ErrNotFound = fault.New("undo_not_found", "patch snapshot not found")
	// ErrNotUndoable: the snapshot is a stub (Snapshot.NotUndoable says
	// why): a sensitive file was involved, it exceeded the store's
	// bounds, or its contents were lost.
	ErrNotUndoable = fault.New("undo_unavailable", "patch cannot be undone")
	// ErrAlreadyUndone: undo of a snapshot that is already undone.
	ErrAlreadyUndone = fault.New("undo_state_conflict", "patch already undone")
	// ErrNotUndone: redo of a snapshot that is not undone.
	ErrNotUndone = fault.New("undo_state_conflict", "patch is not undone")
)

// Reasons in Snapshot.NotUndoable.
const (
	// ReasonSensitive: the patch touched a sensitive file.
	ReasonSensitive = "sensitive"
	// ReasonTooLarge: the contents exceed the store's per-execution or
	// total bound on their own.
	ReasonTooLarge = "too_large"
	// ReasonIncomplete: a content was missing from the patch result or
	// is missing or corrupt in the store.
	ReasonIncomplete = "incomplete"
)

// State is a file's exact state: its content hash ("sha256:…", as
// patch.HashContent), permission bits and content. A nil *State means
// the file does not exist.
type State struct {
	Hash    string
	Mode    fs.FileMode
	Content []byte
}

// FileSnap is one path a patch touched, with its state before and after
// the patch. A move is recorded as two FileSnaps: the destination (with
// MovedFrom set; Before is the file it replaced, usually nil) and the
// source (After nil).
type FileSnap struct {
	Path          string
	Before, After *State
	MovedFrom     string
}

// Snapshot is what one apply_patch changed. Seq orders an execution's
// snapshots (1 for its first). CreatedDirs are the directories the patch
// created, parents first; undo removes those it leaves empty.
type Snapshot struct {
	OpID        string
	Seq         int64
	Files       []FileSnap
	CreatedDirs []string
	Undone      bool
	CreatedAt   time.Time
	// NotUndoable is "" when the snapshot can be undone, otherwise one
	// of the Reason constants; such a snapshot has no Files.
	NotUndoable string
}

// Plan returns what patch.Restore must do to undo snap (every file must
// still hold its After state; it gets its Before state back) or, with
// redo, to redo it (Before must hold; After comes back), and the
// directories to remove when they end up empty (undo only).
//
// Errors: ErrNotUndoable (wrapped with the reason), ErrAlreadyUndone,
// ErrNotUndone, ErrNotFound for a nil snapshot.
func Plan(snap *Snapshot, redo bool) ([]patch.FileState, []string, error) {
	switch {
	case snap == nil:
		return nil, nil, ErrNotFound
	case snap.NotUndoable != "":
		return nil, nil, fmt.Errorf("%w: %s", ErrNotUndoable, snap.NotUndoable)
	case !redo && snap.Undone:
		return nil, nil, ErrAlreadyUndone
	case redo && !snap.Undone:
		return nil, nil, ErrNotUndone
	case len(snap.Files) == 0:
		return nil, nil, fmt.Errorf("%w: %s", ErrNotUndoable, ReasonIncomplete)
	}
	states := make([]patch.FileState, 0, len(snap.Files))
	for _, f := range snap.Files {
		from, to := f.After, f.Before
		if redo {
			from, to = f.Before, f.After
		}
		st := patch.FileState{Path: f.Path}
		if from != nil {
			// Content and mode: undo never resets a mode changed since.
			st.Expect, st.ExpectMode, st.CheckMode = from.Hash, from.Mode, true
		}
		if to == nil {
			st.Absent = true
		} else {
			st.Content, st.Mode = to.Content, to.Mode
			if st.Content == nil {
				st.Content = []byte{}
			}
		}
		states = append(states, st)
	}
	var dirs []string
	if !redo {
		dirs = append(dirs, snap.CreatedDirs...)
	}
	return states, dirs, nil
}
