package operation

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/devspace-dev/devspace/internal/store"
)

// MaxIDBytes bounds an operationId in bytes (not runes).
const MaxIDBytes = store.MaxOperationIDBytes

// ErrInvalidID is wrapped by every operationId validation failure. The
// wrapping error's text after the sentinel ("invalid operationId: …") is a
// client-safe reason and never echoes the ID. The MCP edge maps it to
// invalid_tool_input.
var ErrInvalidID = errors.New("invalid operationId")

func invalid(reason string) error { return fmt.Errorf("%w: %s", ErrInvalidID, reason) }

// ValidateID checks an operationId as exact bytes: non-empty, at most
// MaxIDBytes bytes, well-formed UTF-8 and free of NUL. It never trims or
// normalizes: " a", "a" and "a " are three different IDs, and so are the
// NFC and NFD spellings of one text.
//
// A decoded Go string cannot show whether the client sent a lone surrogate:
// encoding/json turns "\ud800" (and any invalid UTF-8 byte) into U+FFFD,
// which is itself a valid character. Callers that decode JSON must also run
// ValidateRawJSONString on the raw token.
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

// ValidateRawJSONString validates an operationId as the client wrote it:
// raw is the JSON string token including its quotes, exactly as it appeared
// in the request. It rejects what decoding would hide — \u escapes of lone
// surrogates (high without a following low, or a low alone), \u0000, and
// invalid UTF-8 bytes, all of which encoding/json silently accepts or
// replaces with U+FFFD — as well as malformed tokens, then decodes the
// token and applies ValidateID.
//
// The MCP edge gets the raw token by decoding the tool arguments into
// map[string]json.RawMessage (or a struct with a json.RawMessage field):
// encoding/json copies each value's bytes verbatim into a RawMessage,
// escapes included. Only then may it decode the typed input.
func ValidateRawJSONString(raw []byte) error {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return invalid("must be a JSON string")
	}
	if !utf8.Valid(raw) {
		return invalid("must be well-formed UTF-8")
	}
	body := raw[1 : len(raw)-1]
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c == '"':
			return invalid("must be a JSON string")
		case c < 0x20:
			return invalid("must not contain control characters")
		case c != '\\':
			continue
		}
		i++
		if i >= len(body) {
			return invalid("must be a JSON string")
		}
		switch body[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			continue
		case 'u':
		default:
			return invalid("must be a JSON string")
		}
		r, ok := hex4(body[i+1:])
		if !ok {
			return invalid("must be a JSON string")
		}
		i += 4
		switch {
		case r == 0:
			return invalid("must not contain NUL")
		case 0xDC00 <= r && r <= 0xDFFF:
			return invalid("must not contain a lone surrogate")
		case 0xD800 <= r && r <= 0xDBFF:
			// A high surrogate must be followed at once by an escaped low one.
			rest := body[i+1:]
			if len(rest) < 6 || rest[0] != '\\' || rest[1] != 'u' {
				return invalid("must not contain a lone surrogate")
			}
			lo, ok := hex4(rest[2:])
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return invalid("must not contain a lone surrogate")
			}
			i += 6
		}
	}
	var id string
	if err := json.Unmarshal(raw, &id); err != nil {
		return invalid("must be a JSON string")
	}
	return ValidateID(id)
}

// hex4 parses the four hex digits at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
