package mcpserver

import (
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/commands"
	"github.com/devspace-dev/devspace/internal/cursor"
	"github.com/devspace-dev/devspace/internal/diskguard"
	"github.com/devspace-dev/devspace/internal/edits"
	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/gitrepo"
	"github.com/devspace-dev/devspace/internal/idempotency"
	"github.com/devspace-dev/devspace/internal/patch"
	"github.com/devspace-dev/devspace/internal/process"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/review"
	"github.com/devspace-dev/devspace/internal/rootlock"
	"github.com/devspace-dev/devspace/internal/secret"
	"github.com/devspace-dev/devspace/internal/store"
	"github.com/devspace-dev/devspace/internal/tasks"
	"github.com/devspace-dev/devspace/internal/undo"
)

// Error categories (docs/design.md §8).
const (
	catInput     = "input"
	catScope     = "scope"
	catState     = "state"
	catConflict  = "conflict"
	catLimit     = "limit"
	catSafety    = "safety"
	catTransient = "transient"
	catInternal  = "internal"
)

// ToolError is the machine-readable error envelope returned in
// structuredContent.error of a failed tool call. Every code is listed in
// docs/errors.md.
type ToolError struct {
	Code         string         `json:"code"`
	Category     string         `json:"category"`
	Retryable    bool           `json:"retryable"`
	NextActions  []string       `json:"nextActions"`
	Phase        string         `json:"phase,omitempty"`
	EffectsKnown *bool          `json:"effectsKnown,omitempty"`
	OperationID  string         `json:"operationId,omitempty"`
	Details      map[string]any `json:"details,omitempty"`

	message string // the one guidance sentence for content
	wwwAuth string // insufficient_scope challenge for _meta
}

func (e *ToolError) Error() string { return e.Code + ": " + e.message }

// toolErr builds the envelope of code (one of codeCategories, which gives
// its category; a transient error is retryable) with its guidance sentence
// and next actions.
func toolErr(code, message string, next ...string) *ToolError {
	category, ok := codeCategories[code]
	if !ok {
		panic("mcpserver: error code " + code + " is not in codeCategories (nor in docs/errors.md)")
	}
	if next == nil {
		next = []string{}
	}
	return &ToolError{Code: code, Category: category, Retryable: category == catTransient, message: message, NextActions: next}
}

// invalidInput is the error for arguments that fail decoding or validation.
func invalidInput(format string, a ...any) *ToolError {
	return toolErr("invalid_tool_input", fmt.Sprintf(format, a...), "fix the arguments and call again")
}

