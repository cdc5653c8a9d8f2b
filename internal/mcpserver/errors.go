package mcpserver

import (
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/fault"
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
	cause   error  // the domain error mapped here, for the log; never shown
}

func (e *ToolError) Error() string { return e.Code + ": " + e.message }

// toolErr builds the envelope of code (one of codes, which gives its
// category; a transient error is retryable) with its guidance sentence
// and next actions.
func toolErr(code, message string, next ...string) *ToolError {
	c, ok := codes[code]
	if !ok {
		panic("mcpserver: error code " + code + " is not in codes (nor in docs/errors.md)")
	}
	if next == nil {
		next = []string{}
	}
	return &ToolError{Code: code, Category: c.category, Retryable: c.category == catTransient, message: message, NextActions: next}
}

// invalidInput is the error for arguments that fail decoding or validation.
func invalidInput(format string, a ...any) *ToolError {
	return toolErr("invalid_tool_input", fmt.Sprintf(format, a...), "fix the arguments and call again")
}

// detailer is a domain error with details for the envelope: a conflicting
// file's versions, the paths without ifMatch, a Task's revision.
type detailer interface {
	error
	Details() map[string]any
}

// mapError turns an error into the envelope; this is the one place that
// does. An envelope already made (a *ToolError in the chain) is returned
// as is. Otherwise the error's code (fault.CodeOf: the outermost error
// that says one) is looked up in codes, once; an error that says no code
// listed there — a bug, a store or filesystem failure, a context's error
// — is internal_error, its cause kept for the log and never shown. The
// phase is the chain's (fault.PhaseOf: idempotency.ErrNotStarted, or
// idempotency.ErrOutcomeUnknown when the operation's record says unknown),
// and absent when the chain says none.
func mapError(err error) *ToolError {
	var te *ToolError
	if errors.As(err, &te) {
		return te
	}
	name, ok := fault.CodeOf(err)
	c, listed := codes[name]
	if !ok || !listed || c.message == "" && c.render == nil {
		name, c = "internal_error", codes["internal_error"]
	}
	te = toolErr(name, c.message, c.next...)
	te.cause = err
	if p, ok := fault.PhaseOf(err); ok {
		te.Phase = string(p)
	}
	if name == "internal_error" {
		return te
	}
	if d, ok := errors.AsType[detailer](err); ok {
		te.Details = d.Details()
	}
	if c.render != nil {
		c.render(te, fault.Text(err))
	}
	return te
}

// operationError is the envelope of a failed call of a tool with an
// operationId: mapError's, which says the phase the operation's record
// does, naming the operationId.
func operationError(operationID string, err error) *ToolError {
	te := mapError(err)
	te.OperationID = operationID
	return te
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
