package search

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// grepLines is the reference: the 1-based numbers of the lines of text
// that contain a match, checking each line on its own.
func grepLines(text string, match func(string) bool) []int {
	var out []int
	for i, l := range splitLines(text) {
		if match(l) {
			out = append(out, i+1)
		}
	}
	return out
}

func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

func scanAll(t *testing.T, m *matcher, text string, bufSize, context, maxChars int, sized, oneByte bool) []Match {
	t.Helper()
	sc := &scanner{buf: make([]byte, bufSize)}
	p := &scanParams{m: m, maxChars: maxChars, context: context, maxMatches: 1 << 30, maxBytes: 1 << 30}
	var r io.Reader = strings.NewReader(text)
	if oneByte {
		r = iotest.OneByteReader(r)
	}
	size := int64(0)
	if sized {
		size = int64(len(text))
	}
	ms, err := sc.scan(context_(), p, r, size, "f")
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func context_() context.Context { return context.Background() }

func TestMatcherSemantics(t *testing.T) {
	for _, tc := range []struct {
		pattern     string
		regex, fold bool
		text        string
		want        []int
	}{
		{"a.b", false, false, "axb\na.b\n", []int{2}},
		{"hello", false, true, "HeLLo\nhellO world\nhelo\n", []int{1, 2}},
		{"kelvin", false, true, "\u212Aelvin\nKELVIN\n", []int{1, 2}},
		{"ſ", false, true, "S\ns\nx\n", []int{1, 2}},
		{"ÉTÉ", false, true, "été\nete\n", []int{1}},
		{`a\sb`, true, false, "a\nb\na b\n", []int{3}},
		{`a[^x]b`, true, false, "a\nb\nayb\n", []int{3}},
		{`a.*b`, true, false, "a\nb\n", nil},
		{`^b`, true, false, "a\nb\nab\n", []int{2}},
		{`\Ab`, true, false, "a\nb\n", []int{2}},
		{`a$`, true, false, "a\nb\nba\n", []int{1, 3}},
		{`a\z`, true, false, "a\nab\n", []int{1}},
		{`foo|bar`, true, false, "xbar\nfoo\nbaz\n", []int{1, 2}},
		{`(?i)FOO\d+`, true, false, "foo12\nfoo\nFoO9\n", []int{1, 3}},
		{`Foo\d+`, true, true, "foo12\nfoo\nFOO9\n", []int{1, 3}},
		{`x*`, true, false, "a\n\nb\n", []int{1, 2, 3}},
		{`^$`, true, false, "a\n\nb\n\n", []int{2, 4}},
		{`a\nb`, true, false, "a\nb\n", nil},
		{`(a|b\n)c`, true, false, "ac\nb\nc\n", []int{1}},
		{`needle`, true, false, "no\nneedle\n", []int{2}},
		{`\bneedle\b`, true, false, "needles\na needle\n", []int{2}},
		{`[[:space:]]x`, true, false, "\nx\n x\n", []int{3}},
	} {
		m, err := compileMatcher(tc.pattern, tc.regex, tc.fold)
		if err != nil {
			t.Fatalf("%q: %v", tc.pattern, err)
		}
		var got []int
		for _, ms := range scanAll(t, m, tc.text, 64, 0, 500, true, false) {
			got = append(got, ms.Line)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%q (regex %v, fold %v) on %q (-want +got):\n%s", tc.pattern, tc.regex, tc.fold, tc.text, diff)
		}
	}
}

func TestFoldSafeRun(t *testing.T) {
	for lit, want := range map[string]string{
		"Kubernetes": "ubernete", "ss": "", "Straße": "tra", "HELLO": "hello", "a_b-C": "a_b-c", "ÉTÉ": "t",
	} {
		if got := string(foldSafeRun(lit)); got != want {
			t.Errorf("foldSafeRun(%q) = %q, want %q", lit, got, want)
		}
	}
}

func TestRequiredLiteral(t *testing.T) {
	for pattern, want := range map[string]string{
		`func\s+(\w+)Handler\(`: "Handler(", `foo|bar`: "", `(abc)+x`: "abc", `a{2,}bcd`: "bcd", `x?`: "",
		`planted_\w+\(\d+\)`: "planted_",
	} {
		m, err := compileMatcher(pattern, true, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(m.needle); got != want {
			t.Errorf("%q: needle %q, want %q", pattern, got, want)
		}
	}
	if m, _ := compileMatcher("TODO", true, false); string(m.exact) != "TODO" {
		t.Errorf("a literal regex is not exact: %+v", m)
	}
}

// TestScanAgainstReference checks line numbers and context on random
// texts with buffers small enough to cut lines and regions everywhere.
func TestScanAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"ab", "abc", "needle", "x", "NEEDLE", "y z", "", "nee", "dle"}
	patterns := []struct {
		pattern     string
		regex, fold bool
		ref         func(string) bool
	}{
		{"needle", false, false, func(l string) bool { return strings.Contains(l, "needle") }},
		{"needle", false, true, func(l string) bool { return strings.Contains(strings.ToLower(l), "needle") }},
		{"b", false, false, func(l string) bool { return strings.Contains(l, "b") }},
		{`ne+dle`, true, false, regexp.MustCompile(`ne+dle`).MatchString},
		{`^ab`, true, false, regexp.MustCompile(`^ab`).MatchString},
		{`c$`, true, false, regexp.MustCompile(`c$`).MatchString},
		{`x|z`, true, false, regexp.MustCompile(`x|z`).MatchString},
	}
	for iter := range 400 {
		var b strings.Builder
		nLines := rng.IntN(30)
		for range nLines {
			for range rng.IntN(5) {
				b.WriteString(words[rng.IntN(len(words))])
			}
			b.WriteByte('\n')
		}
		text := b.String()
		if rng.IntN(3) == 0 {
			text = strings.TrimSuffix(text, "\n")
		}
		p := patterns[rng.IntN(len(patterns))]
		m, err := compileMatcher(p.pattern, p.regex, p.fold)
		if err != nil {
			t.Fatal(err)
		}
		lines := splitLines(text)
		longest := 0
		for _, l := range lines {
			longest = max(longest, len(l))
		}
		bufSize := longest + 1 + rng.IntN(40) // every line fits: full comparison
		ctxLines := rng.IntN(4)
		got := scanAll(t, m, text, bufSize, ctxLines, 1000, rng.IntN(2) == 0, rng.IntN(4) == 0)
		var want []Match
		for _, n := range grepLines(text, p.ref) {
			w := Match{Path: "f", Line: n, Text: lines[n-1]}
			if ctxLines > 0 {
				w.Before = lines[max(0, n-1-ctxLines) : n-1]
				w.After = lines[n:min(len(lines), n+ctxLines)]
				if len(w.Before) == 0 {
					w.Before = nil
				}
				if len(w.After) == 0 {
					w.After = nil
				}
			}
			want = append(want, w)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("iteration %d: %q in %q (buffer %d, context %d) (-want +got):\n%s", iter, p.pattern, text, bufSize, ctxLines, diff)
		}
	}
}

