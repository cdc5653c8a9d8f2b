package patch

import (
	"fmt"
	"strings"

	"github.com/devspace-dev/devspace/internal/project"
)

// Patch format markers.
const (
	beginMarker  = "*** Begin Patch"
	endMarker    = "*** End Patch"
	addHeader    = "*** Add File:"
	deleteHeader = "*** Delete File:"
	updateHeader = "*** Update File:"
	moveHeader   = "*** Move to:"
	eofMarker    = "*** End of File"
)

const validHeaders = `valid headers are "*** Add File: <path>", "*** Delete File: <path>", "*** Update File: <path>" (optionally followed by "*** Move to: <path>") and "*** End Patch"`

const hunkLineHint = `every hunk line starts with ' ' (context), '-' (remove) or '+' (add); a hunk starts with "@@" or "@@ <context line>" and may end with "*** End of File"`

// Parse parses a Codex-format patch: "*** Begin Patch", file sections,
// "*** End Patch". It tolerates a surrounding heredoc wrapper
// (apply_patch <<'EOF' … EOF), CRLF line endings and whitespace around
// the markers. Paths go through project.CleanRel.
//
// Errors: ErrTooLarge (checked before anything proportional to the text
// is allocated), *ParseError wrapping ErrInvalidPatch or
// project.ErrPathDenied.
func Parse(text string) (*Patch, error) {
	if len(text) > MaxPatchBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(text), MaxPatchBytes)
	}
	if err := prescan(text); err != nil {
		return nil, err
	}
	p := &parser{r: lineReader{text: text}, owner: map[string]*FileOp{}}
	return p.parse()
}

// prescan counts file headers and hunks without allocating, so a patch
// of a million tiny hunks is refused before any of them is built.
func prescan(text string) error {
	files, hunks := 0, 0
	prevHunk := false
	for rest := text; rest != ""; {
		line := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		isHunk := strings.HasPrefix(line, "@@")
		if isHunk && !prevHunk {
			hunks++
		}
		prevHunk = isHunk
		t := line
		if strings.HasPrefix(t, addHeader) || strings.HasPrefix(t, deleteHeader) || strings.HasPrefix(t, updateHeader) {
			files++
		}
	}
	if files > MaxFiles {
		return fmt.Errorf("%w: %d file sections, limit %d", ErrTooLarge, files, MaxFiles)
	}
	if hunks > MaxHunks {
		return fmt.Errorf("%w: %d hunks, limit %d", ErrTooLarge, hunks, MaxHunks)
	}
	return nil
}

// lineReader walks the text line by line without copying. Lines are
// returned without "\n" and without a trailing "\r".
type lineReader struct {
	text  string
	limit int // offset where reading stops; 0 means len(text)
	pos   int // offset of the next line
	no    int // 1-based number of the line last returned
}

type line struct {
	s          string // content without terminator
	start, end int    // offsets of s in text
	no         int
}

func (r *lineReader) next() (line, bool) {
	limit := len(r.text)
	if r.limit > 0 {
		limit = r.limit
	}
	if r.pos >= limit {
		return line{}, false
	}
	start := r.pos
	end := len(r.text)
	if i := strings.IndexByte(r.text[start:], '\n'); i >= 0 {
		end = start + i
		r.pos = end + 1
	} else {
		r.pos = end
	}
	if end > start && r.text[end-1] == '\r' {
		end--
	}
	r.no++
	return line{s: r.text[start:end], start: start, end: end, no: r.no}, true
}

func (r *lineReader) peek() (line, bool) {
	pos, no := r.pos, r.no
	l, ok := r.next()
	r.pos, r.no = pos, no
	return l, ok
}

// nextNonBlank skips blank lines.
func (r *lineReader) nextNonBlank() (line, bool) {
	for {
		l, ok := r.next()
		if !ok || strings.TrimSpace(l.s) != "" {
			return l, ok
		}
	}
}

type parser struct {
	r      lineReader
	p      Patch
	owner  map[string]*FileOp // path → the op touching it
	nhunks int
}

