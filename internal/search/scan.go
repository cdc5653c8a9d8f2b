package search

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"unicode/utf8"
)

// errBinary is returned by scanner.scan for a file with a NUL byte in its
// first binaryProbeBytes: grep skips it.
var errBinary = errors.New("binary file")

// errTooLarge is returned by scanner.scan for a file that grew past
// scanParams.maxFileBytes while it was read.
var errTooLarge = errors.New("file too large")

// ellipsis marks where a line was cut.
const ellipsis = "…"

// scanner searches files for one matcher, holding a bounded buffer: memory
// does not depend on file or line sizes. A line longer than the buffer is
// searched in windows that overlap by matcher.overlap bytes (exact for a
// literal; for an expression, a match longer than 4 KiB across a cut, or
// one relying on "^" at a cut, may be missed), and is reported at most
// once. One goroutine uses a scanner at a time.
type scanner struct {
	buf     []byte
	scratch []byte
}

// scanParams are the per-operation settings of a scan.
type scanParams struct {
	m          *matcher
	maxChars   int // per shown line
	context    int
	maxMatches int // stop after this many
	maxBytes   int // stop once the matches' size reaches this
	// maxFileBytes: a file that turns out longer than this while read
	// (fstat said less, and it grew) is errTooLarge.
	maxFileBytes int64
}

// scanState is one file's scan.
type scanState struct {
	p       *scanParams
	sc      *scanner
	rel     string
	lineNo  int // number of the line starting the unprocessed data
	matches []Match
	size    int // output bytes of matches
	done    bool
	// ring holds the shown text of the lines just before the unprocessed
	// data, oldest first, at most p.context.
	ring []string
	// pending lists matches still owed After lines: index and count.
	pending []owed
	long    longLine
}

type owed struct{ idx, left int }

// longLine tracks a line longer than the buffer while it is read.
type longLine struct {
	active  bool
	matched bool
	first   bool   // the current window starts the line
	head    string // the line's shown text when used as context
}

// scan reads r (size is a hint from fstat; 0 when unknown) and returns the
// matching lines of the file named rel. It returns errBinary for a binary
// file and ctx.Err() when cancelled.
func (sc *scanner) scan(ctx context.Context, p *scanParams, r io.Reader, size int64, rel string) ([]Match, error) {
	s := scanState{p: p, sc: sc, rel: rel, lineNo: 1}
	buf := sc.buf
	filled, total := 0, int64(0)
	eof, first := false, true
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for !eof && filled < len(buf) {
			n, err := r.Read(buf[filled:])
			filled += n
			total += int64(n)
			switch {
			case errors.Is(err, io.EOF), err == nil && n == 0:
				eof = true
			case err != nil:
				return nil, err
			case p.maxFileBytes > 0 && total > p.maxFileBytes:
				// The callers skip files fstat says are larger: this is
				// one that grew meanwhile, which nothing else stops when
				// fstat said 0.
				return nil, errTooLarge
			case size > 0 && total >= size:
				// The size fstat gave is read: skip the extra read that
				// would return EOF. A file growing meanwhile is cut here.
				eof = true
			}
		}
		if first {
			first = false
			if bytes.IndexByte(buf[:min(filled, binaryProbeBytes)], 0) >= 0 {
				return nil, errBinary
			}
		}
		if filled == 0 {
			break
		}
		data := buf[:filled]
		end, next := -1, 0 // data[:end] holds complete lines; data[next:] is carried over
		if eof {
			end, next = filled, filled
			if data[end-1] == '\n' {
				end--
			}
		} else if nl := bytes.LastIndexByte(data, '\n'); nl >= 0 {
			end, next = nl, nl+1
		}
		if end < 0 {
			keep := s.window(data)
			if s.done && len(s.pending) == 0 {
				break
			}
			filled = copy(buf, data[len(data)-keep:])
			continue
		}
		start := 0
		if s.long.active {
			nl := bytes.IndexByte(data[:end], '\n')
			if nl < 0 {
				nl = end
			}
			s.tail(data[:nl])
			start = nl + 1
		}
		if start <= end {
			s.region(data[start:end])
		}
		if eof || s.done && len(s.pending) == 0 {
			break
		}
		filled = copy(buf, data[next:])
	}
	return s.matches, nil
}