// TestScanLongLines checks line numbers when lines exceed the buffer and
// are searched in windows.
func TestScanLongLines(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for iter := range 300 {
		var b strings.Builder
		for range rng.IntN(12) {
			n := rng.IntN(200)
			line := []byte(strings.Repeat(".", n))
			if n > 8 && rng.IntN(2) == 0 {
				copy(line[rng.IntN(n-6):], "needle")
			}
			b.Write(line)
			b.WriteByte('\n')
		}
		text := b.String()
		for _, p := range []struct {
			pattern string
			regex   bool
		}{{"needle", false}, {`ne+dle`, true}, {"NEEDLE", false}} {
			m, _ := compileMatcher(p.pattern, p.regex, p.pattern == "NEEDLE")
			bufSize := 32 + rng.IntN(32)
			var got []int
			for _, ms := range scanAll(t, m, text, bufSize, rng.IntN(3), 20, rng.IntN(2) == 0, false) {
				got = append(got, ms.Line)
				if !strings.Contains(ms.Text, "needle") || len([]rune(ms.Text)) > 20 {
					t.Fatalf("iteration %d: text %q", iter, ms.Text)
				}
			}
			want := grepLines(text, func(l string) bool { return strings.Contains(l, "needle") })
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("iteration %d %q, buffer %d: (-want +got):\n%s\n%q", iter, p.pattern, bufSize, diff, text)
			}
		}
	}
}

