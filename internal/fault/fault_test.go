package fault_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/devspace-dev/devspace/internal/fault"
)

var (
	errTooLarge   = fault.New("patch_too_large", "patch too large")
	errNotFound   = fault.New("process_not_found", "no such command")
	errNotStarted = fault.Mark(fault.NotStarted, "operation not started")
	errUnknown    = fault.New("operation_outcome_unknown", "operation outcome unknown").In(fault.OutcomeUnknown)
)

// typed is an error type that says its code with a method, as
// *secret.Error does; a "" code says none.
type typed struct{ code string }

func (e *typed) Error() string { return "typed " + e.code }
func (e *typed) Code() string  { return e.code }

// TestCodeAndPhase: the outermost code and the outermost phase of a
// tree, each found on its own, in the order errors.As walks a tree; the
// text is that of the coded error as wrapped where it arose, without the
// joins that only mark it.
func TestCodeAndPhase(t *testing.T) {
	plain := errors.New("disk I/O error")
	tests := []struct {
		name      string
		err       error
		code      string
		phase     fault.Phase
		text      string
		isTooBig  bool
		isUnknown bool
	}{
		{name: "nil"},
		{name: "no code", err: fmt.Errorf("save: %w", plain)},
		{name: "sentinel", err: errTooLarge, code: "patch_too_large", text: "patch too large", isTooBig: true},
		{name: "detail kept", err: fmt.Errorf("%w: 1001 files, limit 1000", errTooLarge),
			code: "patch_too_large", text: "patch too large: 1001 files, limit 1000", isTooBig: true},
		{name: "not started join left out", err: fmt.Errorf("%w: %w", errNotStarted, fmt.Errorf("%w: 5 MiB", errTooLarge)),
			code: "patch_too_large", phase: fault.NotStarted, text: "patch too large: 5 MiB", isTooBig: true},
		{name: "cause first, then the outcome", err: fmt.Errorf("%w: %w", errNotFound, errUnknown),
			code: "process_not_found", phase: fault.OutcomeUnknown, text: "no such command", isUnknown: true},
		{name: "uncoded cause, the outcome's code", err: fmt.Errorf("%w: %w", plain, errUnknown),
			code: "operation_outcome_unknown", phase: fault.OutcomeUnknown, text: "operation outcome unknown", isUnknown: true},
		{name: "typed", err: fmt.Errorf("check: %w", &typed{"secret_persistence_blocked"}),
			code: "secret_persistence_blocked", text: "check: typed secret_persistence_blocked"},
		{name: "empty code passes", err: fmt.Errorf("%w: %w", &typed{}, errTooLarge),
			code: "patch_too_large", text: "patch too large", isTooBig: true},
		{name: "join order decides", err: errors.Join(errTooLarge, errNotFound),
			code: "patch_too_large", text: "patch too large", isTooBig: true},
		{name: "outer phase wins", err: fmt.Errorf("%w: %w", errNotStarted, fmt.Errorf("%w: %w", plain, errUnknown)),
			code: "operation_outcome_unknown", phase: fault.NotStarted, text: "operation outcome unknown", isUnknown: true},
		{name: "phase only", err: fmt.Errorf("%w: %w", errNotStarted, plain), phase: fault.NotStarted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, ok := fault.CodeOf(tt.err)
			if code != tt.code || ok != (tt.code != "") {
				t.Errorf("CodeOf = %q, %v; want %q", code, ok, tt.code)
			}
			phase, ok := fault.PhaseOf(tt.err)
			if phase != tt.phase || ok != (tt.phase != "") {
				t.Errorf("PhaseOf = %q, %v; want %q", phase, ok, tt.phase)
			}
			if got := fault.Text(tt.err); got != tt.text {
				t.Errorf("Text = %q; want %q", got, tt.text)
			}
			if errors.Is(tt.err, errTooLarge) != tt.isTooBig || errors.Is(tt.err, errUnknown) != tt.isUnknown {
				t.Errorf("errors.Is: too large %v, unknown %v", errors.Is(tt.err, errTooLarge), errors.Is(tt.err, errUnknown))
			}
		})
	}
}

// TestIn: In makes a new sentinel; the one it came from is unchanged and
// is not the new one.
func TestIn(t *testing.T) {
	base := fault.New("operation_outcome_unknown", "operation outcome unknown")
	marked := base.In(fault.OutcomeUnknown)
	if base.Phase() != "" || marked.Phase() != fault.OutcomeUnknown || marked.Code() != base.Code() || marked.Error() != base.Error() {
		t.Errorf("base %q/%q, marked %q/%q", base.Code(), base.Phase(), marked.Code(), marked.Phase())
	}
	if errors.Is(marked, base) {
		t.Error("the marked sentinel is the base one")
	}
}