// mapError turns a domain error into the envelope. This is the one place
// where that mapping lives; anything unknown becomes internal_error and
// its cause is logged, never shown.
func mapError(err error) *ToolError {
	var te *ToolError
	if errors.As(err, &te) {
		return te
	}
	if te := mapReadError(err); te != nil {
		return te
	}
	var (
		instructions *edits.InstructionsRequiredError
		restore      *patch.RestoreConflict
		conflict     *patch.VersionConflict
		missing      *patch.PreconditionMissingError
		parse        *patch.ParseError
		hunk         *patch.HunkError
		credential   *secret.Error
	)
	switch {
	case errors.As(err, &credential):
		return notStarted(toolErr("secret_persistence_blocked", "This looks like a credential ("+credential.Kind+" in "+credential.Field+
			"); nothing was run or saved. Remove it and call again: a command should read a secret from a file, not carry it in its text."))
	case errors.Is(err, executions.ErrExecutionRequired):
		return toolErr("project_execution_required",
			"No open Project in this conversation: call project_control with action open (or hydrate after a reconnect).",
			"project_control open", "project_control hydrate")
	case errors.Is(err, executions.ErrProjectNotAuthorized):
		return toolErr("project_not_authorized",
			"That projectRef is not one of this connection's Projects: call list_projects for the ones you can use.",
			"list_projects")
	case errors.Is(err, executions.ErrProjectRefRequired):
		return toolErr("project_ref_required",
			"This connection has several Projects: pass projectRef (from list_projects).", "list_projects")
	case errors.Is(err, executions.ErrInstructionsRequired):
		return toolErr("root_instructions_required",
			"Read the remaining root instruction pages first: call project_control hydrate with the nextCursor you were given.",
			"project_control hydrate")
	case errors.Is(err, executions.ErrProjectUnavailable), errors.Is(err, commands.ErrProjectUnavailable), errors.Is(err, rootlock.ErrRootUnavailable):
		e := toolErr("project_unavailable", "The Project directory cannot be read right now; try again later.")
		return e
	case errors.Is(err, executions.ErrWriteScopeRequired):
		return toolErr("project_write_scope_required", "A managed worktree needs project:write; open with checkoutKind checkout or reconnect the app to grant it.")
	case errors.Is(err, gitrepo.ErrRepositoryUnsafe):
		// Before ErrWorktreeUnavailable, which wraps it for worktree opens;
		// show_changes' reviewError passes it through.
		return repositoryUnsafe()
	case errors.Is(err, executions.ErrWorktreeUnavailable):
		return toolErr("project_worktree_unavailable",
			"This Project cannot host a managed worktree (its root must be exactly a Git top level with at least one commit and no executable filters); open with checkoutKind checkout.")
	case errors.Is(err, executions.ErrWorktreeDirty):
		return toolErr("project_worktree_dirty", "The worktree has uncommitted changes; commit or discard them before closing the Thread.")
	case errors.Is(err, executions.ErrThreadNotFound):
		return toolErr("project_thread_not_found", "No such Thread for this connection and user.")
	case errors.Is(err, executions.ErrThreadRevision):
		return toolErr("thread_revision_conflict", "The Thread changed; read its status and retry with the new revision.", "project_thread_control status")
	case errors.Is(err, executions.ErrProcessesRunning):
		e := toolErr("project_busy", "Commands of this Thread are still running; interrupt them before closing it.", "project_control interrupt")
		return e
	case errors.Is(err, executions.ErrTaskNotFound):
		return toolErr("project_task_not_found", "No saved Task with that taskRef is available to this connection.", "list_projects")
	case errors.Is(err, rootlock.ErrBusy):
		e := toolErr("project_busy", "Another DevSpace operation holds this Project (a patch or running commands); wait, or interrupt the commands, then retry.",
			"retry shortly", "project_control interrupt")
		return e
	case errors.Is(err, project.ErrPathDenied):
		return pathDenied(err)
	case errors.Is(err, idempotency.ErrInvalidID):
		return invalidInput("operationId must be 1-128 bytes of UTF-8 without NUL")
	case errors.Is(err, idempotency.ErrConflict):
		return toolErr("operation_id_conflict",
			"This operationId was already used for a different request: use a new operationId.", "retry with a new operationId")
	case errors.Is(err, idempotency.ErrOutcomeUnknown):
		e := toolErr("operation_outcome_unknown",
			"The outcome of this operation is unknown (the server stopped while it ran); check the Project state before retrying with a new operationId.")
		e.Phase = "outcome_unknown"
		return e
	case errors.Is(err, cursor.ErrExpired), errors.Is(err, cursor.ErrStaleEpoch):
		return toolErr("cursor_expired", "That cursor expired or is out of date: start again without it.")
	case errors.Is(err, cursor.ErrForeignGrant), errors.Is(err, cursor.ErrForeignExecution), errors.Is(err, cursor.ErrForeignSession):
		return toolErr("cursor_foreign", "That cursor belongs to another conversation or execution: start again without it.")
	case errors.Is(err, cursor.ErrWrongKind):
		return toolErr("cursor_wrong_kind", "That cursor belongs to another tool or listing.")
	case errors.Is(err, cursor.ErrMalformed), errors.Is(err, cursor.ErrTampered), errors.Is(err, cursor.ErrTooLong):
		return toolErr("cursor_invalid", "That cursor is not valid: pass a nextCursor exactly as returned, or none.")
	case errors.Is(err, commands.ErrCursorMismatch):
		return toolErr("cursor_invalid", "That cursor belongs to another command or mode.")
	case errors.Is(err, commands.ErrNotFound):
		return toolErr("process_not_found", "No such command in this conversation's open Project.")
	case errors.Is(err, commands.ErrOutputGone):
		return toolErr("process_not_found", "That command's output is no longer retained (it expired or its conversation closed).")
	case errors.Is(err, commands.ErrWorkingDirMissing):
		return toolErr("working_directory_invalid", "workingDirectory does not exist in the Project.")
	case errors.Is(err, commands.ErrWorkingDirNotDir):
		return toolErr("working_directory_invalid", "workingDirectory is not a directory.")
	case errors.Is(err, process.ErrSpawn):
		return notStarted(toolErr("command_spawn_failed", "The command could not be started (is the program installed and executable?)."))
	case errors.Is(err, process.ErrSandboxUnavailable):
		return notStarted(toolErr("sandbox_unavailable", "Commands are refused: this server's kernel offers no Landlock sandbox to confine them. The owner can enable Landlock (or, accepting the risk, set DEVSPACE_COMMAND_SANDBOX=off)."))
	case errors.Is(err, commands.ErrGrantShare), errors.Is(err, process.ErrTooMany):
		return toolErr("process_limit", fmt.Sprintf("This conversation's commands use their share of the slots (%d per Project and %d in all for its grant, %d per conversation); wait for one to finish or interrupt it.",
			commands.MaxPerGrantPerProject, commands.MaxPerGrant, process.DefaultMaxPerGroup), "project_control interrupt")
	case errors.Is(err, commands.ErrSlotsBusy), errors.Is(err, process.ErrAllBusy):
		return toolErr("process_slots_busy", "Other conversations' commands use every command slot of this Project or server; retry in a while.", "retry exec_command later")
	case errors.Is(err, diskguard.ErrDiskLow):
		return toolErr("disk_low", "The disk this would write to is almost full; DevSpace stopped the heaviest writer and refuses new commands and patches there until space is freed. Nothing was started or changed.",
			"retry later", "read_files and search still work")
	case errors.Is(err, process.ErrRevisionConflict):
		return toolErr("process_revision_conflict", "The command changed since expectedRevision; read its state and retry.", "read_process_output")
	case errors.Is(err, process.ErrStdinClosed), errors.Is(err, process.ErrNotRunning):
		return toolErr("process_not_running", "The command is not accepting input (it ended or its input is closed).")
	case errors.Is(err, process.ErrStdinFull):
		return toolErr("stdin_busy", "The command is not reading its input fast enough; retry shortly.")
	case errors.Is(err, process.ErrClosed):
		return toolErr("server_shutting_down", "DevSpace is shutting down; retry after it restarts.")
	// apply_patch and undo_patch (the edits service).
	case errors.As(err, &instructions):
		return instructionsRequired(instructions)
	case errors.Is(err, edits.ErrInvalidIfMatch):
		return invalidInput("each ifMatch value must be a version, a contentHash string or null")
	case errors.Is(err, edits.ErrIfMatchAmbiguous):
		return toolErr("if_match_ambiguous",
			"A single ifMatch value only works for a one-path patch; pass an object keyed by path.")
	case errors.As(err, &restore):
		e := toolErr("undo_conflict", "Files changed since that patch; nothing was undone. Edit them with apply_patch instead.", "show_changes")
		e.Details = map[string]any{"paths": restore.Paths()}
		return e
	case errors.Is(err, patch.ErrUndoConflict):
		return toolErr("undo_conflict", "Files changed since that patch; nothing was undone.", "show_changes")
	case errors.Is(err, undo.ErrNotFound):
		return toolErr("undo_not_found", "There is no patch of this conversation to undo (or redo).", "show_changes")
	case errors.Is(err, undo.ErrNotUndoable):
		return toolErr("undo_unavailable", "That patch cannot be undone ("+err.Error()+"); change the files with apply_patch instead.")
	case errors.Is(err, undo.ErrAlreadyUndone), errors.Is(err, undo.ErrNotUndone):
		return toolErr("undo_state_conflict", "That patch is already in the requested state ("+err.Error()+").")
	case errors.As(err, &conflict):
		return versionConflict(conflict)
	case errors.As(err, &missing):
		e := toolErr("if_match_required", "Every path the patch touches needs an ifMatch entry (its version from read_files, or null for a new file).", "read_files")
		e.Details = map[string]any{"paths": missing.Paths}
		return e
	case errors.Is(err, patch.ErrTooLarge):
		return toolErr("patch_too_large", "The patch is too large ("+err.Error()+"); split it.")
	case errors.As(err, &parse), errors.Is(err, patch.ErrInvalidPatch):
		return toolErr("invalid_patch", "The patch is not valid: "+err.Error()+".")
	case errors.Is(err, patch.ErrAmbiguous):
		// Before the *HunkError case: an ambiguous hunk is a *HunkError too.
		return toolErr("patch_ambiguous", "A hunk matches in more than one place: "+err.Error()+". Add more context lines or an @@ anchor.")
	case errors.As(err, &hunk), errors.Is(err, patch.ErrContextNotFound):
		return toolErr("patch_context_not_found", "A hunk's context was not found: "+err.Error()+". Read the file again and rebuild the hunk.", "read_files")
	case errors.Is(err, patch.ErrBinaryTarget):
		return toolErr("binary_target", "Binary or non-UTF-8 files cannot be patched.")
	case errors.Is(err, patch.ErrTargetMissing):
		return toolErr("patch_target_missing", "A file the patch updates or deletes does not exist: "+err.Error()+".")
	case errors.Is(err, store.ErrJournalFull):
		return toolErr("patch_journal_full", "This conversation's patch history is full; open the Project again (project_control open) to continue.", "project_control open")
	case errors.Is(err, patch.ErrRollbackIncomplete):
		e := toolErr("operation_outcome_unknown", "The patch failed and could not be rolled back completely; check the files before retrying with a new operationId.", "show_changes")
		e.Phase = "outcome_unknown"
		return e
	}
	if te := mapTaskOrReview(err); te != nil {
		return te
	}
	return toolErr("internal_error", "DevSpace hit an internal error; the server log has the details.")
}