// TestScanHugeLineMemory streams a 256 MiB line through the scanner.
func TestScanHugeLineMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	const size = 256 << 20
	m, _ := compileMatcher("NEEDLE", false, false)
	sc := &scanner{buf: make([]byte, bufferBytes)}
	p := &scanParams{m: m, maxChars: 100, maxMatches: 10, maxBytes: 1 << 20}
	allocs := testing.AllocsPerRun(1, func() {
		r := io.MultiReader(io.LimitReader(repeatReader('a'), size), strings.NewReader("NEEDLE\nnext\n"))
		ms, err := sc.scan(context.Background(), p, r, 0, "f")
		if err != nil || len(ms) != 1 || ms[0].Line != 1 || !strings.HasSuffix(ms[0].Text, "aNEEDLE") {
			t.Errorf("scan: %v, %+v", err, ms)
		}
	})
	if allocs > 50 {
		t.Errorf("%v allocations", allocs)
	}
}

type repeatReader byte

func (c repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(c)
	}
	return len(p), nil
}

func TestCutAround(t *testing.T) {
	long := strings.Repeat("a", 100) + "NEEDLE" + strings.Repeat("b", 100)
	got := cutAround([]byte(long), 100, 20, false, false)
	if !strings.HasPrefix(got, "…") || !strings.HasSuffix(got, "…") || !strings.Contains(got, "NEEDLE") || len([]rune(got)) > 20 {
		t.Errorf("cut %q", got)
	}
	if got := cutAround([]byte("short\r"), 0, 20, false, false); got != "short" {
		t.Errorf("short %q", got)
	}
	if got := cutAround([]byte(strings.Repeat("é", 20)), 0, 20, false, false); got != strings.Repeat("é", 20) {
		t.Errorf("multibyte within limit: %q", got)
	}
	if got := cutAround([]byte("a\xffb"), 0, 20, false, false); got != "a\uFFFDb" {
		t.Errorf("invalid UTF-8: %q", got)
	}
	end := strings.Repeat("x", 50) + "END"
	if got := cutAround([]byte(end), 50, 10, false, false); !strings.HasSuffix(got, "END") || len([]rune(got)) > 10 {
		t.Errorf("match at the end: %q", got)
	}
}

func FuzzIgnoreLine(f *testing.F) {
	for _, s := range []string{"*.go", "a/**/b", "[a-", `\`, "!x/", "[]", "[!]", "**/"} {
		f.Add(s, "a/b.go")
	}
	f.Fuzz(func(t *testing.T, rule, path string) {
		stack := ignoreStack{}.push(parseIgnore([]byte(rule), "."))
		if path != "" {
			stack.ignored(path, false)
		}
	})
}

func BenchmarkScanSmallFiles(b *testing.B) {
	m, _ := compileMatcher("planted", false, false)
	sc := &scanner{buf: make([]byte, bufferBytes)}
	p := &scanParams{m: m, maxChars: 500, maxMatches: 100, maxBytes: 1 << 20}
	data := bytes.Repeat([]byte("func example(x int) error { return nil }\n"), 15)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		sc.scan(context.Background(), p, bytes.NewReader(data), int64(len(data)), "f")
	}
}
