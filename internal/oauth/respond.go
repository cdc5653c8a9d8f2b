package oauth

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
)

// errBodyTimeout is returned by readForm after bodyTimedOut answered.
var errBodyTimeout = &protocolError{"invalid_request", "the request body timed out"}

// bodyTimedOut answers 408 and reports true when err is a request-body
// timeout (httpserver's body deadline matches os.ErrDeadlineExceeded). The
// connection is closed: the rest of the body is not worth waiting for.
func bodyTimedOut(w http.ResponseWriter, err error) bool {
	if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	w.Header().Set("Connection", "close")
	writeJSON(w, http.StatusRequestTimeout, protocolError{Code: "invalid_request", Description: "the request body did not arrive in time"})
	return true
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

// protocolError is an RFC 6749 §5.2 / RFC 7591 §3.2.2 error body.
type protocolError struct {
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// writeError writes an OAuth error. RFC 6749 §5.2: 400 for everything but
// invalid_client, which is 401 (with a Basic challenge when the client tried
// HTTP Basic).
func writeError(w http.ResponseWriter, code, description string) {
	status := http.StatusBadRequest
	switch code {
	case "invalid_client":
		status = http.StatusUnauthorized
	case "server_error":
		status = http.StatusInternalServerError
	case "temporarily_unavailable":
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, protocolError{Code: code, Description: description})
}
