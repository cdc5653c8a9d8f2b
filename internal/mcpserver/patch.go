package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/devspace-dev/devspace/internal/oauth"
	"github.com/devspace-dev/devspace/internal/operation"
	"github.com/devspace-dev/devspace/internal/patch"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/rootlock"
	"github.com/devspace-dev/devspace/internal/store"
)

var journalLimits = store.JournalLimits{MaxEntries: 1000, MaxBytes: 64 << 20}

type applyPatchIn struct {
	OperationID    string          `json:"operationId" jsonschema:"caller-chosen idempotency key (1-128 bytes); retrying with the same value replays the first result"`
	Patch          string          `json:"patch" jsonschema:"Codex-format patch: *** Begin Patch, then *** Add File: / *** Delete File: / *** Update File: (optionally *** Move to:) sections with @@ hunks, then *** End Patch"`
	IfMatch        json.RawMessage `json:"ifMatch" jsonschema:"for every path the patch touches: the version (or version.contentHash) from read_files, or null for must-not-exist; as an object keyed by path, or a single value when the patch touches one path"`
	AllowSensitive bool            `json:"allowSensitive,omitempty" jsonschema:"allow changing files that look like secrets; only when the user asked for it"`
}

// schema publishes ifMatch as what parseIfMatch reads: an object keyed by
// path, or one value (a contentHash string, a version object, or null).
func (applyPatchIn) schema(s *jsonschema.Schema) {
	s.Properties["ifMatch"].Types = []string{"object", "string", "null"}
	s.Properties["ifMatch"].Items = nil
}

func (in *applyPatchIn) validate() error {
	if err := operation.ValidateID(in.OperationID); err != nil {
		return invalidInput("operationId must be 1-128 bytes of UTF-8 without NUL")
	}
	if in.Patch == "" {
		return invalidInput("patch is required")
	}
	return nil
}

