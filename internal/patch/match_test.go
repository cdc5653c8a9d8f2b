package patch

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// applyTo applies the hunks of a one-Update patch (body given without the
// envelope) to content.
func applyTo(t *testing.T, content, hunks string) (string, string, error) {
	t.Helper()
	p, err := Parse("*** Begin Patch\n*** Update File: f\n" + hunks + "*** End Patch\n")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	edit, err := applyHunks([]byte(content), p.Files[0], newBudget(context.Background()))
	if err != nil {
		return "", "", err
	}
	return string(edit.content), edit.fuzz.String(), nil
}

func TestMatch(t *testing.T) {
	tests := []struct {
		name    string
		content string
		hunks   string
		want    string
		fuzz    string
	}{
		{
			name:    "exact",
			content: "a\nb\nc\n",
			hunks:   "@@\n a\n-b\n+B\n c\n",
			want:    "a\nB\nc\n",
			fuzz:    FuzzExact,
		},
		{
			name:    "trailing whitespace keeps the file's context lines",
			content: "a  \nb\t\nc\n",
			hunks:   "@@\n a\n-b\n+B\n",
			want:    "a  \nB\nc\n",
			fuzz:    FuzzTrailingWhitespace,
		},
		{
			name:    "whitespace collapsed",
			content: "func f() {\n\treturn  x\n}\n",
			hunks:   "@@\n func f() {\n-    return x\n+\treturn y\n",
			want:    "func f() {\n\treturn y\n}\n",
			fuzz:    FuzzWhitespace,
		},
		{
			name:    "crlf preserved, new lines use it",
			content: "a\r\nb\r\nc\r\n",
			hunks:   "@@\n a\n-b\n+B\n+B2\n c\n",
			want:    "a\r\nB\r\nB2\r\nc\r\n",
			fuzz:    FuzzExact,
		},
		{
			name:    "mixed endings: untouched lines keep theirs, new ones the dominant",
			content: "a\r\nb\nc\r\nd\r\n",
			hunks:   "@@\n b\n+x\n",
			want:    "a\r\nb\nx\r\nc\r\nd\r\n",
			fuzz:    FuzzExact,
		},
		{
			name:    "no final newline preserved",
			content: "a\nb",
			hunks:   "@@\n a\n-b\n+B\n",
			want:    "a\nB",
			fuzz:    FuzzExact,
		},
		{
			name:    "appending to a file without final newline",
			content: "a\nb",
			hunks:   "@@\n b\n+c\n*** End of File\n",
			want:    "a\nb\nc",
			fuzz:    FuzzExact,
		},
		{
			name:    "marker adds a final newline",
			content: "a\nb",
			hunks:   "@@\n a\n-b\n\\ No newline at end of file\n+b\n",
			want:    "a\nb\n",
			fuzz:    FuzzExact,
		},
		{
			name:    "marker removes the final newline",
			content: "a\nb\n",
			hunks:   "@@\n a\n-b\n+b\n\\ No newline at end of file\n",
			want:    "a\nb",
			fuzz:    FuzzExact,
		},
		{
			name:    "pure addition appends",
			content: "a\n",
			hunks:   "@@\n+b\n",
			want:    "a\nb\n",
			fuzz:    FuzzExact,
		},
		{
			name:    "addition after an anchor",
			content: "func a() {\n}\nfunc b() {\n}\n",
			hunks:   "@@ func a() {\n+\tx()\n",
			want:    "func a() {\n\tx()\n}\nfunc b() {\n}\n",
			fuzz:    FuzzExact,
		},
		{
			name:    "anchors pick the occurrence",
			content: "class A\n  def m\n    x\nclass B\n  def m\n    x\n",
			hunks:   "@@ class B\n@@   def m\n-    x\n+    y\n",
			want:    "class A\n  def m\n    x\nclass B\n  def m\n    y\n",
			fuzz:    FuzzExact,
		},
		{
			name:    "hunk repeating its anchor line",
			content: "x\ndef f():\n    return 1\n",
			hunks:   "@@ def f():\n def f():\n-    return 1\n+    return 2\n",
			want:    "x\ndef f():\n    return 2\n",
			fuzz:    FuzzExact,
		},
		{
			name:    "end of file pins the match",
			content: "x\ny\nx\n",
			hunks:   "@@\n-x\n+z\n*** End of File\n",
			want:    "x\ny\nz\n",
			fuzz:    FuzzExact,
		},
		{
			name:    "later hunks search after earlier ones",
			content: "x\na\nx\nb\n",
			hunks:   "@@\n a\n-x\n+1\n@@\n-b\n+2\n",
			want:    "x\na\n1\n2\n",
			fuzz:    FuzzExact,
		},
		{
			name:    "trailing blank line padding ignored",
			content: "a\nb",
			hunks:   "@@\n-a\n+A\n b\n\n",
			want:    "A\nb",
			fuzz:    FuzzExact,
		},
		{
			name:    "blank padding after a pure addition",
			content: "a\n",
			hunks:   "@@\n+b\n\n",
			want:    "a\nb\n",
			fuzz:    FuzzExact,
		},
		{
			name:    "delete everything",
			content: "a\nb\n",
			hunks:   "@@\n-a\n-b\n",
			want:    "",
			fuzz:    FuzzExact,
		},
		{
			name:    "fill an empty file",
			content: "",
			hunks:   "@@\n+a\n",
			want:    "a\n",
			fuzz:    FuzzExact,
		},
		{
			name:    "byte order mark kept",
			content: "\ufeffa\nb\n",
			hunks:   "@@\n-a\n+A\n",
			want:    "\ufeffA\nb\n",
			fuzz:    FuzzExact,
		},
		{
			name:    "sections apply in turn",
			content: "a\nb\n",
			hunks:   "@@\n-b\n+c\n*** Update File: f\n@@\n-a\n+z\n",
			want:    "z\nc\n",
			fuzz:    FuzzExact,
		},
		{
			name:    "range header is only a hunk start",
			content: "a\n",
			hunks:   "@@ -1,1 +1,2000000000 @@\n-a\n+b\n",
			want:    "b\n",
			fuzz:    FuzzExact,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, fuzz, err := applyTo(t, tt.content, tt.hunks)
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			if got != tt.want {
				t.Errorf("content = %q, want %q", got, tt.want)
			}
			if fuzz != tt.fuzz {
				t.Errorf("fuzz = %s, want %s", fuzz, tt.fuzz)
			}
		})
	}
}

