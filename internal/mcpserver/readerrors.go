package mcpserver

import (
	"errors"

	"github.com/devspace-dev/devspace/internal/reads"
)

// mapReadError is the envelope of a read service error, or nil.
func mapReadError(err error) *ToolError {
	var input *reads.InputError
	switch {
	case errors.As(err, &input):
		return invalidInput("%v", input.Err)
	case errors.Is(err, reads.ErrSkillNotFound):
		return toolErr("skill_not_found", "No loadable skill with that skillId; search again.", "skills")
	case errors.Is(err, reads.ErrCursorOtherQuery):
		return toolErr("cursor_invalid", "That cursor belongs to another query: repeat the same query with it.")
	case errors.Is(err, reads.ErrCursorOtherSource):
		return toolErr("cursor_invalid", "That cursor belongs to the other source.")
	case errors.Is(err, reads.ErrCursorPastEnd):
		return toolErr("cursor_invalid", "That cursor is past the end of the changes.")
	case errors.Is(err, reads.ErrChangesMoved):
		return toolErr("diff_cursor_stale", "The changes moved since that page; start again without a cursor.", "show_changes")
	}
	return nil
}
