package patch

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode"
)

// Fuzz levels, reported per file in FileResult.Fuzz.
const (
	FuzzExact              = "exact"
	FuzzTrailingWhitespace = "trailing_whitespace"
	FuzzWhitespace         = "whitespace"
)

type level int

const (
	levelExact level = iota
	levelTrailing
	levelWhitespace
	numLevels
)

func (l level) String() string {
	return [...]string{FuzzExact, FuzzTrailingWhitespace, FuzzWhitespace}[l]
}

func normalize(s string, l level) string {
	switch l {
	case levelTrailing:
		return strings.TrimRightFunc(s, unicode.IsSpace)
	case levelWhitespace:
		return strings.Join(strings.Fields(s), " ")
	}
	return s
}

const utf8BOM = "\ufeff"

// text is a file split into lines that keep their own terminators, so
// untouched and context lines are written back byte for byte.
type text struct {
	bom      bool
	lines    []fline
	dominant string       // "\r\n" when most lines end so, else "\n"
	norm     [][]string   // lazily normalized line texts per level
	work     *matchBudget // shared by every file of one Apply
}

type fline struct {
	s    string // without terminator
	term string // "\n", "\r\n" or "" (last line without final newline)
}

func splitText(content string, work *matchBudget) *text {
	t := &text{work: work, norm: make([][]string, numLevels)}
	if rest, ok := strings.CutPrefix(content, utf8BOM); ok {
		t.bom, content = true, rest
	}
	crlf, lf := 0, 0
	t.lines = make([]fline, 0, strings.Count(content, "\n")+1)
	for content != "" {
		i := strings.IndexByte(content, '\n')
		if i < 0 {
			t.lines = append(t.lines, fline{s: content})
			break
		}
		l := fline{s: content[:i], term: "\n"}
		if i > 0 && content[i-1] == '\r' {
			l = fline{s: content[:i-1], term: "\r\n"}
			crlf++
		} else {
			lf++
		}
		t.lines = append(t.lines, l)
		content = content[i+1:]
	}
	t.dominant = "\n"
	if crlf > lf {
		t.dominant = "\r\n"
	}
	return t
}

func (t *text) finalNewline() bool {
	return len(t.lines) == 0 || t.lines[len(t.lines)-1].term != ""
}

func (t *text) normalized(l level) []string {
	if t.norm[l] == nil {
		n := make([]string, len(t.lines))
		for i, fl := range t.lines {
			n[i] = normalize(fl.s, l)
		}
		t.norm[l] = n
	}
	return t.norm[l]
}

func (t *text) render(out []fline, finalNewline bool) []byte {
	size := len(utf8BOM)
	for i := range out {
		if out[i].term == "" && i < len(out)-1 {
			out[i].term = t.dominant
		}
		size += len(out[i].s) + len(out[i].term)
	}
	if n := len(out); n > 0 {
		switch {
		case !finalNewline:
			out[n-1].term = ""
		case out[n-1].term == "":
			out[n-1].term = t.dominant
		}
	}
	b := make([]byte, 0, size+len(t.dominant))
	if t.bom {
		b = append(b, utf8BOM...)
	}
	for _, l := range out {
		b = append(b, l.s...)
		b = append(b, l.term...)
	}
	return b
}

// matchBudget bounds line comparisons across one Apply and notices a
// cancelled context while matching. Its first error sticks.
type matchBudget struct {
	ctx  context.Context
	left int
	tick int
	err  error
}

func newBudget(ctx context.Context) *matchBudget {
	return &matchBudget{ctx: ctx, left: maxMatchWork, tick: 1 << 16}
}

func (w *matchBudget) spend(n int) error {
	if w.err != nil {
		return w.err
	}
	w.left -= n
	if w.left < 0 {
		w.err = fmt.Errorf("%w: locating the hunks needs too many comparisons", ErrTooLarge)
		return w.err
	}
	if w.tick += n; w.tick >= 1<<16 {
		w.tick = 0
		w.err = w.ctx.Err()
	}
	return w.err
}

// hunkLine is one parsed line of a hunk body.
type hunkLine struct {
	kind byte // ' ', '-' or '+'
	s    string
}

type body struct {
	lines         []hunkLine
	old           []string // context and removed lines
	trailingBlank int      // bare blank context lines at the end
	marker        bool     // a "\ No newline at end of file" was present
	newNoEOL      bool     // the last new-side line carries it
}

func (h *Hunk) split() body {
	var b body
	for rest := h.body; ; {
		ln := rest
		i := strings.IndexByte(rest, '\n')
		if i >= 0 {
			ln, rest = rest[:i], rest[i+1:]
		}
		ln = strings.TrimSuffix(ln, "\r")
		switch {
		case isBlank(ln):
			b.lines = append(b.lines, hunkLine{kind: ' '})
			b.trailingBlank++
			b.newNoEOL = false
		case ln[0] == '\\':
			b.marker = true
			if n := len(b.lines); n > 0 {
				// After a '-' line the marker describes the old file only.
				if k := b.lines[n-1].kind; k == ' ' || k == '+' {
					b.newNoEOL = true
				}
			}
		default:
			b.lines = append(b.lines, hunkLine{kind: ln[0], s: ln[1:]})
			b.trailingBlank = 0
			if ln[0] != '-' {
				b.newNoEOL = false
			}
		}
		if i < 0 {
			break
		}
	}
	for _, l := range b.lines {
		if l.kind != '+' {
			b.old = append(b.old, l.s)
		}
	}
	return b
}