type patchedFile struct {
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

type applyPatchOut struct {
	Files    []patchedFile `json:"files"`
	Bytes    int64         `json:"bytes"`
	Replayed bool          `json:"replayed,omitempty"`
}

func (o applyPatchOut) summary() string {
	msg := fmt.Sprintf("Patched %d file(s).", len(o.Files))
	for _, f := range o.Files {
		if f.Fuzz != "" && f.Fuzz != "exact" {
			msg += " Some hunks matched only with " + f.Fuzz + " fuzz: check the result."
			break
		}
	}
	return msg
}

func registerPatchTools(s *Server) {
	addTool(s, spec{
		name:  "apply_patch",
		title: "Apply a patch",
		description: "Use when changing Project files: one Codex-format patch adds, deletes, updates or moves files atomically (all or nothing). " +
			"Avoid patching files you have not read in this conversation: every touched path needs ifMatch (its version from read_files, or null for a new file), so stale edits are refused. " +
			"Returns each file's action, added/removed lines, the fuzz used and the new contentHash.",
		scopes: []string{oauth.ScopeRead, oauth.ScopeWrite},
		hints:  hints{destructive: true, idempotent: true},
	}, s.applyPatch)
}

// parseIfMatch turns the ifMatch argument into per-path preconditions.
// A scalar (a hash string, a version object or null) is accepted only for
// a one-path patch.
func parseIfMatch(raw json.RawMessage, paths []string) (map[string]patch.Precondition, error) {
	raw = bytes.TrimSpace(raw)
	pre := map[string]patch.Precondition{}
	if len(raw) == 0 {
		return pre, nil // every path is then missing: if_match_required
	}
	one := func(v json.RawMessage) (patch.Precondition, error) {
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
		return patch.Precondition{}, invalidInput("each ifMatch value must be a version, a contentHash string or null")
	}
	var obj map[string]json.RawMessage
	isObj := json.Unmarshal(raw, &obj) == nil && obj != nil
	_, hasHash := obj["contentHash"]
	scalar := !isObj || (hasHash && len(obj) <= 2 && (len(obj) == 1 || obj["mtimeNs"] != nil))
	if scalar {
		if len(paths) != 1 {
			return nil, toolErr("if_match_ambiguous", catInput,
				"A single ifMatch value only works for a one-path patch; pass an object keyed by path.")
		}
		p, err := one(raw)
		if err != nil {
			return nil, err
		}
		pre[paths[0]] = p
		return pre, nil
	}
	for path, v := range obj {
		p, err := one(v)
		if err != nil {
			return nil, err
		}
		clean, err := project.CleanRel(path)
		if err != nil {
			return nil, err
		}
		pre[clean] = p
	}
	return pre, nil
}

func (s *Server) applyPatch(ctx context.Context, c *call, in *applyPatchIn) (applyPatchOut, error) {
	fail := func(err error) (applyPatchOut, error) {
		te := s.patchError(err)
		te.OperationID = in.OperationID
		if te.Phase == "" {
			te.Phase = "not_started"
		}
		return applyPatchOut{}, te
	}
	p, err := patch.Parse(in.Patch)
	if err != nil {
		return fail(err)
	}
	paths := p.Paths()
	pre, err := parseIfMatch(in.IfMatch, paths)
	if err != nil {
		return fail(err)
	}
	w, err := s.openWorkspace(ctx, c, rootlock.Patch)
	if err != nil {
		return fail(err)
	}
	defer w.close()
	hash, err := operation.HashRequest(map[string]any{"patch": in.Patch, "ifMatch": json.RawMessage(canonicalJSON(in.IfMatch)), "allowSensitive": in.AllowSensitive})
	if err != nil {
		return applyPatchOut{}, err
	}
	key := operation.Key{GrantID: c.caller.GrantID, ExecutionID: w.exec.ID, Tool: "apply_patch", OperationID: in.OperationID}
	raw, replayed, err := s.opts.Operations.Do(ctx, key, hash, func(ctx context.Context) ([]byte, error) {
		// Nested instructions the model has not seen yet come first.
		delta, err := s.opts.Bindings.InstructionsDelta(ctx, w.exec, w.root, paths)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", operation.ErrNotStarted, err)
		}
		if len(delta) > 0 {
			te := toolErr("instructions_required", catState,
				"Instructions apply to these paths that you have not seen; read them (details.instructionsDelta) and send the patch again.", "apply_patch")
			te.Details = map[string]any{"instructionsDelta": delta}
			return nil, fmt.Errorf("%w: %w", operation.ErrNotStarted, te)
		}
		if err := s.opts.Store.JournalRoom(ctx, w.exec.ID, int64(len(in.Patch)), journalLimits); err != nil {
			return nil, fmt.Errorf("%w: %w", operation.ErrNotStarted, err)
		}
		res, err := patch.Apply(ctx, w.root, p, pre, patch.Options{AllowSensitive: in.AllowSensitive, Intents: s.opts.PatchIntents})
		if err != nil {
			if errors.Is(err, patch.ErrRollbackIncomplete) {
				return nil, err // effects unknown: never re-run
			}
			return nil, fmt.Errorf("%w: %w", operation.ErrNotStarted, err)
		}
		out := applyPatchOut{Files: []patchedFile{}, Bytes: res.Bytes}
		for _, f := range res.Files {
			out.Files = append(out.Files, patchedFile{Path: f.Path, Action: f.Action, MovedFrom: f.MovedFrom, Fuzz: f.Fuzz,
				Added: f.Added, Removed: f.Removed, ContentHash: f.After})
		}
		s.recordPatch(ctx, w, in, res, out)
		return json.Marshal(out)
	})
	if err != nil {
		return fail(err)
	}
	var out applyPatchOut
	if err := json.Unmarshal(raw, &out); err != nil {
		return applyPatchOut{}, err
	}
	out.Replayed = replayed
	return out, nil
}

// recordPatch journals a committed patch, snapshots it for undo and
// checkpoints it to the Thread. The patch is committed whatever happens
// here; failures are logged. The snapshot (files under the state
// directory) and the journal (SQLite) are independent and are written at
// the same time; both are done when it returns, so the next call sees
// them.
func (s *Server) recordPatch(ctx context.Context, w *workspace, in *applyPatchIn, res *patch.Result, out applyPatchOut) {
	s.opts.Metrics.PatchBytes.Add(float64(res.Bytes))
	var wg sync.WaitGroup
	if s.opts.Undo != nil {
		wg.Go(func() {
			if err := s.opts.Undo.Record(ctx, w.exec.ID, in.OperationID, res, snapshotResolver(w.root)); err != nil {
				s.log.ErrorContext(ctx, "record undo snapshot", "err", err)
			}
		})
	}
	s.journalAndCheckpoint(ctx, w, "patch_applied", patch.Entry{OpID: in.OperationID, Patch: in.Patch, Result: res}, out.Files)
	wg.Wait()
}

