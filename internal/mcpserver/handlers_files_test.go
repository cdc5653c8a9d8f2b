package mcpserver

import (
	"errors"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/edits"
	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/files"
	"github.com/devspace-dev/devspace/internal/gitrepo"
	"github.com/devspace-dev/devspace/internal/idempotency"
	"github.com/devspace-dev/devspace/internal/oauth"
	"github.com/devspace-dev/devspace/internal/patch"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/reads"
	"github.com/devspace-dev/devspace/internal/rootlock"
	"github.com/devspace-dev/devspace/internal/search"
	"github.com/devspace-dev/devspace/internal/skills"
	"github.com/devspace-dev/devspace/internal/undo"
)

// Handler tests of read_files, skills, show_changes, inspect, apply_patch
// and undo_patch over fake services (harness_test.go).

// readsFailure is one service error of a read tool and its envelope.
type readsFailure struct {
	err  error
	want envelope
}

// checkReadsFailures checks that tool renders each failure of its
// service method with args.
func checkReadsFailures(t *testing.T, tool, method string, args map[string]any, cases map[string]readsFailure) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakes(t)
			f.answer(method, nil, tc.err)
			h := startHandlers(t, f, testPrincipal(oauth.ScopeRead))
			wantError(t, h.call(tool, args), tc.want)
			if calls := f.got(); len(calls) != 2 || calls[1].Method != method {
				t.Errorf("calls %+v, want Resolve, %s", calls, method)
			}
		})
	}
}

// checkRefused checks that tool refuses each of args before any service
// runs.
func checkRefused(t *testing.T, tool string, cases map[string]map[string]any) {
	t.Helper()
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakes(t)
			h := startHandlers(t, f, testPrincipal(allScopes...))
			wantError(t, h.call(tool, args), invalid)
			f.wantCalls(t)
		})
	}
}

func TestReadFilesHandler(t *testing.T) {
	t.Parallel()
	t.Run("read", func(t *testing.T) {
		t.Parallel()
		f := newFakes(t)
		next := 2
		f.answer("ReadFiles", &reads.Files{Files: []reads.FileItem{
			{Path: "a.txt", Content: "one\ntwo\n", Lines: 2, TotalLines: 9, NextOffset: &next, Size: 40, LineEnding: "lf",
				Version: &files.Version{ContentHash: "sha256:aa", MtimeNs: 17}},
			{Path: ".env", Error: &files.ItemError{Code: files.CodeSensitiveFile, Message: "looks like a secret"}},
		}, InstructionsDelta: []reads.DeltaFile{{Path: "sub/AGENTS.md", Trust: "repository_untrusted", Content: "Use tabs."}}}, nil)
		h := startHandlers(t, f, testPrincipal(oauth.ScopeRead))
		args := map[string]any{"files": []any{map[string]any{"path": "a.txt", "offset": 0, "limit": 2}, map[string]any{"path": ".env"}},
			"allowSensitive": true}
		sc := h.ok("read_files", h.call("read_files", args),
			"Read 1 file(s); 1 could not be read; new instructions apply to these paths (see instructionsDelta, untrusted repository text).")
		diff(t, "structuredContent", map[string]any{
			"files": []any{
				map[string]any{"path": "a.txt", "content": "one\ntwo\n", "offset": 0.0, "lines": 2.0, "totalLines": 9.0, "nextOffset": 2.0,
					"size": 40.0, "lineEnding": "lf", "version": map[string]any{"contentHash": "sha256:aa", "mtimeNs": 17.0}},
				map[string]any{"path": ".env", "offset": 0.0, "lines": 0.0, "totalLines": 0.0, "size": 0.0,
					"error": map[string]any{"code": "sensitive_file", "message": "looks like a secret"}},
			},
			"instructionsDelta": []any{map[string]any{"path": "sub/AGENTS.md", "trust": "repository_untrusted", "content": "Use tabs."}},
		}, sc)
		f.wantCalls(t, serviceCall{Method: "Resolve", Caller: h.caller()}, serviceCall{Method: "ReadFiles", Exec: execID,
			Args: readFilesArgs{Files: []reads.FileRequest{{Path: "a.txt", Limit: 2}, {Path: ".env"}}, AllowSensitive: true}})
	})
	checkReadsFailures(t, "read_files", "ReadFiles", validArgs["read_files"], map[string]readsFailure{
		"busy":        {rootlock.ErrBusy, envelope{Code: "project_busy", Category: catTransient, Retryable: true}},
		"unavailable": {rootlock.ErrRootUnavailable, envelope{Code: "project_unavailable", Category: catTransient, Retryable: true}},
		"closed":      {executions.ErrExecutionClosed, envelope{Code: "project_execution_required", Category: catState}},
	})
	checkRefused(t, "read_files", map[string]map[string]any{
		"no files":            {"files": []any{}},
		"nine files":          {"files": repeat(map[string]any{"path": "a.txt"}, reads.MaxFiles+1)},
		"a negative offset":   {"files": []any{map[string]any{"path": "a.txt", "offset": -1}}},
		"a file without path": {"files": []any{map[string]any{"offset": 1}}},
	})
}