// mapTaskOrReview maps the errors of save_progress (tasks) and
// show_changes (review); nil for any other error.
func mapTaskOrReview(err error) *ToolError {
	var re *tasks.RevisionError
	switch {
	case errors.Is(err, tasks.ErrInvalid):
		return invalidInput("%v", err)
	case errors.Is(err, tasks.ErrTooLarge):
		return toolErr("task_context_too_large", "The saved Task is too large ("+err.Error()+"); shorten it.")
	case errors.Is(err, tasks.ErrCapacity):
		return toolErr("project_task_capacity", "This Project already has 20 resumable Tasks; complete or finish one before saving another.")
	case errors.Is(err, tasks.ErrIfMatchUnexpected):
		return toolErr("if_match_unexpected", "This is the first save in this conversation: omit ifMatch.")
	case errors.As(err, &re) && errors.Is(err, tasks.ErrIfMatchRequired):
		e := toolErr("if_match_required", fmt.Sprintf("Pass ifMatch: %d (the Task's current revision) to update it.", re.Current))
		e.Details = map[string]any{"currentRevision": re.Current}
		return e
	case errors.As(err, &re):
		e := toolErr("project_task_revision_conflict",
			fmt.Sprintf("The Task changed (now revision %d); re-read it and retry with the same operationId and the new ifMatch.", re.Current))
		e.Details = map[string]any{"currentRevision": re.Current}
		return e
	case errors.Is(err, tasks.ErrNotActive):
		return toolErr("project_task_not_active", "This Task is no longer active in this conversation (it was resumed elsewhere or completed).")
	case errors.Is(err, gitrepo.ErrNotRepository), errors.Is(err, gitrepo.ErrNotTopLevel):
		return toolErr("repository_review_unavailable",
			"Repository review needs the Project root to be the top level of a Git repository; use source apply_patch_history instead.")
	case errors.Is(err, gitrepo.ErrUnsafeFilters):
		return toolErr("repository_review_unsafe",
			"This repository configures clean/smudge filters or textconv drivers that git would run; DevSpace does not run them, so repository review is refused.")
	case errors.Is(err, review.ErrTimeout):
		return toolErr("repository_review_timeout", "git took too long to review the changes; try again.")
	}
	return nil
}