// journalAndCheckpoint records a change in the execution's patch journal
// (show_changes apply_patch_history) and its Thread.
func (s *Server) journalAndCheckpoint(ctx context.Context, w *workspace, kind string, entry patch.Entry, files []patchedFile) {
	list, _ := json.Marshal(files)
	if _, err := s.opts.Store.AppendJournal(ctx, w.exec.ID, string(list), patch.RenderDiff(entry)); err != nil {
		s.log.ErrorContext(ctx, "append patch journal", "err", err)
	}
	touched := make([]map[string]any, 0, len(files))
	for _, f := range files {
		touched = append(touched, map[string]any{"path": f.Path, "action": f.Action, "added": f.Added, "removed": f.Removed})
	}
	s.opts.Bindings.Checkpoint(ctx, w.exec.ID, kind, map[string]any{"files": touched})
}

// canonicalJSON re-encodes a JSON value with sorted keys so equal ifMatch
// arguments hash equally.
func canonicalJSON(raw json.RawMessage) []byte {
	var v any
	if len(bytes.TrimSpace(raw)) == 0 || json.Unmarshal(raw, &v) != nil {
		return []byte("null")
	}
	b, _ := json.Marshal(v)
	return b
}

// patchError maps patch errors (the rest go through mapError).
func (s *Server) patchError(err error) *ToolError {
	var te *ToolError
	var vc *patch.VersionConflict
	var pm *patch.PreconditionMissingError
	var pe *patch.ParseError
	var he *patch.HunkError
	switch {
	case errors.As(err, &te):
		return te
	case errors.Is(err, project.ErrPathDenied):
		return s.pathDenied(err)
	case errors.As(err, &vc):
		e := toolErr("file_version_conflict", catConflict,
			"A file changed since you read it: read it again and rebuild the patch with its new version.", "read_files")
		var expected, actual any = vc.Expected, vc.Actual
		if vc.Expected == "" {
			expected = nil
		}
		if vc.Actual == "" {
			actual = nil
		}
		e.Details = map[string]any{"path": vc.Path, "expected": expected, "actual": actual}
		return e
	case errors.As(err, &pm):
		e := toolErr("if_match_required", catInput, "Every path the patch touches needs an ifMatch entry (its version from read_files, or null for a new file).", "read_files")
		e.Details = map[string]any{"paths": pm.Paths}
		return e
	case errors.Is(err, patch.ErrTooLarge):
		return toolErr("patch_too_large", catLimit, "The patch is too large ("+err.Error()+"); split it.")
	case errors.As(err, &pe), errors.Is(err, patch.ErrInvalidPatch):
		return toolErr("invalid_patch", catInput, "The patch is not valid: "+err.Error()+".")
	case errors.Is(err, patch.ErrAmbiguous):
		// Before the *HunkError case: an ambiguous hunk is a *HunkError too.
		return toolErr("patch_ambiguous", catInput, "A hunk matches in more than one place: "+err.Error()+". Add more context lines or an @@ anchor.")
	case errors.As(err, &he), errors.Is(err, patch.ErrContextNotFound):
		return toolErr("patch_context_not_found", catInput, "A hunk's context was not found: "+err.Error()+". Read the file again and rebuild the hunk.", "read_files")
	case errors.Is(err, patch.ErrBinaryTarget):
		return toolErr("binary_target", catInput, "Binary or non-UTF-8 files cannot be patched.")
	case errors.Is(err, patch.ErrTargetMissing):
		return toolErr("patch_target_missing", catInput, "A file the patch updates or deletes does not exist: "+err.Error()+".")
	case errors.Is(err, store.ErrJournalFull):
		return toolErr("patch_journal_full", catLimit, "This conversation's patch history is full; open the Project again (project_control open) to continue.", "project_control open")
	case errors.Is(err, patch.ErrRollbackIncomplete):
		e := toolErr("operation_outcome_unknown", catState, "The patch failed and could not be rolled back completely; check the files before retrying with a new operationId.", "show_changes")
		e.Phase = "outcome_unknown"
		return e
	}
	return mapError(err)
}
