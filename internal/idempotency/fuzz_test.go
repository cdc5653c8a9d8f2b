package idempotency

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzValidateID checks ValidateID against its definition (non-empty, at
// most MaxIDBytes bytes, well-formed UTF-8, no NUL), that a refusal wraps
// ErrInvalidID without echoing the ID.
func FuzzValidateID(f *testing.F) {
	for _, s := range []string{"op-1", "", " a", "a ", strings.Repeat("a", 128), strings.Repeat("a", 129),
		strings.Repeat("😀", 32), strings.Repeat("😀", 32) + "a", "a\x00b", "\xff", "\ufffd", "<&>", "\u2028", "e\u0301"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		err := ValidateID(id)
		want := id != "" && len(id) <= MaxIDBytes && utf8.ValidString(id) && strings.IndexByte(id, 0) < 0
		if (err == nil) != want {
			t.Fatalf("ValidateID(%q) = %v, want ok=%v", id, err, want)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidID) {
				t.Fatalf("ValidateID(%q) error %v does not wrap ErrInvalidID", id, err)
			}
			if len(id) >= 4 && strings.Contains(err.Error(), id) {
				t.Fatalf("ValidateID(%q) error %q echoes the ID", id, err)
			}
		}
	})
}
