package ids

import (
	"strings"
	"testing"
)

func TestNew(t *testing.T) {
	a, b := New("x_", 16), New("x_", 16)
	if a == b || !strings.HasPrefix(a, "x_") || len(a) != 2+22 {
		t.Fatalf("%q %q", a, b)
	}
	if len(New("", 32)) != 43 {
		t.Fatal("32 bytes should encode to 43 characters")
	}
}