func TestMatchErrors(t *testing.T) {
	tests := []struct {
		name    string
		content string
		hunks   string
		want    error
		hunk    int
	}{
		{"not found", "a\nb\n", "@@\n-c\n+d\n", ErrContextNotFound, 1},
		{"second hunk not found", "a\nb\n", "@@\n-a\n+A\n@@\n-a\n+B\n", ErrContextNotFound, 2},
		{"ambiguous exact", "x\ny\nx\n", "@@\n-x\n+z\n", ErrAmbiguous, 1},
		{"ambiguous at whitespace level", "a\tb\nc\na  b\n", "@@\n-a b\n+z\n", ErrAmbiguous, 1},
		{"ambiguous first anchor", "def f\nx\ndef f\nx\n", "@@ def f\n-x\n+y\n", ErrAmbiguous, 1},
		{"anchor missing", "a\n", "@@ nowhere\n-a\n+b\n", ErrContextNotFound, 1},
		{"end of file mismatch", "x\ny\n", "@@\n-x\n+z\n*** End of File\n", ErrContextNotFound, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := applyTo(t, tt.content, tt.hunks)
			var he *HunkError
			if !errors.Is(err, tt.want) || !errors.As(err, &he) {
				t.Fatalf("error = %v, want a *HunkError wrapping %v", err, tt.want)
			}
			if he.Hunk != tt.hunk || he.Path != "f" {
				t.Errorf("HunkError = %+v, want hunk %d of f", he, tt.hunk)
			}
		})
	}
}

func TestMatchExactWinsOverFuzzyDuplicates(t *testing.T) {
	// One exact match beats two whitespace-level candidates.
	got, fuzz, err := applyTo(t, "a b\na  b\na\tb\n", "@@\n-a  b\n+z\n")
	if err != nil {
		t.Fatal(err)
	}
	if got != "a b\nz\na\tb\n" || fuzz != FuzzExact {
		t.Errorf("got %q (%s)", got, fuzz)
	}
}

func TestMatchBudget(t *testing.T) {
	// A needle that almost matches everywhere in a large file runs out of
	// budget instead of pinning a CPU.
	content := strings.Repeat("a\n", 200_000)
	hunk := "@@\n" + strings.Repeat(" a\n", 2000) + "-b\n+c\n"
	_, _, err := applyTo(t, content, hunk)
	if !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrContextNotFound) {
		t.Fatalf("error = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p, _ := Parse("*** Begin Patch\n*** Update File: f\n" + hunk + "*** End Patch")
	if _, err := applyHunks([]byte(content), p.Files[0], newBudget(ctx)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled match error = %v", err)
	}
}
