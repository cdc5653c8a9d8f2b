package idempotency

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/devspace-dev/devspace/internal/fault"
	"github.com/devspace-dev/devspace/internal/store"
)

// MaxIDBytes bounds an operationId in bytes (not runes).
const MaxIDBytes = store.MaxOperationIDBytes

// ErrInvalidID is wrapped by every operationId validation failure
// (invalid_tool_input). The wrapping error's text ("invalid operationId:
// …") is a client-safe reason, which the edge shows, and never echoes the
// ID.
var ErrInvalidID = fault.New("invalid_tool_input", "invalid operationId")

func invalid(reason string) error { return fmt.Errorf("%w: %s", ErrInvalidID, reason) }

// ValidateID checks an operationId as exact bytes: non-empty, at most
// MaxIDBytes bytes, well-formed UTF-8 and free of NUL. It never trims or
// normalizes: " a", "a" and "a " are three different IDs, and so are the
// NFC and NFD spellings of one text.
//
// A decoded Go string cannot show whether the client sent a lone surrogate:
// encoding/json turns "\ud800" (and any invalid UTF-8 byte) into U+FFFD,
// which is itself a valid character. The MCP edge's strictjson.Check
// refuses both in the raw arguments before they are decoded.
func ValidateID(id string) error {
	switch {
	case id == "":
		return invalid("must not be empty")
	case len(id) > MaxIDBytes:
		return invalid(fmt.Sprintf("must be at most %d bytes of UTF-8", MaxIDBytes))
	case !utf8.ValidString(id):
		return invalid("must be well-formed UTF-8")
	case strings.IndexByte(id, 0) >= 0:
		return invalid("must not contain NUL")
	}
	return nil
}