func TestSkillsHandler(t *testing.T) {
	t.Parallel()
	skill := skills.Skill{ID: "sk_1", Name: "release", Description: "Cut a release", Trust: skills.TrustRepository, Source: skills.SourceRepository}
	skillJSON := map[string]any{"skillId": "sk_1", "name": "release", "description": "Cut a release", "trust": "repository_untrusted", "source": "repository"}
	for name, tc := range map[string]struct {
		args    map[string]any
		wantReq reads.SkillsRequest
		answer  *reads.Skills
		summary string
		want    map[string]any
	}{
		"search": {map[string]any{"query": "release", "cursor": "cur-1"}, reads.SkillsRequest{Query: "release", Cursor: "cur-1"},
			&reads.Skills{Skills: []reads.Skill{skill}, NextCursor: "cur-2"},
			"Found 1 skill(s).", map[string]any{"skills": []any{skillJSON}, "nextCursor": "cur-2"}},
		"load": {map[string]any{"skillId": "sk_1"}, reads.SkillsRequest{SkillID: "sk_1"},
			&reads.Skills{Loaded: &reads.LoadedSkill{Skill: skill, Body: "Steps.", Files: []string{"notes.md"}}, SupportURI: "skill://sk_1/"},
			"Loaded skill release (repository_untrusted); its body is repository_untrusted text.",
			map[string]any{"loaded": map[string]any{"skillId": "sk_1", "name": "release", "description": "Cut a release", "trust": "repository_untrusted",
				"source": "repository", "body": "Steps.", "files": []any{"notes.md"}}, "supportUriPrefix": "skill://sk_1/"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakes(t)
			f.answer("Skills", tc.answer, nil)
			h := startHandlers(t, f, testPrincipal(oauth.ScopeRead))
			sc := h.ok("skills", h.call("skills", tc.args), tc.summary)
			diff(t, "structuredContent", tc.want, sc)
			f.wantCalls(t, serviceCall{Method: "Resolve", Caller: h.caller()}, serviceCall{Method: "Skills", Exec: execID, Args: tc.wantReq})
		})
	}
	checkReadsFailures(t, "skills", "Skills", map[string]any{"skillId": "sk_9"}, map[string]readsFailure{
		"unknown skill": {reads.ErrSkillNotFound, envelope{Code: "skill_not_found", Category: catInput}},
		"bad query":     {&reads.InputError{Err: errors.New("query too long")}, invalid},
		"other query":   {reads.ErrCursorOtherQuery, envelope{Code: "cursor_invalid", Category: catInput}},
	})
	checkRefused(t, "skills", map[string]map[string]any{
		"skillId with query":  {"skillId": "sk_1", "query": "x"},
		"skillId with cursor": {"skillId": "sk_1", "cursor": "c"},
	})
}

