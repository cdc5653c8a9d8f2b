// Package edits is the service behind apply_patch and undo_patch. It runs
// a patch, an undo or a redo on an execution's Project at most once per
// operationId: it parses the request, takes the Project's write lock,
// holds the change back while nested instructions are undelivered, applies
// it atomically with package patch, and records what changed in the patch
// journal, the undo snapshots and the execution's Thread.
//
// It knows nothing about MCP: callers pass a resolved Target and plain
// requests, and get plain results and errors back. Errors are this
// package's sentinels and types below, or those of patch, undo, operation,
// rootlock, binding and store, wrapped; the edge maps them to codes.
package edits

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/fault"
	"github.com/devspace-dev/devspace/internal/idempotency"
	"github.com/devspace-dev/devspace/internal/metrics"
	"github.com/devspace-dev/devspace/internal/patch"
	"github.com/devspace-dev/devspace/internal/rootlock"
	"github.com/devspace-dev/devspace/internal/store"
	"github.com/devspace-dev/devspace/internal/undo"
)

// Operation keys carry the tool names, as the records written before this
// package existed do, so that a retry across an upgrade still replays.
const (
	applyTool = "apply_patch"
	undoTool  = "undo_patch"
)

// DefaultLockTimeout is how long a call waits for the Project's root lock
// before failing with rootlock.ErrBusy.
const DefaultLockTimeout = rootlock.DefaultWait

// DefaultJournalLimits bound one execution's patch journal.
var DefaultJournalLimits = store.JournalLimits{MaxEntries: 1000, MaxBytes: 64 << 20}

// Errors this package owns, each with its code (ErrUndoDisabled is a bug
// of the caller's wiring: internal_error). Callers test them with
// errors.Is.
var (
	// ErrIfMatchAmbiguous: a single ifMatch value (not an object keyed by
	// path) for a patch that touches more than one path.
	ErrIfMatchAmbiguous = fault.New("if_match_ambiguous", "a single ifMatch value needs a one-path patch")
	// ErrInvalidIfMatch: an ifMatch value is not a version object, a
	// contentHash string or null. Its text is what the client is told.
	ErrInvalidIfMatch = fault.New("invalid_tool_input", "each ifMatch value must be a version, a contentHash string or null")
	// ErrUndoDisabled: Undo was called on a Service without snapshots.
	ErrUndoDisabled = errors.New("undo snapshots are disabled")
)

// InstructionsRequiredError refuses a patch under nested instruction files
// the execution has not seen yet. They are now recorded as delivered, so
// the same patch sent again (after reading them) runs.
type InstructionsRequiredError struct {
	Delta []executions.DeltaFile
}

func (e *InstructionsRequiredError) Error() string {
	return fmt.Sprintf("%d nested instruction file(s) not yet read", len(e.Delta))
}

// Code is instructions_required.
func (e *InstructionsRequiredError) Code() string { return "instructions_required" }

// Details are the instruction files, now delivered, for the client to
// read: details.instructionsDelta.
func (e *InstructionsRequiredError) Details() map[string]any {
	return map[string]any{"instructionsDelta": e.Delta}
}

// Operations runs an effect at most once per key (idempotency.Service).
type Operations interface {
	Do(ctx context.Context, key idempotency.Key, requestHash string, fn func(ctx context.Context) ([]byte, error)) ([]byte, bool, error)
}

// Locks serializes the tools that use one Project (rootlock.Locks).
type Locks interface {
	AcquireRoot(ctx context.Context, dir string, mode rootlock.Mode, timeout time.Duration) (*rootlock.Held, error)
}

// Journal is the per-execution patch journal behind show_changes
// apply_patch_history (store.Store).
type Journal interface {
	JournalRoom(ctx context.Context, executionID string, size int64, lim store.JournalLimits) error
	AppendJournal(ctx context.Context, executionID, kind, files, diff string) (int64, error)
}

// Instructions delivers the nested instruction files that apply to paths
// and the execution has not seen yet (executions.Service).
type Instructions interface {
	InstructionsDelta(ctx context.Context, e *store.Execution, r *os.Root, paths []string) ([]executions.DeltaFile, error)
}

// Checkpointer records a sanitized entry on an execution's Thread
// (executions.Activity).
type Checkpointer interface {
	Checkpoint(ctx context.Context, executionID, kind string, data map[string]any)
}

var (
	_ Operations   = (*idempotency.Service)(nil)
	_ Locks        = (*rootlock.Locks)(nil)
	_ Journal      = (*store.Store)(nil)
	_ Instructions = (*executions.Service)(nil)
	_ Checkpointer = (*executions.Activity)(nil)
)

// Options configure a Service. Fields are required unless noted.
type Options struct {
	Operations   Operations
	Locks        Locks
	Journal      Journal
	Instructions Instructions
	Checkpoints  Checkpointer
	Metrics      *metrics.Metrics
	// Snapshots keeps what each patch changed so that Undo can revert it;
	// nil disables undo (Undo returns ErrUndoDisabled) and recording.
	Snapshots *undo.Store
	// Intents records each commit durably so that a crash is finished or
	// undone at the next start (patch.Options.Intents); nil keeps commits
	// atomic only while the process lives.
	Intents *patch.Intents
	// JournalLimits bound each execution's journal; the zero value means
	// DefaultJournalLimits.
	JournalLimits store.JournalLimits
	// LockTimeout is how long a call waits for the root lock; zero means
	// DefaultLockTimeout.
	LockTimeout time.Duration
	// Disk refuses a patch while the disk it would write is low
	// (diskguard.ErrDiskLow); nil checks nothing.
	Disk interface {
		CheckPatch(ctx context.Context, root string) error
	}
	// Logger receives the failures of recording a committed change, which
	// never fail the call; nil discards.
	Logger *slog.Logger
}

