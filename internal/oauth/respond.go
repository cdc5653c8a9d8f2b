package oauth

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"

	oauth2errors "github.com/go-oauth2/oauth2/v4/errors"
)

// oauthError is the one shape of every OAuth error this package answers:
// the JSON body of the token, revocation and registration endpoints
// (RFC 6749 §5.2, RFC 7009 §2.2.1, RFC 7591 §3.2.2), the error and
// error_description of an authorization redirect (RFC 6749 §4.1.2.1), and
// the HTML error page shown when redirecting would be unsafe (description
// is then a sentence for the owner).
type oauthError struct {
	// code is the error code: for the codes RFC 6749 defines, go-oauth2's
	// sentinel (oauth2errors), which owns their names; for later RFCs',
	// one of ours below. Its text is the wire value.
	code        error
	description string // says which check failed; empty omits it
	status      int    // 0 means the status code implies (httpStatus)
}

// Error codes of RFCs after RFC 6749, which go-oauth2's errors package does
// not define.
var (
	errInvalidTarget         = errors.New("invalid_target")          // RFC 8707 §2
	errInvalidRedirectURI    = errors.New("invalid_redirect_uri")    // RFC 7591 §3.2.2
	errInvalidClientMetadata = errors.New("invalid_client_metadata") // RFC 7591 §3.2.2
)

// oauthErr returns an error with code's usual status. code is one of
// go-oauth2's RFC 6749 sentinels or one of the codes above.
func oauthErr(code error, description string) *oauthError {
	return &oauthError{code: code, description: description}
}

// withStatus returns a copy of e answered with status instead.
func (e *oauthError) withStatus(status int) *oauthError {
	c := *e
	c.status = status
	return &c
}

func (e *oauthError) Error() string { return e.code.Error() + ": " + e.description }

// MarshalJSON writes e as the error body of RFC 6749 §5.2.
func (e *oauthError) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Code        string `json:"error"`
		Description string `json:"error_description,omitempty"`
	}{e.code.Error(), e.description})
}

// httpStatus is RFC 6749 §5.2's: 400 for everything but invalid_client,
// which is 401; server_error and temporarily_unavailable, which a redirect
// cannot carry as a status, are 500 and 503 where there is no redirect.
// (go-oauth2's errors.StatusCodes is not used: it answers invalid_grant,
// unsupported_grant_type and unauthorized_client with 401.)
func (e *oauthError) httpStatus() int {
	if e.status != 0 {
		return e.status
	}
	switch e.code {
	case oauth2errors.ErrInvalidClient:
		return http.StatusUnauthorized
	case oauth2errors.ErrServerError:
		return http.StatusInternalServerError
	case oauth2errors.ErrTemporarilyUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusBadRequest
}

// errBodyTimeout is returned when the request body did not arrive before
// httpserver's body deadline (which matches os.ErrDeadlineExceeded); it is
// answered 408 and the connection is closed, the rest of the body is not
// worth waiting for.
var errBodyTimeout = oauthErr(oauth2errors.ErrInvalidRequest, "the request body did not arrive in time").withStatus(http.StatusRequestTimeout)

// bodyError is errBodyTimeout when err is a body timeout, else onOther.
func bodyError(err error, onOther *oauthError) *oauthError {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return errBodyTimeout
	}
	return onOther
}

// writeError writes e as JSON. A client that tried HTTP authentication and
// failed gets the Basic challenge RFC 6749 §5.2 requires with a 401.
func writeError(w http.ResponseWriter, r *http.Request, e *oauthError) {
	if e.code == oauth2errors.ErrInvalidClient && r.Header.Get("Authorization") != "" {
		w.Header().Set("WWW-Authenticate", `Basic realm="devspace"`)
	}
	if e == errBodyTimeout {
		w.Header().Set("Connection", "close")
	}
	writeJSON(w, e.httpStatus(), e)
}

// writeJSON writes v with status and no-store caching (every OAuth
// response may carry or describe credentials).
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
