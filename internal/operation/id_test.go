package operation

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestValidateID(t *testing.T) {
	tests := []struct {
		name string
		id   string
		ok   bool
	}{
		{"simple", "op-1", true},
		{"128 bytes ascii", strings.Repeat("a", 128), true},
		{"128 bytes multibyte", strings.Repeat("😀", 32), true},
		{"129 bytes", strings.Repeat("a", 129), false},
		{"129 bytes multibyte", strings.Repeat("😀", 32) + "a", false},
		{"empty", "", false},
		{"nul", "a\x00b", false},
		{"only nul", "\x00", false},
		{"invalid utf-8", "\xff", false},
		{"truncated multibyte", "\xf0\x9f\x98", false},
		{"encoded surrogate", "\xed\xa0\x80", false},
		{"leading space", " a", true},
		{"trailing space", "a ", true},
		{"only spaces", "   ", true},
		{"replacement char", "\ufffd", true},
		{"control chars", "a\tb\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateID(tt.id)
			if tt.ok && err != nil {
				t.Errorf("ValidateID(%q) = %v, want nil", tt.id, err)
			}
			if !tt.ok && !errors.Is(err, ErrInvalidID) {
				t.Errorf("ValidateID(%q) = %v, want ErrInvalidID", tt.id, err)
			}
			if err != nil && tt.id != "" && strings.Contains(err.Error(), tt.id) {
				t.Errorf("error %q echoes the ID", err)
			}
		})
	}
}

func TestValidateRawJSONString(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		ok   bool
	}{
		{"plain", `"op-1"`, true},
		{"escapes", `"a\"b\\c\/d\b\f\n\r\t"`, true},
		{"escaped ascii", `"\u0041"`, true},
		{"surrogate pair", `"\ud83d\ude00"`, true},
		{"surrogate pair upper hex", `"\uD83D\uDE00"`, true},
		{"literal emoji", `"😀"`, true},
		{"spaces kept", `" a "`, true},
		{"escaped replacement char", `"\ufffd"`, true},
		{"lone high", `"\ud800"`, false},
		{"lone high at end after text", `"abc\udbff"`, false},
		{"lone low", `"\udc00"`, false},
		{"high then text", `"\ud800abcdef"`, false},
		{"high then non-low escape", `"\ud800\u0041"`, false},
		{"high then high", `"\ud800\ud800"`, false},
		{"high then short escape", `"\ud800\u00"`, false},
		{"low then high", `"\ude00\ud83d"`, false},
		{"escaped nul", `"a\u0000b"`, false},
		{"raw nul", "\"a\x00b\"", false},
		{"raw control", "\"a\nb\"", false},
		{"raw invalid utf-8", "\"\xff\"", false},
		{"empty", `""`, false},
		{"not a string", `123`, false},
		{"no closing quote", `"abc`, false},
		{"unescaped quote", `"a"b"`, false},
		{"trailing backslash", `"a\"`, false},
		{"bad escape", `"\x41"`, false},
		{"bad hex", `"\u00zz"`, false},
		{"short unicode escape", `"\u12"`, false},
		{"too long after decoding", `"` + strings.Repeat(`\u0041`, 129) + `"`, false},
		{"128 after decoding", `"` + strings.Repeat(`\u0041`, 128) + `"`, true},
		{"whitespace around", ` "a" `, false},
		{"null", `null`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateRawJSONString([]byte(tt.raw))
			if tt.ok && err != nil {
				t.Errorf("ValidateRawJSONString(%s) = %v, want nil", tt.raw, err)
			}
			if !tt.ok && !errors.Is(err, ErrInvalidID) {
				t.Errorf("ValidateRawJSONString(%s) = %v, want ErrInvalidID", tt.raw, err)
			}
		})
	}
}

func FuzzValidateRawJSONString(f *testing.F) {
	for _, s := range []string{`"a"`, `"\ud800"`, `"\ud83d\ude00"`, `"\u0000"`, `""`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if ValidateRawJSONString(raw) != nil {
			return
		}
		var id string
		if err := json.Unmarshal(raw, &id); err != nil {
			t.Fatalf("accepted %q, which is not a JSON string: %v", raw, err)
		}
		if err := ValidateID(id); err != nil {
			t.Fatalf("accepted %q, which decodes to an invalid ID: %v", raw, err)
		}
		// Every U+FFFD in the ID must have been written by the client, as the
		// character or as its escape, never produced by decoding.
		lower := strings.ToLower(string(raw))
		written := strings.Count(lower, "\ufffd") + strings.Count(lower, `\ufffd`)
		if got := strings.Count(id, "\ufffd"); got > written {
			t.Fatalf("%q decodes to %d U+FFFD, but only %d were written", raw, got, written)
		}
	})
}
