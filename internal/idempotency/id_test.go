package idempotency

import (
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
