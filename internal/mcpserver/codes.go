package mcpserver

import "fmt"

// code is what the edge knows of one error code (docs/errors.md): its
// category (a transient code is the one kind a client may retry as is),
// and what a domain error that says the code is answered with — its
// guidance sentence and next actions, and for a few codes a render that
// completes them from what the error says. A code only the edge builds
// (toolErr with its own sentence) has only a category.
type code struct {
	category string
	message  string
	next     []string
	// render, when set, completes the envelope of a domain error from
	// text, the words of the error that says the code (fault.Text), and
	// te.Details (the error's Details). The codes that quote text are
	// those whose errors are written to be shown: where a patch fails,
	// which limit was passed, what credential was found where.
	render func(te *ToolError, text string)
}

// codes is every error code a tool returns: the one table, kept equal to
// docs/errors.md by TestErrorCodesDocumented. mapError looks a domain
// error's code up here once; toolErr takes a category from here.
var codes = map[string]code{
	"invalid_tool_input": {category: catInput, next: []string{"fix the arguments and call again"},
		render: func(te *ToolError, text string) { te.message = text }},
	"insufficient_scope":        {category: catScope},
	"session_identity_required": {category: catInput},
	"project_execution_required": {category: catState,
		message: "No open Project in this conversation: call project_control with action open (or hydrate after a reconnect).",
		next:    []string{"project_control open", "project_control hydrate"}},
	"project_not_authorized": {category: catScope,
		message: "That projectRef is not one of this connection's Projects: call list_projects for the ones you can use.",
		next:    []string{"list_projects"}},
	"project_ref_required": {category: catInput,
		message: "This connection has several Projects: pass projectRef (from list_projects).", next: []string{"list_projects"}},
	"root_instructions_required": {category: catState,
		message: "Read the remaining root instruction pages first: call project_control hydrate with the nextCursor you were given.",
		next:    []string{"project_control hydrate"}},
	"project_unavailable": {category: catTransient, message: "The Project directory cannot be read right now; try again later."},
	"project_task_not_found": {category: catState,
		message: "No saved Task with that taskRef is available to this connection.", next: []string{"list_projects"}},
	"operation_id_conflict": {category: catConflict,
		message: "This operationId was already used for a different request: use a new operationId.",
		next:    []string{"retry with a new operationId"}},
	"operation_outcome_unknown": {category: catState,
		message: "The outcome of this operation is unknown (it failed part way, its result could not be recorded, or the server stopped while it ran); check the Project before retrying with a new operationId.",
		next:    []string{"show_changes"}},
	"cursor_invalid": {category: catInput, render: func(te *ToolError, text string) {
		te.message = "That cursor is not valid (" + text + "): pass a nextCursor exactly as the same call returned it, or none."
	}},
	"cursor_expired":    {category: catState, message: "That cursor expired or is out of date: start again without it."},
	"cursor_foreign":    {category: catInput, message: "That cursor belongs to another conversation or execution: start again without it."},
	"cursor_wrong_kind": {category: catInput, message: "That cursor belongs to another tool or listing."},
	"path_denied":       {category: catSafety, render: pathDenied},
	"project_busy": {category: catTransient,
		message: "The Project is busy: a patch is committing or commands are running (a Thread closes only when its own have ended); wait, or interrupt the commands, then retry.",
		next:    []string{"retry shortly", "project_control interrupt"}},
	"instructions_required": {category: catState,
		message: "Instructions apply to these paths that you have not seen; read them (details.instructionsDelta) and send the patch again.",
		next:    []string{"apply_patch"}},
	"if_match_required": {category: catInput,
		message: "Every path the patch touches needs an ifMatch entry (its version from read_files, or null for a new file).",
		next:    []string{"read_files"}, render: ifMatchRequired},
	"if_match_ambiguous": {category: catInput,
		message: "A single ifMatch value only works for a one-path patch; pass an object keyed by path."},
	"if_match_unexpected": {category: catInput, message: "This is the first save in this conversation: omit ifMatch."},
	"file_version_conflict": {category: catConflict,
		message: "A file changed since you read it: read it again and rebuild the patch with its new version.", next: []string{"read_files"}},
	"invalid_patch": {category: catInput, render: func(te *ToolError, text string) { te.message = "The patch is not valid: " + text + "." }},
	"patch_too_large": {category: catLimit, render: func(te *ToolError, text string) {
		te.message = "The patch is too large (" + text + "); split it."
	}},
	"patch_context_not_found": {category: catInput, next: []string{"read_files"}, render: func(te *ToolError, text string) {
		te.message = "A hunk's context was not found: " + text + ". Read the file again and rebuild the hunk."
	}},
	"patch_ambiguous": {category: catInput, render: func(te *ToolError, text string) {
		te.message = "A hunk matches in more than one place: " + text + ". Add more context lines or an @@ anchor."
	}},
	"patch_target_missing": {category: catInput, render: func(te *ToolError, text string) {
		te.message = "A file the patch updates or deletes does not exist: " + text + "."
	}},
	"binary_target": {category: catInput, message: "Binary or non-UTF-8 files cannot be patched."},
	"patch_journal_full": {category: catLimit,
		message: "This conversation's patch history is full; open the Project again (project_control open) to continue.",
		next:    []string{"project_control open"}},
	"repository_review_unavailable": {category: catState,
		message: "Repository review needs the Project root to be the top level of a Git repository; use source apply_patch_history instead."},
	"repository_review_unsafe": {category: catSafety,
		message: "This repository configures clean/smudge filters or textconv drivers that git would run; DevSpace does not run them, so repository review is refused."},
	"repository_unsafe": {category: catSafety,
		message: "This repository's Git metadata points outside the Project or its configuration has a conditional include, so DevSpace runs no Git in it; use show_changes with source apply_patch_history, or open with checkoutKind checkout.",
		next:    []string{"show_changes apply_patch_history", "project_control open"}},
	"repository_review_timeout": {category: catTransient, message: "git took too long to review the changes; try again."},
	"diff_cursor_stale": {category: catState,
		message: "The changes moved since that page; start again without a cursor.", next: []string{"show_changes"}},
	"skill_not_found": {category: catInput, message: "No loadable skill with that skillId; search again.", next: []string{"skills"}},
	"task_context_too_large": {category: catLimit, render: func(te *ToolError, text string) {
		te.message = "The saved Task is too large (" + text + "); shorten it."
	}},
	"project_task_capacity": {category: catLimit,
		message: "This Project already has 20 resumable Tasks; complete or finish one before saving another."},
	"project_task_revision_conflict": {category: catConflict, render: func(te *ToolError, _ string) {
		te.message = fmt.Sprintf("The Task changed (now revision %v); re-read it and retry with the same operationId and the new ifMatch.",
			te.Details["currentRevision"])
	}},
	"project_task_not_active": {category: catState,
		message: "This Task is no longer active in this conversation (it was resumed elsewhere or completed)."},
	"project_thread_not_found": {category: catState, message: "No such Thread for this connection and user."},
	"thread_revision_conflict": {category: catConflict,
		message: "The Thread changed; read its status and retry with the new revision.", next: []string{"project_thread_control status"}},
	"secret_persistence_blocked": {category: catSafety, render: func(te *ToolError, text string) {
		te.message = "This looks like a " + text + "; nothing was run or saved. Remove it and call again: a command should read a secret from a file, not carry it in its text."
	}},
	"command_mode_invalid": {category: catInput, render: func(te *ToolError, text string) { te.message = text }},
	"command_spawn_failed": {category: catInput, message: "The command could not be started (is the program installed and executable?)."},
	"working_directory_invalid": {category: catInput,
		message: "workingDirectory must be an existing directory of the Project."},
	"stdin_too_large": {category: catLimit, render: func(te *ToolError, text string) { te.message = text }},
	"process_not_found": {category: catState,
		message: "No such command in this conversation's open Project, or its output is no longer retained (it expired or its conversation closed)."},
	"process_not_running": {category: catState, message: "The command is not accepting input (it ended or its input is closed)."},
	"process_revision_conflict": {category: catConflict,
		message: "The command changed since expectedRevision; read its state and retry.", next: []string{"read_process_output"}},
	// The shares are commands.MaxPerGrantPerProject, commands.MaxPerGrant
	// and process.DefaultMaxPerGroup (TestProcessLimitMessage).
	"process_limit": {category: catLimit,
		message: "This conversation's commands use their share of the slots (4 per Project and 16 in all for its grant, 8 per conversation); wait for one to finish or interrupt it.",
		next:    []string{"project_control interrupt"}},
	"process_slots_busy": {category: catTransient,
		message: "Other conversations' commands use every command slot of this Project or server; retry in a while.",
		next:    []string{"retry exec_command later"}},
	"disk_low": {category: catTransient,
		message: "The disk this would write to is almost full; DevSpace stopped the heaviest writer and refuses new commands and patches there until space is freed. Nothing was started or changed.",
		next:    []string{"retry later", "read_files and search still work"}},
	"stdin_busy":           {category: catTransient, message: "The command is not reading its input fast enough; retry shortly."},
	"server_shutting_down": {category: catTransient, message: "DevSpace is shutting down; retry after it restarts."},
	"project_write_scope_required": {category: catScope,
		message: "A managed worktree needs project:write; open with checkoutKind checkout or reconnect the app to grant it."},
	"project_worktree_unavailable": {category: catState,
		message: "This Project cannot host a managed worktree (its root must be exactly a Git top level with at least one commit and no executable filters); open with checkoutKind checkout."},
	"project_worktree_dirty": {category: catState,
		message: "The worktree has uncommitted changes; commit or discard them before closing the Thread."},
	"undo_conflict": {category: catConflict,
		message: "Files changed since that patch; nothing was undone. Edit them with apply_patch instead.", next: []string{"show_changes"}},
	"undo_not_found": {category: catState,
		message: "There is no patch of this conversation to undo (or redo).", next: []string{"show_changes"}},
	"undo_unavailable": {category: catState, render: func(te *ToolError, text string) {
		te.message = "That patch cannot be undone (" + text + "); change the files with apply_patch instead."
	}},
	"undo_state_conflict": {category: catConflict, render: func(te *ToolError, text string) {
		te.message = "That patch is already in the requested state (" + text + ")."
	}},
	"internal_error": {category: catInternal, message: "DevSpace hit an internal error; the server log has the details."},
	"sandbox_unavailable": {category: catSafety,
		message: "Commands are refused: this server's kernel offers no Landlock sandbox to confine them. The owner can enable Landlock (or, accepting the risk, set DEVSPACE_COMMAND_SANDBOX=off)."},
}

// pathDenied completes path_denied with its reason (details.reason; the
// edge counts it: Server.invoke), "other" when the error gives none.
func pathDenied(te *ToolError, _ string) {
	reason, _ := te.Details["reason"].(string)
	if reason == "" {
		reason = "other"
	}
	te.Details = map[string]any{"reason": reason}
	if reason == "repository_metadata" {
		te.message = "Repository metadata (.git) is not Project content: the file tools neither read nor write it; review Git state with show_changes."
		te.NextActions = []string{"show_changes"}
		return
	}
	te.message = "That path is outside the Project or not allowed (" + reason + "); use a path relative to the Project root."
}

// ifMatchRequired completes if_match_required for a saved Task, which
// names the revision to pass (details.currentRevision); a patch keeps the
// table's sentence.
func ifMatchRequired(te *ToolError, _ string) {
	if rev, ok := te.Details["currentRevision"]; ok {
		te.message = fmt.Sprintf("Pass ifMatch: %v (the Task's current revision) to update it.", rev)
		te.NextActions = []string{}
	}
}