// replacement replaces lines [start, start+n) of the file by applying
// hunk lines (context lines keep the file's own text).
type replacement struct {
	start, n int
	lines    []hunkLine
}

// fileEdit is the outcome of applying a file's hunks.
type fileEdit struct {
	content        []byte
	fuzz           level
	added, removed int
}

// applyHunks applies an Update's hunks, section by section, to content.
func applyHunks(content []byte, f *FileOp, work *matchBudget) (fileEdit, error) {
	edit := fileEdit{content: content}
	for start := 0; start < len(f.Hunks); {
		end := start + 1
		for end < len(f.Hunks) && f.Hunks[end].section == f.Hunks[start].section {
			end++
		}
		if err := applySection(&edit, f, start, end, work); err != nil {
			return fileEdit{}, err
		}
		start = end
	}
	return edit, nil
}

func applySection(edit *fileEdit, f *FileOp, from, to int, work *matchBudget) error {
	t := splitText(string(edit.content), work)
	finalNewline := t.finalNewline()
	var reps []replacement
	pos := 0
	for hi := from; hi < to; hi++ {
		h := f.Hunks[hi]
		fail := func(err error) error { return &HunkError{Path: f.Path, Hunk: hi + 1, Line: h.Line, Err: err} }
		b := h.split()
		anchorAt := -1
		for ai, a := range h.Anchors {
			idx, lv, err := t.find([]string{a}, pos, false, ai == 0)
			if err != nil {
				return fail(fmt.Errorf("@@ %s: %w", quote(a), err))
			}
			edit.fuzz = max(edit.fuzz, lv)
			anchorAt, pos = idx, idx+1
		}
		lines, old := b.lines, b.old
		at := -1
		if len(old) > 0 {
			unique := len(h.Anchors) == 0 && !h.EndOfFile
			idx, lv, err := t.find(old, pos, h.EndOfFile, unique)
			if errors.Is(err, ErrContextNotFound) && anchorAt >= 0 {
				// The hunk may repeat its anchor line as its first context.
				idx, lv, err = t.find(old, anchorAt, h.EndOfFile, unique)
			}
			if errors.Is(err, ErrContextNotFound) && b.trailingBlank > 0 {
				// Blank lines at the end of a hunk are often padding, or
				// stand for the file's final newline: retry without them.
				lines, old = lines[:len(lines)-b.trailingBlank], old[:len(old)-b.trailingBlank]
				if err = nil; len(old) > 0 {
					idx, lv, err = t.find(old, pos, h.EndOfFile, unique)
				}
			}
			if err != nil {
				return fail(err)
			}
			if len(old) > 0 {
				edit.fuzz = max(edit.fuzz, lv)
				at, pos = idx, idx+len(old)
			}
		}
		if at < 0 { // only added lines
			at = len(t.lines)
			if len(h.Anchors) > 0 && !h.EndOfFile {
				at = pos
			}
		}
		reps = append(reps, replacement{start: at, n: len(old), lines: lines})
		if b.marker {
			finalNewline = !b.newNoEOL
		}
	}
	sort.SliceStable(reps, func(i, j int) bool { return reps[i].start < reps[j].start })

	out := make([]fline, 0, len(t.lines)+8)
	cur := 0
	for _, r := range reps {
		out = append(out, t.lines[cur:r.start]...)
		k := r.start
		for _, l := range r.lines {
			switch l.kind {
			case ' ':
				out = append(out, t.lines[k])
				k++
			case '-':
				k++
				edit.removed++
			case '+':
				out = append(out, fline{s: l.s, term: t.dominant})
				edit.added++
			}
		}
		cur = k
	}
	out = append(out, t.lines[cur:]...)
	edit.content = t.render(out, finalNewline)
	return nil
}

// find locates needle in the file at or after from, trying each fuzz
// level in turn and stopping at the first level with a match. eof pins
// the match to the end of the file; unique makes a second match at that
// level an ErrAmbiguous, otherwise the first match wins.
func (t *text) find(needle []string, from int, eof, unique bool) (int, level, error) {
	if len(needle) > len(t.lines)-from {
		return 0, 0, ErrContextNotFound
	}
	for lv := levelExact; lv < numLevels; lv++ {
		hay := t.normalized(lv)
		want := needle
		if lv != levelExact {
			want = make([]string, len(needle))
			for i, s := range needle {
				want[i] = normalize(s, lv)
			}
		}
		first, count := -1, 0
		lo, hi := from, len(hay)-len(want)
		if eof {
			lo = hi
		}
		for i := lo; i <= hi; i++ {
			if err := t.work.spend(1); err != nil {
				return 0, 0, err
			}
			if hay[i] != want[0] || !equalFrom(hay[i:], want, t.work) {
				continue
			}
			if count == 0 {
				first = i
			}
			count++
			if !unique || count > 1 {
				break
			}
		}
		if count > 1 {
			return 0, 0, fmt.Errorf("%w (at %s level; add context lines or an \"@@ <line>\" anchor)", ErrAmbiguous, lv)
		}
		if count == 1 {
			return first, lv, nil
		}
	}
	return 0, 0, ErrContextNotFound
}

func equalFrom(hay, want []string, work *matchBudget) bool {
	for j := 1; j < len(want); j++ {
		if hay[j] != want[j] {
			_ = work.spend(j)
			return false
		}
	}
	_ = work.spend(len(want))
	return true
}