func TestShowChangesHandler(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		args    map[string]any
		wantArg changesArgs
		answer  *reads.Changes
		summary string
		want    map[string]any
	}{
		"a page": {map[string]any{"source": "repository", "cursor": "cur-1"}, changesArgs{Source: "repository", Cursor: "cur-1"},
			&reads.Changes{Source: "repository", Revision: "rev-2", Head: "abc123", Files: []reads.ChangedFile{
				{Path: "a.go", Status: "modified", Unstaged: true, Added: 3, Removed: 1},
				{Path: "b.go", OldPath: "c.go", Status: "renamed", Staged: true}},
				Patch: "diff --git a/a.go b/a.go\n", Offset: 32000, NextCursor: "cur-2", Truncated: true},
			"2 changed file(s); more patch text follows (nextCursor).",
			map[string]any{"source": "repository", "revision": "rev-2", "head": "abc123", "files": []any{
				map[string]any{"path": "a.go", "status": "modified", "unstaged": true, "added": 3.0, "removed": 1.0},
				map[string]any{"path": "b.go", "oldPath": "c.go", "status": "renamed", "staged": true, "added": 0.0, "removed": 0.0}},
				"patch": "diff --git a/a.go b/a.go\n", "offset": 32000.0, "nextCursor": "cur-2", "truncated": true}},
		"none": {map[string]any{"source": "apply_patch_history"}, changesArgs{Source: "apply_patch_history"},
			&reads.Changes{Source: "apply_patch_history", Revision: "rev-0", Files: []reads.ChangedFile{}},
			"No changes.",
			map[string]any{"source": "apply_patch_history", "revision": "rev-0", "files": []any{}, "patch": "", "offset": 0.0}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakes(t)
			f.answer("Changes", tc.answer, nil)
			h := startHandlers(t, f, testPrincipal(oauth.ScopeRead))
			sc := h.ok("show_changes", h.call("show_changes", tc.args), tc.summary)
			diff(t, "structuredContent", tc.want, sc)
			f.wantCalls(t, serviceCall{Method: "Resolve", Caller: h.caller()}, serviceCall{Method: "Changes", Exec: execID, Args: tc.wantArg})
		})
	}
	checkReadsFailures(t, "show_changes", "Changes", validArgs["show_changes"], map[string]readsFailure{
		"moved":          {reads.ErrChangesMoved, envelope{Code: "diff_cursor_stale", Category: catState}},
		"not a repo":     {gitrepo.ErrNotRepository, envelope{Code: "repository_review_unavailable", Category: catState}},
		"unsafe repo":    {gitrepo.ErrRepositoryUnsafe, envelope{Code: "repository_unsafe", Category: catSafety}},
		"unsafe filters": {gitrepo.ErrUnsafeFilters, envelope{Code: "repository_review_unsafe", Category: catSafety}},
	})
	checkRefused(t, "show_changes", map[string]map[string]any{
		"no source":                {},
		"a source not in the enum": {"source": "Repository"},
	})
}

