package patch

import (
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/project"
)

// hunkView is a comparable rendering of a Hunk.
type hunkView struct {
	Anchors []string
	EOF     bool
	Lines   []string // "kind+text"
	Section int
}

type opView struct {
	Kind    string
	Path    string
	MoveTo  string
	Content string
	NoEOL   bool
	Hunks   []hunkView
}

func view(p *Patch) []opView {
	var out []opView
	for _, f := range p.Files {
		ov := opView{Kind: f.Kind.String(), Path: f.Path, MoveTo: f.MoveTo, Content: f.Content, NoEOL: f.NoFinalNewline}
		for _, h := range f.Hunks {
			hv := hunkView{Anchors: h.Anchors, EOF: h.EndOfFile, Section: h.section}
			for _, l := range h.split().lines {
				hv.Lines = append(hv.Lines, string(l.kind)+l.s)
			}
			ov.Hunks = append(ov.Hunks, hv)
		}
		out = append(out, ov)
	}
	return out
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []opView
	}{
		{
			name: "all operations",
			text: "*** Begin Patch\n*** Add File: hello.txt\n+Hello\n+world\n*** Update File: src/app.py\n*** Move to: src/main.py\n@@ def greet():\n-print(\"Hi\")\n+print(\"Hello\")\n*** Delete File: obsolete.txt\n*** End Patch\n",
			want: []opView{
				{Kind: "add", Path: "hello.txt", Content: "Hello\nworld\n"},
				{Kind: "update", Path: "src/app.py", MoveTo: "src/main.py", Hunks: []hunkView{{Anchors: []string{"def greet():"}, Lines: []string{"-print(\"Hi\")", "+print(\"Hello\")"}}}},
				{Kind: "delete", Path: "obsolete.txt"},
			},
		},
		{
			name: "crlf and padded markers",
			text: "  *** Begin Patch \r\n*** Update File: a.txt\r\n@@\r\n x\r\n-y\r\n+z\r\n*** End of File\r\n *** End Patch\r\n",
			want: []opView{{Kind: "update", Path: "a.txt", Hunks: []hunkView{{EOF: true, Lines: []string{" x", "-y", "+z"}}}}},
		},
		{
			name: "heredoc wrapper",
			text: "apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: ./a/../b.txt\n*** End Patch\nEOF\n",
			want: []opView{{Kind: "delete", Path: "b.txt"}},
		},
		{
			name: "bare heredoc",
			text: "<<EOF\n*** Begin Patch\n*** Delete File: b.txt\n*** End Patch\nEOF",
			want: []opView{{Kind: "delete", Path: "b.txt"}},
		},
		{
			name: "first hunk without @@, blank lines, several anchors",
			text: "*** Begin Patch\n*** Update File: f.go\n a\n-b\n+c\n\n@@ type T struct\n@@ \tfunc (T) M() {\n-x\n+y\n*** End Patch",
			want: []opView{{Kind: "update", Path: "f.go", Hunks: []hunkView{
				{Lines: []string{" a", "-b", "+c", " "}},
				{Anchors: []string{"type T struct", "\tfunc (T) M() {"}, Lines: []string{"-x", "+y"}},
			}}},
		},
		{
			name: "unified range header carries no anchor",
			text: "*** Begin Patch\n*** Update File: f\n@@ -1,1 +1,2000000000 @@ func main()\n-a\n+b\n*** End Patch",
			want: []opView{{Kind: "update", Path: "f", Hunks: []hunkView{{Lines: []string{"-a", "+b"}}}}},
		},
		{
			name: "no newline markers",
			text: "*** Begin Patch\n*** Add File: n\n+one\n+two\n\\ No newline at end of file\n*** Update File: m\n@@\n-a\n\\ No newline at end of file\n+a\n*** End Patch",
			want: []opView{
				{Kind: "add", Path: "n", Content: "one\ntwo", NoEOL: true},
				{Kind: "update", Path: "m", Hunks: []hunkView{{EOF: true, Lines: []string{"-a", "+a"}}}},
			},
		},
		{
			name: "repeated update sections are merged",
			text: "*** Begin Patch\n*** Update File: f\n@@\n-a\n+b\n*** Update File: f\n*** Move to: g\n@@\n-c\n+d\n*** End Patch",
			want: []opView{{Kind: "update", Path: "f", MoveTo: "g", Hunks: []hunkView{
				{Lines: []string{"-a", "+b"}},
				{Lines: []string{"-c", "+d"}, Section: 1},
			}}},
		},
		{
			name: "pure move and empty add",
			text: "*** Begin Patch\n*** Update File: a\n*** Move to: b\n*** Add File: empty\n*** End Patch",
			want: []opView{{Kind: "update", Path: "a", MoveTo: "b"}, {Kind: "add", Path: "empty"}},
		},
		{
			name: "blank line inside added content",
			text: "*** Begin Patch\n*** Add File: a\n+x\n\n+y\n\n*** End Patch",
			want: []opView{{Kind: "add", Path: "a", Content: "x\n\ny\n"}},
		},
		{
			name: "context line that looks like a marker",
			text: "*** Begin Patch\n*** Update File: a.md\n@@\n *** bold ***\n-x\n+y\n*** End Patch",
			want: []opView{{Kind: "update", Path: "a.md", Hunks: []hunkView{{Lines: []string{" *** bold ***", "-x", "+y"}}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(tt.text)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := view(p); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		line     int
		contains []string
	}{
		{"empty", "", 1, []string{"*** Begin Patch"}},
		{"no begin", "hello\n", 1, []string{"must start with", `"hello"`}},
		{"no end", "*** Begin Patch\n*** Delete File: a\n", 2, []string{"must end with", "*** End Patch"}},
		{"only begin", "*** Begin Patch\n", 1, []string{"must end with"}},
		{"two patches", "*** Begin Patch\n*** Delete File: a\n*** End Patch\n*** Begin Patch\n*** Delete File: b\n*** End Patch", 3, []string{"before the end"}},
		{"no sections", "*** Begin Patch\n\n*** End Patch\n", 3, []string{"no file sections", "*** Add File: <path>"}},
		{"bad header", "*** Begin Patch\n*** Modify File: a\n*** End Patch", 2, []string{"unexpected line", "*** Update File: <path>", "*** Delete File: <path>"}},
		{"garbage in update", "*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\nfoo\n*** End Patch", 6, []string{`"foo"`, "' ' (context)"}},
		{"empty update", "*** Begin Patch\n*** Update File: a\n*** End Patch", 2, []string{"has no hunks"}},
		{"anchor without lines", "*** Begin Patch\n*** Update File: a\n@@ x\n*** End Patch", 3, []string{"no lines"}},
		{"stray eof", "*** Begin Patch\n*** Update File: a\n*** End of File\n*** End Patch", 3, []string{"End of File"}},
		{"move misplaced", "*** Begin Patch\n*** Delete File: a\n*** Move to: b\n*** End Patch", 3, []string{"Move to"}},
		{"missing path", "*** Begin Patch\n*** Delete File:\n*** End Patch", 2, []string{"missing path"}},
		{"root path", "*** Begin Patch\n*** Delete File: a/..\n*** End Patch", 2, []string{"Project root"}},
		{"touched twice", "*** Begin Patch\n*** Add File: a\n+x\n*** Delete File: ./a\n*** End Patch", 4, []string{"already touched"}},
		{"move onto touched", "*** Begin Patch\n*** Add File: b\n+x\n*** Update File: a\n*** Move to: b\n*** End Patch", 4, []string{"already touched"}},
		{"trailing text", "*** Begin Patch\n*** Delete File: a\n*** End Patch\nmore", 4, []string{"must end with"}},
		{"hunk line after eof", "*** Begin Patch\n*** Update File: a\n@@\n-x\n*** End of File\n+y\n*** End Patch", 6, []string{"outside a hunk"}},
		{"marker first", "*** Begin Patch\n*** Update File: a\n@@\n\\ No newline at end of file\n*** End Patch", 4, []string{"No newline"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.text)
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, ErrInvalidPatch) {
				t.Fatalf("Parse error = %v, want a *ParseError wrapping ErrInvalidPatch", err)
			}
			if pe.Line != tt.line {
				t.Errorf("line = %d, want %d (%v)", pe.Line, tt.line, err)
			}
			for _, s := range tt.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

func TestParsePathDenied(t *testing.T) {
	for _, header := range []string{
		"*** Update File: ../x",
		"*** Update File: a/../../x",
		"*** Add File: /etc/passwd",
		"*** Delete File: C:\\x",
		"*** Delete File: a\x00b",
		"*** Update File: ok\n*** Move to: ../../out",
	} {
		t.Run(header, func(t *testing.T) {
			_, err := Parse("*** Begin Patch\n" + header + "\n@@\n-a\n+b\n*** End Patch")
			var pathErr *project.PathError
			if !errors.Is(err, project.ErrPathDenied) || !errors.As(err, &pathErr) {
				t.Fatalf("Parse error = %v, want project.ErrPathDenied", err)
			}
			if errors.Is(err, ErrInvalidPatch) {
				t.Errorf("a path denial must not also be ErrInvalidPatch")
			}
			if strings.Contains(err.Error(), "passwd") || strings.Contains(err.Error(), "out") {
				t.Errorf("error %q echoes the path", err)
			}
		})
	}
}

func TestParseLimits(t *testing.T) {
	t.Run("oversized text", func(t *testing.T) {
		text := strings.Repeat("a", MaxPatchBytes+1)
		allocs := testing.AllocsPerRun(5, func() {
			if _, err := Parse(text); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("Parse error = %v, want ErrTooLarge", err)
			}
		})
		// A handful of allocations (more under -race) — never one
		// proportional to the 4 MiB input, which the bomb tests measure.
		if allocs > 20 {
			t.Errorf("rejecting an oversized patch allocated %v times", allocs)
		}
	})
	bomb := func(n int, unit string) string {
		var b strings.Builder
		b.WriteString("*** Begin Patch\n*** Update File: a\n")
		for i := 0; i < n; i++ {
			b.WriteString(unit)
		}
		b.WriteString("*** End Patch\n")
		return b.String()
	}
	for _, tt := range []struct {
		name string
		text string
	}{
		{"800k hunks under the byte limit", bomb(800_000, "@@\n+\n")},
		{"a million hunks", bomb(1_000_000, "@@\n+\n")},
		{"1001 files", strings.Repeat("*** Delete File: x\n", MaxFiles+1)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := Parse(tt.text)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("Parse error = %v, want ErrTooLarge", err)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
				t.Errorf("rejecting the bomb allocated %d bytes", got)
			}
		})
	}
	t.Run("exactly the limits", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("*** Begin Patch\n")
		for i := 0; i < MaxFiles; i++ {
			b.WriteString("*** Update File: f" + itoa(i) + "\n")
			for j := 0; j < MaxHunks/MaxFiles; j++ {
				b.WriteString("@@\n-a\n+b\n")
			}
		}
		b.WriteString("*** End Patch\n")
		p, err := Parse(b.String())
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		if len(p.Files) != MaxFiles {
			t.Errorf("files = %d", len(p.Files))
		}
	})
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

func TestPaths(t *testing.T) {
	p, err := Parse("*** Begin Patch\n*** Add File: a\n+x\n*** Update File: b\n*** Move to: c\n@@\n-x\n+y\n*** Delete File: d\n*** End Patch")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Paths(), []string{"a", "b", "c", "d"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Paths() = %v, want %v", got, want)
	}
}

// String names k in the test views.
func (k Kind) String() string {
	switch k {
	case Add:
		return "add"
	case Delete:
		return "delete"
	case Update:
		return "update"
	}
	return "unknown"
}