// region handles data[...] made of complete lines (separated by '\n', the
// last one's terminator excluded) starting at line s.lineNo.
func (s *scanState) region(r []byte) {
	// First the lines owed to earlier matches as After context.
	for pos := 0; len(s.pending) > 0 && pos <= len(r); {
		le := lineEnd(r, pos)
		s.owe(r[pos:le])
		pos = le + 1
	}
	line, counted := s.lineNo, 0
	if !s.done {
		s.p.m.each(r, &s.sc.scratch, func(ls, le, at int) bool {
			line += bytes.Count(r[counted:ls], newline)
			counted = ls
			s.add(r, ls, le, at, line)
			return !s.done
		})
	}
	s.lineNo = line + bytes.Count(r[counted:], newline) + 1
	s.remember(r)
}

var newline = []byte{'\n'}

func lineEnd(r []byte, pos int) int {
	if i := bytes.IndexByte(r[pos:], '\n'); i >= 0 {
		return pos + i
	}
	return len(r)
}

// add records the match on r[ls:le] (line number line, match at ls+at).
func (s *scanState) add(r []byte, ls, le, at, line int) {
	m := Match{Path: s.rel, Line: line, Text: cutAround(r[ls:le], at, s.p.maxChars, false, false)}
	if c := s.p.context; c > 0 {
		// Before: lines of r above ls, then the ring for what r lacks.
		var before []string
		for end := ls - 1; len(before) < c && end >= 0; {
			st := bytes.LastIndexByte(r[:end], '\n') + 1
			before = append(before, cutHead(r[st:end], s.p.maxChars))
			end = st - 1
		}
		for i := len(s.ring) - 1; len(before) < c && i >= 0; i-- {
			before = append(before, s.ring[i])
		}
		for i, j := 0, len(before)-1; i < j; i, j = i+1, j-1 {
			before[i], before[j] = before[j], before[i]
		}
		m.Before = before
		// After: the lines of r below le; the rest is owed.
		for pos := le + 1; len(m.After) < c && pos <= len(r); {
			e := lineEnd(r, pos)
			m.After = append(m.After, cutHead(r[pos:e], s.p.maxChars))
			pos = e + 1
		}
		if left := c - len(m.After); left > 0 {
			s.pending = append(s.pending, owed{len(s.matches), left})
		}
	}
	s.matches = append(s.matches, m)
	s.size += matchBytes(&m)
	if len(s.matches) >= s.p.maxMatches || s.size >= s.p.maxBytes {
		s.done = true
	}
}

func matchBytes(m *Match) int {
	n := len(m.Path) + len(m.Text) + resultOverheadBytes
	for _, l := range m.Before {
		n += len(l) + 3
	}
	for _, l := range m.After {
		n += len(l) + 3
	}
	return n
}

// owe and oweText give one line to the matches still owed After context.
func (s *scanState) owe(line []byte) { s.oweText(cutHead(line, s.p.maxChars)) }

func (s *scanState) oweText(text string) {
	kept := s.pending[:0]
	for _, o := range s.pending {
		m := &s.matches[o.idx]
		m.After = append(m.After, text)
		s.size += len(text) + 3
		if o.left--; o.left > 0 {
			kept = append(kept, o)
		}
	}
	s.pending = kept
}

// remember keeps the shown text of r's last lines as context for what
// follows.
func (s *scanState) remember(r []byte) {
	c := s.p.context
	if c == 0 {
		return
	}
	var last []string
	for end := len(r); len(last) < c; {
		st := bytes.LastIndexByte(r[:end], '\n') + 1
		last = append(last, cutHead(r[st:end], s.p.maxChars))
		if st == 0 {
			break
		}
		end = st - 1
	}
	for i := len(last) - 1; i >= 0; i-- {
		s.pushRing(last[i])
	}
}