func TestInspectHandler(t *testing.T) {
	t.Parallel()
	t.Run("inspect", func(t *testing.T) {
		t.Parallel()
		f := newFakes(t)
		f.answer("Inspect", &reads.Inspection{Results: []reads.OpResult{
			{Op: "ls", Path: ".", Entries: []search.Entry{{Path: "a.go", Type: "file", Size: 10}}},
			{Op: "grep", Path: ".", Matches: []search.Match{{Path: "a.go", Line: 3, Text: "func main() {"}}, FilesSearched: 1, SensitiveHidden: 1},
		}}, nil)
		h := startHandlers(t, f, testPrincipal(oauth.ScopeRead))
		args := map[string]any{"operations": []any{map[string]any{"op": "ls", "depth": 2},
			map[string]any{"op": "grep", "pattern": "main", "regex": true, "ignoreCase": true, "include": "*.go", "context": 1, "limit": 5}}}
		sc := h.ok("inspect", h.call("inspect", args), "2 operation(s): 1 entries, 1 matches.")
		diff(t, "structuredContent", map[string]any{"results": []any{
			map[string]any{"op": "ls", "path": ".", "entries": []any{map[string]any{"path": "a.go", "type": "file", "size": 10.0}}},
			map[string]any{"op": "grep", "path": ".", "matches": []any{map[string]any{"path": "a.go", "line": 3.0, "text": "func main() {"}},
				"filesSearched": 1.0, "sensitiveHidden": 1.0},
		}}, sc)
		f.wantCalls(t, serviceCall{Method: "Resolve", Caller: h.caller()}, serviceCall{Method: "Inspect", Exec: execID,
			Args: inspectArgs{Ops: []reads.Op{{Kind: "ls", Depth: 2},
				{Kind: "grep", Pattern: "main", Regex: true, IgnoreCase: true, Include: "*.go", Context: 1, Limit: 5}}}})
	})
	checkReadsFailures(t, "inspect", "Inspect", validArgs["inspect"], map[string]readsFailure{
		"bad pattern": {&reads.InputError{Err: errors.New("grep: invalid regex")}, invalid},
		"denied":      {&project.PathError{Reason: project.ReasonParent}, envelope{Code: "path_denied", Category: catSafety}},
	})
	checkRefused(t, "inspect", map[string]map[string]any{
		"no operations":         {"operations": []any{}},
		"nine operations":       {"operations": repeat(map[string]any{"op": "ls"}, reads.MaxOperations+1)},
		"an op not in the enum": {"operations": []any{map[string]any{"op": "find"}}},
		"an op without op":      {"operations": []any{map[string]any{"path": "."}}},
	})
}

