package oauth

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
)

// oauthError is the one shape of every OAuth error this package answers:
// the JSON body of the token, revocation and registration endpoints
// (RFC 6749 §5.2, RFC 7009 §2.2.1, RFC 7591 §3.2.2), the error and
// error_description of an authorization redirect (RFC 6749 §4.1.2.1), and
// the HTML error page shown when redirecting would be unsafe (Description
// is then a sentence for the owner).
type oauthError struct {
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
	status      int    // 0 means the status Code implies (httpStatus)
}

// oauthErr returns an error with code's usual status.
func oauthErr(code, description string) *oauthError {
	return &oauthError{Code: code, Description: description}
}

// withStatus returns a copy of e answered with status instead.
func (e *oauthError) withStatus(status int) *oauthError {
	c := *e
	c.status = status
	return &c
}

func (e *oauthError) Error() string { return e.Code + ": " + e.Description }

// httpStatus is RFC 6749 §5.2's: 400 for everything but invalid_client,
// which is 401; server_error and temporarily_unavailable, which a redirect
// cannot carry as a status, are 500 and 503 where there is no redirect.
func (e *oauthError) httpStatus() int {
	if e.status != 0 {
		return e.status
	}
	switch e.Code {
	case "invalid_client":
		return http.StatusUnauthorized
	case "server_error":
		return http.StatusInternalServerError
	case "temporarily_unavailable":
		return http.StatusServiceUnavailable
	}
	return http.StatusBadRequest
}

// errBodyTimeout is returned when the request body did not arrive before
// httpserver's body deadline (which matches os.ErrDeadlineExceeded); it is
// answered 408 and the connection is closed, the rest of the body is not
// worth waiting for.
var errBodyTimeout = oauthErr("invalid_request", "the request body did not arrive in time").withStatus(http.StatusRequestTimeout)

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
	if e.Code == "invalid_client" && r.Header.Get("Authorization") != "" {
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