func (p *parser) errorf(no int, format string, args ...any) error {
	return &ParseError{Line: no, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) parse() (*Patch, error) {
	first, ok := p.r.nextNonBlank()
	if !ok {
		return nil, p.errorf(1, "empty patch; it must start with %q", beginMarker)
	}
	delim, isHeredoc := heredocDelimiter(first.s)
	if isHeredoc {
		if first, ok = p.r.nextNonBlank(); !ok {
			return nil, p.errorf(p.r.no, "heredoc holds no patch; it must start with %q", beginMarker)
		}
	}
	if strings.TrimSpace(first.s) != beginMarker {
		return nil, p.errorf(first.no, "the patch must start with %q, found %s", beginMarker, quote(first.s))
	}
	// The end marker is the last non-blank line (before a heredoc
	// delimiter), so a hunk may carry a "*** End Patch" context line.
	last := lastNonBlank(p.r.text, len(p.r.text))
	if isHeredoc && strings.TrimSpace(p.r.text[last:lineEnd(p.r.text, last)]) == delim && last > 0 {
		last = lastNonBlank(p.r.text, last-1)
	}
	if last <= first.start || strings.TrimSpace(p.r.text[last:lineEnd(p.r.text, last)]) != endMarker {
		no := 1 + strings.Count(p.r.text[:max(last, first.start)], "\n")
		return nil, p.errorf(no, "the patch must end with %q", endMarker)
	}
	p.r.limit = last
	if err := p.sections(); err != nil {
		return nil, err
	}
	if len(p.p.Files) == 0 {
		return nil, p.errorf(p.r.no+1, "the patch contains no file sections; %s", validHeaders)
	}
	return &p.p, nil
}

// lastNonBlank returns the offset of the last line before end that is
// not blank (0 when there is none).
func lastNonBlank(text string, end int) int {
	for end > 0 {
		start := strings.LastIndexByte(text[:end], '\n') + 1
		if strings.TrimSpace(text[start:end]) != "" {
			return start
		}
		end = start - 1
	}
	return 0
}

func lineEnd(text string, start int) int {
	if i := strings.IndexByte(text[start:], '\n'); i >= 0 {
		return start + i
	}
	return len(text)
}

// heredocDelimiter recognizes "apply_patch <<'EOF'", "<<EOF", `<<"EOF"`,
// "<<-EOF" and returns the delimiter.
func heredocDelimiter(s string) (string, bool) {
	s = strings.TrimSpace(s)
	for _, cmd := range []string{"apply_patch", "applypatch"} {
		if rest, ok := strings.CutPrefix(s, cmd); ok {
			s = strings.TrimSpace(rest)
			break
		}
	}
	s, ok := strings.CutPrefix(s, "<<")
	if !ok {
		return "", false
	}
	s = strings.TrimPrefix(s, "-")
	s = strings.TrimSpace(s)
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		s = s[1 : len(s)-1]
	}
	if s == "" {
		return "", false
	}
	for _, c := range []byte(s) {
		if !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return "", false
		}
	}
	return s, true
}

func (p *parser) sections() error {
	for {
		l, ok := p.r.nextNonBlank()
		if !ok {
			return nil
		}
		t := strings.TrimSpace(l.s)
		switch {
		case t == endMarker:
			return p.errorf(l.no, "%q before the end of the patch; send one patch at a time", endMarker)
		case strings.HasPrefix(t, addHeader):
			if err := p.add(l, t); err != nil {
				return err
			}
		case strings.HasPrefix(t, deleteHeader):
			path, err := p.path(l, t, deleteHeader)
			if err != nil {
				return err
			}
			if err := p.claim(path, l.no); err != nil {
				return err
			}
			if err := p.addFile(&FileOp{Kind: Delete, Path: path, Line: l.no}); err != nil {
				return err
			}
		case strings.HasPrefix(t, updateHeader):
			if err := p.update(l, t); err != nil {
				return err
			}
		case strings.HasPrefix(t, moveHeader):
			return p.errorf(l.no, "%q must directly follow an \"*** Update File:\" header", moveHeader)
		case t == eofMarker:
			return p.errorf(l.no, "%q must end the lines of an Update hunk", eofMarker)
		default:
			return p.errorf(l.no, "unexpected line %s; %s", quote(l.s), validHeaders)
		}
	}
}

func (p *parser) addFile(f *FileOp) error {
	if len(p.p.Files) >= MaxFiles {
		return fmt.Errorf("%w: more than %d file sections", ErrTooLarge, MaxFiles)
	}
	p.p.Files = append(p.p.Files, f)
	return nil
}