func TestApplyPatchHandler(t *testing.T) {
	t.Parallel()
	const patchText = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+uno\n*** Add File: b.txt\n+two\n*** End Patch\n"
	for name, tc := range map[string]struct {
		ifMatch     any
		wantIfMatch edits.IfMatch
	}{
		"by path": {map[string]any{"a.txt": map[string]any{"contentHash": "sha256:aa", "mtimeNs": 5}, "b.txt": nil},
			edits.IfMatch{ByPath: map[string]patch.Precondition{"a.txt": {Set: true, ContentHash: "sha256:aa"}, "b.txt": {Set: true, MustNotExist: true}}}},
		"one version": {"sha256:aa", edits.IfMatch{One: &patch.Precondition{Set: true, ContentHash: "sha256:aa"}}},
		"null":        {nil, edits.IfMatch{One: &patch.Precondition{Set: true, MustNotExist: true}}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakes(t)
			f.answer("Apply", &edits.Applied{Files: []edits.File{
				{Path: "a.txt", Action: "update", Fuzz: "whitespace", Added: 1, Removed: 1, ContentHash: "sha256:bb"},
				{Path: "b.txt", Action: "add", Added: 1, ContentHash: "sha256:cc"}}, Bytes: 8, Replayed: true}, nil)
			h := startHandlers(t, f, testPrincipal(oauth.ScopeRead, oauth.ScopeWrite))
			args := map[string]any{"operationId": "op-1", "patch": patchText, "ifMatch": tc.ifMatch, "allowSensitive": true}
			sc := h.ok("apply_patch", h.call("apply_patch", args), "Patched 2 file(s). Some hunks matched only with whitespace fuzz: check the result.")
			diff(t, "structuredContent", map[string]any{"files": []any{
				map[string]any{"path": "a.txt", "action": "update", "fuzz": "whitespace", "added": 1.0, "removed": 1.0, "contentHash": "sha256:bb"},
				map[string]any{"path": "b.txt", "action": "add", "added": 1.0, "removed": 0.0, "contentHash": "sha256:cc"}},
				"bytes": 8.0, "replayed": true}, sc)
			f.wantCalls(t, serviceCall{Method: "Resolve", Caller: h.caller()}, serviceCall{Method: "Apply", Exec: execID,
				Args: edits.ApplyRequest{OperationID: "op-1", Patch: patchText, IfMatch: tc.wantIfMatch, AllowSensitive: true}})
		})
	}
	t.Run("an ifMatch value that is no version", func(t *testing.T) {
		t.Parallel()
		f := newFakes(t)
		h := startHandlers(t, f, testPrincipal(oauth.ScopeRead, oauth.ScopeWrite))
		wantError(t, h.call("apply_patch", map[string]any{"operationId": "op-1", "patch": patchText, "ifMatch": map[string]any{"a.txt": 5}}),
			envelope{Code: "invalid_tool_input", Category: catInput, OperationID: "op-1", Phase: "not_started"})
		f.wantCalls(t, serviceCall{Method: "Resolve", Caller: h.caller()})
	})
	for name, tc := range map[string]struct {
		err         error
		want        envelope
		wantDetails map[string]any
	}{
		"stale version": {&patch.VersionConflict{Path: "a.txt", Expected: "sha256:aa", Actual: ""},
			envelope{Code: "file_version_conflict", Category: catConflict, Phase: "not_started", OperationID: "op-1"},
			map[string]any{"path": "a.txt", "expected": "sha256:aa", "actual": nil}},
		"missing ifMatch": {&patch.PreconditionMissingError{Paths: []string{"b.txt"}},
			envelope{Code: "if_match_required", Category: catInput, Phase: "not_started", OperationID: "op-1"},
			map[string]any{"paths": []any{"b.txt"}}},
		"unseen instructions": {&edits.InstructionsRequiredError{Delta: []executions.DeltaFile{{Path: "sub/AGENTS.md", Trust: "repository_untrusted", Content: "x"}}},
			envelope{Code: "instructions_required", Category: catState, Phase: "not_started", OperationID: "op-1"},
			map[string]any{"instructionsDelta": []any{map[string]any{"path": "sub/AGENTS.md", "trust": "repository_untrusted", "content": "x"}}}},
		"denied": {&project.PathError{Reason: project.ReasonRepository},
			envelope{Code: "path_denied", Category: catSafety, Phase: "not_started", OperationID: "op-1"},
			map[string]any{"reason": "repository_metadata"}},
		"busy": {rootlock.ErrBusy, envelope{Code: "project_busy", Category: catTransient, Retryable: true, Phase: "not_started", OperationID: "op-1"}, nil},
		"reused operationId": {fmt.Errorf("apply: %w", idempotency.ErrConflict),
			envelope{Code: "operation_id_conflict", Category: catConflict, Phase: "not_started", OperationID: "op-1"}, nil},
		// An error that says whether its effect began keeps its phase.
		"rollback incomplete": {patch.ErrRollbackIncomplete,
			envelope{Code: "operation_outcome_unknown", Category: catState, Phase: "outcome_unknown", OperationID: "op-1"}, nil},
		"failed": {errors.New("fsync: input/output error"), envelope{Code: "internal_error", Category: catInternal, Phase: "not_started", OperationID: "op-1"}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakes(t)
			f.answer("Apply", nil, asService(tc.err, tc.want.Phase))
			h := startHandlers(t, f, testPrincipal(oauth.ScopeRead, oauth.ScopeWrite))
			details := wantError(t, h.call("apply_patch", map[string]any{"operationId": "op-1", "patch": patchText, "ifMatch": nil}), tc.want)
			diff(t, "details", tc.wantDetails, details)
		})
	}
	// Refused by the schema or the tool's own check: no operationId or
	// phase (nothing was attempted under it).
	checkRefused(t, "apply_patch", map[string]map[string]any{
		"no ifMatch":       {"operationId": "op-1", "patch": patchText},
		"an ifMatch array": {"operationId": "op-1", "patch": patchText, "ifMatch": []any{"sha256:aa"}},
		"an empty patch":   {"operationId": "op-1", "patch": "", "ifMatch": nil},
		"no operationId":   {"patch": patchText, "ifMatch": nil},
	})
}

