package edits

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"sync"

	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/idempotency"
	"github.com/devspace-dev/devspace/internal/patch"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/store"
	"github.com/devspace-dev/devspace/internal/undo"
)

// ApplyRequest is one apply_patch call.
type ApplyRequest struct {
	// OperationID is the caller's idempotency key (idempotency.ValidateID).
	OperationID string
	// Patch is the Codex-format patch text (patch.Parse).
	Patch string
	// IfMatch holds the preconditions the client sent (ParseIfMatch).
	IfMatch IfMatch
	// AllowSensitive permits changing files that look like secrets.
	AllowSensitive bool
}

// Applied is the outcome of Apply. Its JSON form (Replayed aside) is what
// is stored for replay.
type Applied struct {
	Files []File `json:"files"`
	Bytes int64  `json:"bytes"`
	// Replayed says the operation ran before and this is its stored
	// outcome: nothing was written this time.
	Replayed bool `json:"-"`
}

// Apply applies req.Patch to t's Project atomically, at most once per
// req.OperationID: a retry with the same request gets the first outcome
// with Replayed set. Every path the patch touches needs an ifMatch entry.
// A patch under nested instruction files the execution has not seen is
// refused with *InstructionsRequiredError, and they count as seen from
// then on. After the commit the change is recorded in the journal, the
// undo snapshots and the Thread; those failures are logged, not returned.
//
// Errors, wrapping idempotency.ErrNotStarted when nothing changed: those of
// patch.Parse and patch.Apply (*ParseError, *HunkError, *VersionConflict,
// *PreconditionMissingError, …, ErrRollbackIncomplete), ErrInvalidIfMatch,
// ErrIfMatchAmbiguous, *InstructionsRequiredError, store.ErrJournalFull,
// rootlock.ErrBusy, executions.ErrProjectUnavailable, and those of
// idempotency.Service.Do (ErrConflict, ErrOutcomeUnknown, …).
func (s *Service) Apply(ctx context.Context, h executions.Handle, req ApplyRequest) (*Applied, error) {
	p, err := patch.Parse(req.Patch)
	if err != nil {
		return nil, idempotency.NotStarted(err)
	}
	paths := p.Paths()
	pre, err := req.IfMatch.preconditions(paths)
	if err != nil {
		return nil, idempotency.NotStarted(err)
	}
	request := map[string]any{"patch": req.Patch, "ifMatch": req.IfMatch, "allowSensitive": req.AllowSensitive}
	out, replayed, err := once(ctx, s, h, applyTool, req.OperationID, request, func(ctx context.Context, w *workspace) (*Applied, error) {
		// Nested instructions the model has not seen yet come first.
		delta, err := s.opts.Instructions.InstructionsDelta(ctx, w.exec, w.Root, paths)
		if err != nil {
			return nil, idempotency.NotStarted(err)
		}
		if len(delta) > 0 {
			return nil, idempotency.NotStarted(&InstructionsRequiredError{Delta: delta})
		}
		if err := s.opts.Journal.JournalRoom(ctx, w.exec.ID, int64(len(req.Patch)), s.opts.JournalLimits); err != nil {
			return nil, idempotency.NotStarted(err)
		}
		res, err := patch.Apply(ctx, w.Root, p, pre, patch.Options{AllowSensitive: req.AllowSensitive, Intents: s.opts.Intents})
		if err != nil {
			return nil, writeFailed(err)
		}
		out := &Applied{Files: make([]File, 0, len(res.Files)), Bytes: res.Bytes}
		for _, f := range res.Files {
			out.Files = append(out.Files, File{Path: f.Path, Action: f.Action, MovedFrom: f.MovedFrom, Fuzz: f.Fuzz,
				Added: f.Added, Removed: f.Removed, ContentHash: f.After})
		}
		s.recordPatch(ctx, w, req, res, out.Files)
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	out.Replayed = replayed
	return out, nil
}

// recordPatch counts a committed patch's bytes, snapshots it for undo and
// records it (record). The snapshot (files under the state directory) and
// the journal (SQLite) are independent and are written at the same time;
// both are done when it returns, so the next call sees them.
func (s *Service) recordPatch(ctx context.Context, w *workspace, req ApplyRequest, res *patch.Result, files []File) {
	s.opts.Metrics.PatchBytes.Add(float64(res.Bytes))
	var wg sync.WaitGroup
	if s.opts.Snapshots != nil {
		wg.Go(func() {
			if err := s.opts.Snapshots.Record(ctx, w.exec.ID, req.OperationID, res, resolver(w.Root)); err != nil {
				s.log.ErrorContext(ctx, "record undo snapshot", "err", err)
			}
		})
	}
	s.record(ctx, w.exec.ID, store.JournalApplied, res, files)
	wg.Wait()
}

// resolver resolves a Project-relative path to its real path inside root
// (project.RealPath: os.Root's rules, the last element followed too), so
// snapshots can refuse files that are sensitive behind a symlink. Used for
// classification only.
func resolver(root *os.Root) undo.Resolver {
	return func(p string) (string, error) {
		real, _, err := project.RealPath(root, p)
		return real, err
	}
}

// IfMatch is apply_patch's ifMatch argument, parsed once (ParseIfMatch):
// a precondition per path, or a single one for a one-path patch.
type IfMatch struct {
	One    *patch.Precondition           `json:"one,omitempty"`
	ByPath map[string]patch.Precondition `json:"byPath,omitempty"`
}

// ParseIfMatch reads the ifMatch argument as the client sent it: an
// object keyed by path, or, for a one-path patch, a single value. Each
// value is a version object with a contentHash, a contentHash string, or
// null for "must not exist". Empty means no entries. Errors:
// ErrInvalidIfMatch, wrapping idempotency.ErrNotStarted.
func ParseIfMatch(raw json.RawMessage) (IfMatch, error) {
	m, err := parseIfMatch(raw)
	if err != nil {
		return IfMatch{}, idempotency.NotStarted(err)
	}
	return m, nil
}

func parseIfMatch(raw json.RawMessage) (IfMatch, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return IfMatch{}, nil // every path is then missing: *PreconditionMissingError
	}
	var obj map[string]json.RawMessage
	isObj := json.Unmarshal(raw, &obj) == nil && obj != nil
	_, hasHash := obj["contentHash"]
	if !isObj || (hasHash && len(obj) <= 2 && (len(obj) == 1 || obj["mtimeNs"] != nil)) {
		p, err := precondition(raw)
		if err != nil {
			return IfMatch{}, err
		}
		return IfMatch{One: &p}, nil
	}
	m := IfMatch{ByPath: make(map[string]patch.Precondition, len(obj))}
	for path, v := range obj {
		p, err := precondition(v)
		if err != nil {
			return IfMatch{}, err
		}
		m.ByPath[path] = p
	}
	return m, nil
}

// preconditions gives each of paths its precondition for patch.Apply,
// which cleans and checks the keys (so they are checked in one place). A
// single value names the path of a one-path patch; ErrIfMatchAmbiguous
// for any other.
func (m IfMatch) preconditions(paths []string) (map[string]patch.Precondition, error) {
	if m.One == nil {
		if m.ByPath == nil {
			return map[string]patch.Precondition{}, nil
		}
		return m.ByPath, nil
	}
	if len(paths) != 1 {
		return nil, ErrIfMatchAmbiguous
	}
	return map[string]patch.Precondition{paths[0]: *m.One}, nil
}

// precondition reads one ifMatch value. Errors: ErrInvalidIfMatch.
func precondition(v json.RawMessage) (patch.Precondition, error) {
	v = bytes.TrimSpace(v)
	if string(v) == "null" {
		return patch.Precondition{Set: true, MustNotExist: true}, nil
	}
	var h string
	if json.Unmarshal(v, &h) == nil {
		return patch.Precondition{Set: true, ContentHash: h}, nil
	}
	var ver struct {
		ContentHash string `json:"contentHash"`
		MtimeNs     int64  `json:"mtimeNs"`
	}
	if json.Unmarshal(v, &ver) == nil && ver.ContentHash != "" {
		return patch.Precondition{Set: true, ContentHash: ver.ContentHash}, nil
	}
	return patch.Precondition{}, ErrInvalidIfMatch
}
