package strictjson

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Reasons reported in Error.Reason. They are stable snake_case codes that
// callers may map to their own error envelope.
const (
	// ReasonUnknownField: an object key is not a field of the schema.
	ReasonUnknownField = "unknown_field"
	// ReasonDuplicateKey: the same key appears twice in one object.
	ReasonDuplicateKey = "duplicate_key"
	// ReasonCaseVariant: two keys of one object differ only by case.
	ReasonCaseVariant = "case_variant_key"
	// ReasonNULInKey: an object key contains U+0000.
	ReasonNULInKey = "nul_in_key"
	// ReasonNotObject: the top-level value is not an object (nor null).
	ReasonNotObject = "not_object"
	// ReasonTooDeep: objects and arrays are nested deeper than Options.MaxDepth.
	ReasonTooDeep = "too_deep"
	// ReasonTooLarge: the input is longer than Options.MaxBytes.
	ReasonTooLarge = "too_large"
	// ReasonMalformed: the input is not valid JSON, or a number does not fit
	// in a float64.
	ReasonMalformed = "malformed_json"
	// ReasonTrailingData: something other than white space follows the
	// top-level value.
	ReasonTrailingData = "trailing_data"
	// ReasonInvalidUTF8: the input contains bytes that are not UTF-8.
	ReasonInvalidUTF8 = "invalid_utf8"
	// ReasonLoneSurrogate: a \uD800–\uDFFF escape is not part of a valid
	// UTF-16 surrogate pair.
	ReasonLoneSurrogate = "lone_surrogate"
	// ReasonWrongType: a value is not of a kind the schema allows.
	ReasonWrongType = "wrong_type"
	// ReasonNotAllowed: a value is of the right kind but outside the
	// schema's enum, range, length or pattern.
	ReasonNotAllowed = "value_not_allowed"
	// ReasonMissingField: an object lacks a field the schema requires.
	ReasonMissingField = "missing_field"
)

// maxQuoted is the longest prefix of a key, in bytes, that is repeated in a
// path segment or an error message.
const maxQuoted = 64

// maxPathInMessage bounds how much of Path an error message repeats.
const maxPathInMessage = 200

// Error is returned by Check for every input it rejects. Its message is safe
// to show to the client: it names at most maxQuoted bytes of any key and
// never repeats string values.
type Error struct {
	// Path locates the problem as a JSON pointer ("/items/2/path"); it is
	// empty for the top-level value. For key problems it ends with the key.
	// Segments longer than 64 bytes are cut and end with "…".
	Path string
	// Reason is one of the Reason constants.
	Reason string
	// Suggestion is the schema field the client probably meant, set only
	// for ReasonUnknownField when one field matches the key ignoring case,
	// '-' and '_'.
	Suggestion string

	msg string
}

// Error returns a one-sentence, client-safe description.
func (e *Error) Error() string { return e.msg }

// quoteKey quotes at most maxQuoted bytes of key.
func quoteKey(key []byte) string {
	cut, short := truncate(key)
	q := strconv.Quote(string(cut))
	if short {
		q += "…"
	}
	return q
}

// truncate returns at most maxQuoted bytes of b, cut on a rune boundary, and
// whether anything was dropped.
func truncate(b []byte) ([]byte, bool) {
	if len(b) <= maxQuoted {
		return b, false
	}
	i := maxQuoted
	for i > 0 && !utf8.RuneStart(b[i]) {
		i--
	}
	return b[:i], true
}

// where describes a location for a message: "" for the top level.
func where(path string) string {
	if path == "" {
		return ""
	}
	if len(path) > maxPathInMessage {
		i := maxPathInMessage
		for i > 0 && !utf8.RuneStart(path[i]) {
			i--
		}
		return " at " + strconv.Quote(path[:i]) + "…"
	}
	return " at " + strconv.Quote(path)
}

// inObject describes the object that holds a key: parent is its path.
func inObject(parent string) string {
	if parent == "" {
		return " in the top-level object"
	}
	return " in the object" + where(parent)
}

func joinPath(parent string, key []byte) string {
	var b strings.Builder
	b.Grow(len(parent) + 1 + min(len(key), maxQuoted) + 3)
	b.WriteString(parent)
	writeSegment(&b, key)
	return b.String()
}

// writeSegment appends "/" and key, escaped as in RFC 6901 and cut to
// maxQuoted bytes.
func writeSegment(b *strings.Builder, key []byte) {
	b.WriteByte('/')
	cut, short := truncate(key)
	for _, c := range cut {
		switch c {
		case '~':
			b.WriteString("~0")
		case '/':
			b.WriteString("~1")
		default:
			b.WriteByte(c)
		}
	}
	if short {
		b.WriteString("…")
	}
}