// Service applies, undoes and redoes patches. It is safe for concurrent
// use; calls on one Project are serialized by its root lock.
type Service struct {
	opts Options
	log  *slog.Logger
}

// New returns a Service. It does not take ownership of its collaborators.
func New(opts Options) *Service {
	if opts.JournalLimits == (store.JournalLimits{}) {
		opts.JournalLimits = DefaultJournalLimits
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{opts: opts, log: log.With("component", "edits")}
}

// UndoEnabled reports whether the Service keeps undo snapshots.
func (s *Service) UndoEnabled() bool { return s.opts.Snapshots != nil }

// File is what a patch, undo or redo did to one path. Its JSON form is the
// one stored for replay and in the journal.
type File struct {
	Path      string `json:"path"`
	Action    string `json:"action"`
	MovedFrom string `json:"movedFrom,omitempty"`
	Fuzz      string `json:"fuzz,omitempty"`
	Added     int    `json:"added"`
	Removed   int    `json:"removed"`
	// ContentHash is the file's new version; pass it as ifMatch next time
	// ("" after a delete).
	ContentHash string `json:"contentHash,omitempty"`
}

// workspace is a Target with its root lock held and its directory open.
type workspace struct {
	*rootlock.Held // Root: the Target's directory
	exec           *store.Execution
}

// open takes h's root lock for writing and opens its directory, then
// checks h: the caller resolved it before waiting for the lock (up to
// LockTimeout), and a grant revoked or a Thread closed meanwhile must not
// see its patch committed after the close. Errors: rootlock.ErrBusy,
// ctx.Err(), rootlock.ErrRootUnavailable, executions.ErrExecutionClosed.
func (s *Service) open(ctx context.Context, h executions.Handle) (*workspace, error) {
	held, err := s.opts.Locks.AcquireRoot(ctx, h.Project().Path, rootlock.Patch, s.opts.LockTimeout)
	if err != nil {
		return nil, err
	}
	if err := h.Err(); err != nil {
		held.Close()
		return nil, err
	}
	return &workspace{Held: held, exec: h.Execution()}, nil
}

func (w *workspace) close() { w.Close() }

// once takes t's root lock, opens its directory and runs effect there at
// most once per operation key (t's grant and execution, tool, operationID)
// and request. It returns the typed value effect produced, or, when the
// operation is replayed, the stored one decoded into a new T; effect's
// result is marshalled once, for storage.
func once[T any](ctx context.Context, s *Service, h executions.Handle, tool, operationID string, request any,
	effect func(ctx context.Context, w *workspace) (*T, error)) (_ *T, replayed bool, _ error) {
	if s.opts.Disk != nil {
		if err := s.opts.Disk.CheckPatch(ctx, h.Project().Path); err != nil {
			return nil, false, idempotency.NotStarted(err)
		}
	}
	w, err := s.open(ctx, h)
	if err != nil {
		return nil, false, idempotency.NotStarted(err)
	}
	defer w.close()
	hash, err := idempotency.HashRequest(request)
	if err != nil {
		return nil, false, idempotency.NotStarted(err)
	}
	key := idempotency.Key{GrantID: h.Caller().GrantID, ExecutionID: h.ID(), Tool: tool, OperationID: operationID}
	var fresh *T
	raw, replayed, err := s.opts.Operations.Do(ctx, key, hash, func(ctx context.Context) ([]byte, error) {
		out, err := effect(ctx, w)
		if err != nil {
			return nil, err
		}
		fresh = out
		return json.Marshal(out)
	})
	if err != nil {
		return nil, false, err
	}
	if fresh != nil && !replayed {
		return fresh, false, nil
	}
	out := new(T)
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, false, fmt.Errorf("decode stored result: %w", err)
	}
	return out, true, nil
}

// record journals a committed change and checkpoints it to the Thread.
// Failures are logged: the change is committed whatever happens here.
func (s *Service) record(ctx context.Context, executionID, kind string, res *patch.Result, files []File) {
	list, _ := json.Marshal(files)
	if _, err := s.opts.Journal.AppendJournal(ctx, executionID, kind, string(list), patch.RenderDiff(res)); err != nil {
		s.log.ErrorContext(ctx, "append patch journal", "err", err)
	}
	touched := make([]map[string]any, 0, len(files))
	for _, f := range files {
		touched = append(touched, map[string]any{"path": f.Path, "action": f.Action, "added": f.Added, "removed": f.Removed})
	}
	s.opts.Checkpoints.Checkpoint(ctx, executionID, kind, map[string]any{"files": touched})
}

// writeFailed marks a failure of patch.Apply or patch.Restore: one whose
// rollback was incomplete has unknown effects and is never re-run; any
// other changed nothing.
func writeFailed(err error) error {
	if errors.Is(err, patch.ErrRollbackIncomplete) {
		return err
	}
	return idempotency.NotStarted(err)
}
