package displayname

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClean(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"plain", "ChatGPT", "ChatGPT"},
		{"bidi override", "ChatGPT\u202eelgoog", "ChatGPTelgoog"},
		{"isolates and marks", "a\u2066b\u2069c\u200ed\u200f\u061c", "abcd"},
		{"zero width", "Chat\u200bG\u200cP\u200dT\u2060\ufeff", "ChatGPT"},
		{"tags and fillers", "X\U000E0041\u3164\u115f\uffa0\u034fY", "XY"},
		{"variation selectors", "A\ufe0fB\U000E0100", "AB"},
		{"controls and separators", "a\x00b\x1b[31mc\u2028d\u2029e\u0085", "ab[31mcde"},
		{"whitespace runs", "  My \t\n  App  ", "My App"},
		{"invalid utf-8", "ok\xff\xfe", "ok"},
		{"zalgo", "Z\u0301\u0302\u0303\u0304o", "Z\u0301\u0302o"},
		{"leading mark", "\u0301A", "A"},
		{"bounded", strings.Repeat("é", 100), strings.Repeat("é", MaxRunes)},
		{"only invisible", "\u202e\u200b", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Clean(tt.in)
			if got != tt.want {
				t.Errorf("Clean(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if again := Clean(got); again != got {
				t.Errorf("not idempotent: %q then %q", got, again)
			}
		})
	}
}

func FuzzClean(f *testing.F) {
	f.Add("ChatGPT\u202e\u200bmoc")
	f.Fuzz(func(t *testing.T, s string) {
		got := Clean(s)
		if !utf8.ValidString(got) || utf8.RuneCountInString(got) > MaxRunes {
			t.Fatalf("Clean(%q) = %q", s, got)
		}
		for _, r := range got {
			if invisible(r) {
				t.Fatalf("Clean(%q) kept %U", s, r)
			}
		}
		if Clean(got) != got {
			t.Fatalf("not idempotent on %q", s)
		}
	})
}