// isBlank reports a line that an editor may have stripped: empty or
// whitespace not starting with the ' ' context prefix.
func isBlank(s string) bool {
	return strings.TrimSpace(s) == "" && (s == "" || s[0] != ' ')
}

func (p *parser) path(l line, t, header string) (string, error) {
	raw := strings.TrimSpace(strings.TrimPrefix(t, header))
	if raw == "" {
		return "", p.errorf(l.no, "missing path after %q", header)
	}
	clean, err := project.CleanRel(raw)
	if err != nil {
		return "", &ParseError{Line: l.no, Msg: "path refused", Err: err}
	}
	if clean == "." {
		return "", p.errorf(l.no, "the path after %q names the Project root, not a file", header)
	}
	return clean, nil
}

// claim records that path is touched; a path may appear in one section
// only (repeated Update sections are merged by update before claim).
func (p *parser) claim(path string, no int) error {
	if _, dup := p.owner[path]; dup {
		return p.errorf(no, "%s is already touched by an earlier section; a file may appear in one Add, Delete or Move (repeated Update sections are allowed)", path)
	}
	p.owner[path] = nil
	return nil
}

func (p *parser) add(h line, t string) error {
	path, err := p.path(h, t, addHeader)
	if err != nil {
		return err
	}
	if err := p.claim(path, h.no); err != nil {
		return err
	}
	f := &FileOp{Kind: Add, Path: path, Line: h.no}
	var b strings.Builder
	for {
		l, ok := p.r.peek()
		if !ok {
			break
		}
		switch {
		case strings.HasPrefix(l.s, "+"):
			if f.NoFinalNewline {
				return p.errorf(l.no, "content after %q", "\\ No newline at end of file")
			}
			p.r.next()
			b.WriteString(l.s[1:])
			b.WriteByte('\n')
			continue
		case strings.HasPrefix(l.s, `\`) && b.Len() > 0 && !f.NoFinalNewline:
			p.r.next()
			f.NoFinalNewline = true
			continue
		case l.s == "":
			// A bare blank line between "+" lines is an empty content line
			// whose "+" an editor dropped; otherwise it ends the section.
			pos, no := p.r.pos, p.r.no
			p.r.next()
			if n, ok := p.r.peek(); ok && strings.HasPrefix(n.s, "+") && !f.NoFinalNewline {
				b.WriteByte('\n')
				continue
			}
			p.r.pos, p.r.no = pos, no
		}
		break
	}
	f.Content = b.String()
	if f.NoFinalNewline {
		f.Content = strings.TrimSuffix(f.Content, "\n")
	}
	return p.addFile(f)
}

func (p *parser) update(h line, t string) error {
	path, err := p.path(h, t, updateHeader)
	if err != nil {
		return err
	}
	f := &FileOp{Kind: Update, Path: path, Line: h.no}
	if l, ok := p.r.peek(); ok {
		if mt := strings.TrimSpace(l.s); strings.HasPrefix(mt, moveHeader) {
			p.r.next()
			if f.MoveTo, err = p.path(l, mt, moveHeader); err != nil {
				return err
			}
			if f.MoveTo == path {
				f.MoveTo = ""
			}
		}
	}

	// A repeated Update of a file still at its path continues that file.
	merged, section := f, 0
	if prev, seen := p.owner[path]; seen {
		if prev == nil || prev.MoveTo != "" {
			return p.claim(path, h.no)
		}
		merged = prev
		section = prev.Hunks[len(prev.Hunks)-1].section + 1
	} else {
		p.owner[path] = f
	}
	if f.MoveTo != "" {
		if err := p.claim(f.MoveTo, h.no); err != nil {
			return err
		}
		merged.MoveTo = f.MoveTo
	}

	hunks, err := p.hunks(section)
	if err != nil {
		return err
	}
	if len(hunks) == 0 && f.MoveTo == "" {
		return p.errorf(h.no, "Update of %s has no hunks; add \"@@\" followed by context, '-' and '+' lines", path)
	}
	merged.Hunks = append(merged.Hunks, hunks...)
	if merged == f {
		return p.addFile(f)
	}
	return nil
}

// hunks parses the hunks of one Update section, up to the next header.
func (p *parser) hunks(section int) ([]*Hunk, error) {
	var (
		out []*Hunk
		cur *Hunk // open hunk
		// body span of cur
		bodyStart, bodyEnd int
		hasBody            bool
		lastWasBody        bool
	)
	closeHunk := func() error {
		if cur == nil {
			return nil
		}
		if !hasBody {
			return p.errorf(cur.Line, "the hunk has no lines; %s", hunkLineHint)
		}
		cur.body = p.r.text[bodyStart:bodyEnd]
		out = append(out, cur)
		cur, hasBody, lastWasBody = nil, false, false
		return nil
	}
	open := func(no int) error {
		p.nhunks++
		if p.nhunks > MaxHunks {
			return fmt.Errorf("%w: more than %d hunks", ErrTooLarge, MaxHunks)
		}
		cur = &Hunk{Line: no, section: section}
		return nil
	}
	for {
		l, ok := p.r.peek()
		if !ok {
			return out, closeHunk()
		}
		s := l.s
		switch {
		case strings.HasPrefix(s, "*"):
			// Hunk lines never start with '*': this is a marker or header.
			if strings.TrimSpace(s) == eofMarker {
				p.r.next()
				if cur == nil || !hasBody {
					return nil, p.errorf(l.no, "%q must follow the lines of a hunk", eofMarker)
				}
				cur.EndOfFile = true
				if err := closeHunk(); err != nil {
					return nil, err
				}
				continue
			}
			return out, closeHunk()
		case strings.HasPrefix(s, "@@"):
			p.r.next()
			if cur != nil && hasBody {
				if err := closeHunk(); err != nil {
					return nil, err
				}
			}
			if cur == nil {
				if err := open(l.no); err != nil {
					return nil, err
				}
			}
			if a, ok := anchor(s); ok {
				cur.Anchors = append(cur.Anchors, a)
			}
		case isBlank(s) || s[0] == ' ' || s[0] == '+' || s[0] == '-' || s[0] == '\\':
			if cur == nil && strings.TrimSpace(s) == "" {
				p.r.next() // blank line between sections or hunks
				continue
			}
			marker := s != "" && s[0] == '\\'
			if marker {
				if !lastWasBody {
					return nil, p.errorf(l.no, "unexpected %s; only \"\\ No newline at end of file\" may follow a hunk line", quote(s))
				}
				cur.EndOfFile = true
			}
			p.r.next()
			if cur == nil {
				if len(out) > 0 {
					return nil, p.errorf(l.no, "hunk line outside a hunk; start each hunk after the first with \"@@\"")
				}
				if err := open(l.no); err != nil {
					return nil, err
				}
			}
			if !hasBody {
				bodyStart, hasBody = l.start, true
			}
			bodyEnd, lastWasBody = l.end, !marker
		default:
			return nil, p.errorf(l.no, "unexpected line %s in an Update section; %s; or a new section starts (%s)", quote(s), hunkLineHint, validHeaders)
		}
	}
}

// anchor extracts the context line of "@@ text". A bare "@@" and a
// unified-diff range header ("@@ -1,2 +1,3 @@ …") carry none; their
// numbers are never interpreted.
func anchor(s string) (string, bool) {
	rest := strings.TrimPrefix(s, "@@")
	if strings.TrimSpace(rest) == "" || isRangeHeader(rest) {
		return "", false
	}
	if rest[0] == ' ' {
		rest = rest[1:]
	}
	return rest, true
}

// isRangeHeader reports whether s (after the leading "@@") looks like
// " -a[,b] +c[,d] @@…".
func isRangeHeader(s string) bool {
	s = strings.TrimLeft(s, " ")
	for _, sign := range []byte{'-', '+'} {
		if s == "" || s[0] != sign {
			return false
		}
		s = s[1:]
		n := skipDigits(s)
		if n == 0 {
			return false
		}
		s = s[n:]
		if s != "" && s[0] == ',' {
			n = skipDigits(s[1:])
			if n == 0 {
				return false
			}
			s = s[1+n:]
		}
		s = strings.TrimLeft(s, " ")
	}
	return strings.HasPrefix(s, "@@")
}

func skipDigits(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// quote renders a patch line for an error message, shortened.
func quote(s string) string {
	const max = 80
	if len(s) > max {
		cut := max
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		return fmt.Sprintf("%q…", s[:cut])
	}
	return fmt.Sprintf("%q", s)
}