func (s *scanState) pushRing(text string) {
	if s.p.context == 0 {
		return
	}
	if len(s.ring) == s.p.context {
		copy(s.ring, s.ring[1:])
		s.ring = s.ring[:len(s.ring)-1]
	}
	s.ring = append(s.ring, text)
}

// window handles a full buffer without a newline: part of a line longer
// than the buffer. It returns how many trailing bytes to keep for the next
// window.
func (s *scanState) window(data []byte) int {
	if !s.long.active {
		head := data[:min(len(data), s.p.maxChars*utf8.UTFMax)]
		s.long = longLine{active: true, first: true, head: cutAround(head, 0, s.p.maxChars, false, true)}
		if len(s.pending) > 0 {
			s.oweText(s.long.head)
		}
	}
	s.searchLong(data, false)
	s.long.first = false
	if s.long.matched {
		return 0
	}
	return min(s.p.m.overlap(), len(data)/2)
}

// tail handles the end of a long line.
func (s *scanState) tail(data []byte) {
	s.searchLong(data, true)
	s.pushRing(s.long.head)
	s.lineNo++
	s.long = longLine{}
}

func (s *scanState) searchLong(data []byte, last bool) {
	if s.long.matched || s.done {
		return
	}
	s.p.m.each(data, &s.sc.scratch, func(_, _, at int) bool {
		s.long.matched = true
		m := Match{Path: s.rel, Line: s.lineNo, Text: cutAround(data, at, s.p.maxChars, !s.long.first, !last)}
		if c := s.p.context; c > 0 {
			m.Before = append([]string(nil), s.ring...)
			s.pending = append(s.pending, owed{len(s.matches), c})
		}
		s.matches = append(s.matches, m)
		s.size += matchBytes(&m)
		if len(s.matches) >= s.p.maxMatches || s.size >= s.p.maxBytes {
			s.done = true
		}
		return false
	})
}

// cutHead returns line (without a trailing '\r') as text of at most
// maxChars characters, ending in "…" when cut.
func cutHead(line []byte, maxChars int) string {
	return cutAround(line, 0, maxChars, false, false)
}

// cutAround returns line (without a trailing '\r') as text of at most
// maxChars characters that shows the byte offset at: when the line is too
// long, a window starting a little before at, with "…" at each cut end.
// cutBefore and cutAfter say the line already lacks its start or its end.
func cutAround(line []byte, at, maxChars int, cutBefore, cutAfter bool) string {
	if !cutAfter {
		line = bytes.TrimSuffix(line, []byte{'\r'})
	}
	if !cutBefore && !cutAfter && (len(line) <= maxChars || utf8.RuneCount(line) <= maxChars) {
		return validText(line)
	}
	room := maxChars - 2 // for the two marks, at most
	at = min(max(at, 0), len(line))
	// Start about a fifth of the room before the match, on a rune start.
	start := at
	for back := room / 5; back > 0 && start > 0; back-- {
		_, w := utf8.DecodeLastRune(line[:start])
		start -= w
	}
	end := start
	for n := 0; n < room && end < len(line); n++ {
		_, w := utf8.DecodeRune(line[end:])
		end += w
	}
	// Use leftover room before the start when the end was reached.
	for n := utf8.RuneCount(line[start:end]); n < room && start > 0; n++ {
		_, w := utf8.DecodeLastRune(line[:start])
		start -= w
	}
	var b strings.Builder
	b.Grow(end - start + 2*len(ellipsis))
	if start > 0 || cutBefore {
		b.WriteString(ellipsis)
	}
	b.WriteString(validText(line[start:end]))
	if end < len(line) || cutAfter {
		b.WriteString(ellipsis)
	}
	return b.String()
}

func validText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