// pathDenied is the path_denied envelope, with the reason the project
// package gave (the edge counts it: Server.invoke).
func pathDenied(err error) *ToolError {
	reason := "other"
	var pe *project.PathError
	if errors.As(err, &pe) {
		reason = pe.Reason
	}
	var te *ToolError
	if reason == project.ReasonRepository {
		te = toolErr("path_denied",
			"Repository metadata (.git) is not Project content: the file tools neither read nor write it; review Git state with show_changes.", "show_changes")
	} else {
		te = toolErr("path_denied", "That path is outside the Project or not allowed ("+reason+"); use a path relative to the Project root.")
	}
	te.Details = map[string]any{"reason": reason}
	return te
}

// notStarted marks an error whose effect never began.
func notStarted(te *ToolError) *ToolError {
	te.Phase = "not_started"
	return te
}

// instructionsRequired is the error for a patch under nested instruction
// files the execution has not seen (they are delivered in its details).
func instructionsRequired(e *edits.InstructionsRequiredError) *ToolError {
	te := toolErr("instructions_required",
		"Instructions apply to these paths that you have not seen; read them (details.instructionsDelta) and send the patch again.", "apply_patch")
	te.Details = map[string]any{"instructionsDelta": e.Delta}
	return te
}

// versionConflict is the error for an ifMatch that no longer holds; an
// expected or actual "" (must not exist, does not exist) is null.
func versionConflict(vc *patch.VersionConflict) *ToolError {
	e := toolErr("file_version_conflict",
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
}

// repositoryUnsafe is the error for a repository whose metadata points
// outside the Project or whose configuration means something else where
// Git would run (gitrepo.ErrRepositoryUnsafe): show_changes and managed
// worktrees run no Git there.
func repositoryUnsafe() *ToolError {
	return toolErr("repository_unsafe",
		"This repository's Git metadata points outside the Project or its configuration has a conditional include, so DevSpace runs no Git in it; use show_changes with source apply_patch_history, or open with checkoutKind checkout.",
		"show_changes apply_patch_history", "project_control open")
}

// errorResult renders a ToolError as a tool result (isError), with the
// insufficient_scope challenge in _meta when there is one.
func errorResult(te *ToolError) *mcp.CallToolResult {
	res := &mcp.CallToolResult{
		IsError:           true,
		Content:           []mcp.Content{&mcp.TextContent{Text: te.message}},
		StructuredContent: map[string]any{"error": te},
	}
	if te.wwwAuth != "" {
		res.Meta = mcp.Meta{"mcp/www_authenticate": []string{te.wwwAuth}}
	}
	return res
}
