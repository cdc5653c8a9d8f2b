package clientmeta

import "errors"

// Sentinels owned by this package. Every error returned by Fetch is an *Error
// whose Kind is one of them, so callers test with errors.Is.
var (
	// ErrInvalidClientID means the client_id is not an acceptable metadata
	// document URL (scheme, host, path, length, fragment, userinfo).
	ErrInvalidClientID = errors.New("invalid client metadata document URL")
	// ErrForbiddenAddress means the client_id host is, or resolves to, an
	// address that is not publicly routable. No connection was made.
	ErrForbiddenAddress = errors.New("client metadata document host is not allowed")
	// ErrFetch means the document could not be retrieved: connection or TLS
	// failure, timeout, cancellation, a redirect, or a status other than 200.
	ErrFetch = errors.New("client metadata document could not be fetched")
	// ErrTooLarge means the response body exceeded Options.MaxBytes.
	ErrTooLarge = errors.New("client metadata document is too large")
	// ErrInvalidDocument means the response is not an acceptable metadata
	// document: wrong content type, malformed JSON, client_id mismatch, bad
	// redirect URIs, or a confidential-client configuration.
	ErrInvalidDocument = errors.New("invalid client metadata document")
)

// Error is the concrete error returned by Fetch. Its message (Kind plus
// Reason) is safe to show to the OAuth client: it never contains resolved
// addresses or transport details. Cause keeps those for server logs only.
type Error struct {
	// Kind is one of the package sentinels.
	Kind error
	// Reason is a short client-safe detail; it may be empty.
	Reason string
	// Cause is the underlying error, if any. It may mention internal
	// addresses: log it, never return it to a client.
	Cause error
}

func (e *Error) Error() string {
	if e.Reason == "" {
		return e.Kind.Error()
	}
	return e.Kind.Error() + ": " + e.Reason
}

// Unwrap exposes both Kind and Cause to errors.Is and errors.As, so
// errors.Is(err, context.DeadlineExceeded) also works.
func (e *Error) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Cause}
}

func newError(kind error, reason string, cause error) *Error {
	return &Error{Kind: kind, Reason: reason, Cause: cause}
}