func TestUndoPatchHandler(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		args    map[string]any
		wantReq edits.UndoRequest
		answer  *edits.Undone
		summary string
		want    map[string]any
	}{
		"undo the latest": {map[string]any{"operationId": "op-2"}, edits.UndoRequest{OperationID: "op-2"},
			&edits.Undone{PatchOperationID: "op-1", Files: []edits.File{{Path: "a.txt", Action: "update", Added: 1, Removed: 1, ContentHash: "sha256:aa"}}},
			`Undid the patch "op-1" (1 file(s)).`,
			map[string]any{"patchOperationId": "op-1", "files": []any{
				map[string]any{"path": "a.txt", "action": "update", "added": 1.0, "removed": 1.0, "contentHash": "sha256:aa"}}}},
		"redo, replayed": {map[string]any{"operationId": "op-3", "patchOperationId": "op-1", "redo": true},
			edits.UndoRequest{OperationID: "op-3", PatchOperationID: "op-1", Redo: true},
			&edits.Undone{PatchOperationID: "op-1", Redo: true, Files: []edits.File{}, Replayed: true},
			`Redid the patch "op-1" (0 file(s)).`,
			map[string]any{"patchOperationId": "op-1", "redo": true, "files": []any{}, "replayed": true}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakes(t)
			f.answer("Undo", tc.answer, nil)
			h := startHandlers(t, f, testPrincipal(oauth.ScopeRead, oauth.ScopeWrite))
			sc := h.ok("undo_patch", h.call("undo_patch", tc.args), tc.summary)
			diff(t, "structuredContent", tc.want, sc)
			f.wantCalls(t, serviceCall{Method: "Resolve", Caller: h.caller()}, serviceCall{Method: "Undo", Exec: execID, Args: tc.wantReq})
		})
	}
	for name, tc := range map[string]struct {
		err         error
		want        envelope
		wantDetails map[string]any
	}{
		"nothing to undo": {undo.ErrNotFound, envelope{Code: "undo_not_found", Category: catState, Phase: "not_started", OperationID: "op-1"}, nil},
		"files changed": {&patch.RestoreConflict{Files: []patch.VersionConflict{{Path: "a.txt", Expected: "sha256:aa", Actual: "sha256:bb"}}},
			envelope{Code: "undo_conflict", Category: catConflict, Phase: "not_started", OperationID: "op-1"},
			map[string]any{"paths": []any{"a.txt"}}},
		"already undone": {undo.ErrAlreadyUndone, envelope{Code: "undo_state_conflict", Category: catConflict, Phase: "not_started", OperationID: "op-1"}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakes(t)
			f.answer("Undo", nil, asService(tc.err, tc.want.Phase))
			h := startHandlers(t, f, testPrincipal(oauth.ScopeRead, oauth.ScopeWrite))
			details := wantError(t, h.call("undo_patch", validArgs["undo_patch"]), tc.want)
			diff(t, "details", tc.wantDetails, details)
		})
	}
	// The operationIds' rule is the idempotency service's (TestOperationIDs
	// end to end).
	t.Run("without snapshots", func(t *testing.T) {
		t.Parallel()
		f := newFakes(t)
		f.undo = false
		h := startHandlers(t, f, testPrincipal(allScopes...))
		res, err := h.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "undo_patch", Arguments: validArgs["undo_patch"]})
		if err == nil && !res.IsError {
			t.Fatal("undo_patch runs without undo snapshots")
		}
		f.wantCalls(t)
	})
}

// repeat is n copies of v.
func repeat(v any, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// asService wraps err the way a service says how far its operation got:
// the edge reads the phase from the error, never guesses it.
func asService(err error, phase string) error {
	switch phase {
	case "not_started":
		return idempotency.NotStarted(err)
	case "outcome_unknown":
		return fmt.Errorf("%w: %w", err, idempotency.ErrOutcomeUnknown)
	}
	return err
}
