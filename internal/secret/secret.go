// Package secret finds literal credentials in text that DevSpace would
// store durably, so that it can refuse to store it: commands (their text
// reaches operation records and logs) and saved Tasks. Detect recognizes
// the formats; Check turns a finding into the refusal, *Error, which says
// its code, secret_persistence_blocked. The package holds no
// state: there is nothing to construct and nothing to forget to pass.
package secret

// Error refuses a write because Field holds a literal credential of Kind
// (one of Detect's kinds). It never holds the credential itself, so its
// text, which names the kind and the field, is what the client is told.
// The package that finds the credential returns it (this one, through
// Check); the service that refuses the write says it did not start.
type Error struct {
	Field string // the caller's name of the text, such as "progress" or "args"
	Kind  string
}

func (e *Error) Error() string { return "credential (" + e.Kind + " in " + e.Field + ")" }

// Code is secret_persistence_blocked.
func (e *Error) Code() string { return "secret_persistence_blocked" }

// Check returns an *Error naming field when text holds a literal
// credential (Detect), and nil otherwise. Safe for concurrent use.
func Check(field, text string) error {
	if kind, found := Detect(text); found {
		return &Error{Field: field, Kind: kind}
	}
	return nil
}
