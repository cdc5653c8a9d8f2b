// Package fault lets an error say which tool error code it is and, when
// it ends an operation, how far that operation got (docs/design.md §8).
// The package that detects a condition declares its sentinel with the
// code (New) or gives its error type a Code method; the edge finds the
// code with CodeOf and looks it up in its one table, and finds the phase
// with PhaseOf. Nothing here knows a code's category, message or next
// actions: those live at the edge (internal/mcpserver/codes.go).
//
// It imports nothing of DevSpace's, so every package may use it.
package fault

// Phase is how far a failed operation got, as its operationId's record
// says: what a retry with the same operationId will answer.
type Phase string

// The phases an error can say. A committed operation answers its result,
// never an error, so there is no committed phase here.
const (
	// NotStarted: the operation changed nothing and its operationId was
	// released; a retry with it runs the operation again.
	NotStarted Phase = "not_started"
	// OutcomeUnknown: the operation may have changed something (it failed
	// part way, its result could not be recorded, or the server stopped
	// while it ran); its record says so, and a retry with the same
	// operationId answers operation_outcome_unknown.
	OutcomeUnknown Phase = "outcome_unknown"
)

// Error is a sentinel error that says a code, a phase or both. Test for
// one with errors.Is. An Error is immutable and safe for concurrent use.
type Error struct {
	code  string
	phase Phase
	text  string
}

// New returns a sentinel error with text that says code, one of the codes
// of docs/errors.md.
func New(code, text string) *Error { return &Error{code: code, text: text} }

// Mark returns a sentinel error with text that says phase p and no code:
// an error wrapping it keeps the code of what else it wraps.
func Mark(p Phase, text string) *Error { return &Error{phase: p, text: text} }

// In returns a new sentinel with e's code and text that also says phase
// p; e itself is unchanged.
func (e *Error) In(p Phase) *Error { return &Error{code: e.code, phase: p, text: e.text} }

func (e *Error) Error() string { return e.text }

// Code returns the code e says, or "" if it says none.
func (e *Error) Code() string { return e.code }

// Phase returns the phase e says, or "" if it says none.
func (e *Error) Phase() Phase { return e.phase }

// CodeOf returns the code of the outermost error in err's tree that says
// one: an error with a Code() string method returning anything but "".
// Outermost is the first such error in the order errors.As visits a tree:
// each error before the errors it wraps, several wrapped errors (a
// fmt.Errorf with several %w, errors.Join) in their order. So where a
// chain holds two coded errors, the one its wrapping puts first decides.
// ok is false when no error in the tree says a code.
func CodeOf(err error) (code string, ok bool) {
	f := find(err, coded)
	if f == nil {
		return "", false
	}
	return f.(interface{ Code() string }).Code(), true
}

// PhaseOf returns the phase of the outermost error in err's tree (in
// CodeOf's order) that says one: an error with a Phase() Phase method
// returning anything but "". ok is false when none does.
func PhaseOf(err error) (p Phase, ok bool) {
	f := find(err, phased)
	if f == nil {
		return "", false
	}
	return f.(interface{ Phase() Phase }).Phase(), true
}

// Text returns the text of the error that says err's code, as it was
// wrapped where it arose: the outermost error on the way to it that does
// not join several errors. Joins only mark an error (idempotency's phase
// sentinels, an operation whose outcome is unknown), so their other
// branches and their own words are left out, while a fmt.Errorf("%w: …")
// that adds detail to a sentinel, or a typed error wrapping one, is kept.
// It is "" when no error in the tree says a code.
func Text(err error) string {
	for err != nil {
		j, ok := err.(interface{ Unwrap() []error })
		if !ok {
			if find(err, coded) == nil {
				return ""
			}
			return err.Error()
		}
		next := error(nil)
		for _, e := range j.Unwrap() {
			if find(e, coded) != nil {
				next = e
				break
			}
		}
		err = next
	}
	return ""
}

func coded(err error) bool {
	c, ok := err.(interface{ Code() string })
	return ok && c.Code() != ""
}

func phased(err error) bool {
	p, ok := err.(interface{ Phase() Phase })
	return ok && p.Phase() != ""
}

// find returns the first error of err's tree, in errors.As order, that
// match holds for, or nil.
func find(err error, match func(error) bool) error {
	for err != nil {
		if match(err) {
			return err
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if f := find(e, match); f != nil {
					return f
				}
			}
			return nil
		default:
			return nil
		}
	}
	return nil
}
