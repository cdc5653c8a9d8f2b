package files

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"unicode/utf8"

	"github.com/devspace-dev/devspace/internal/project"
)

// errChanged makes stableRead try again: the file or the path changed while
// it was read.
var errChanged = errors.New("changed during read")

// stableRead reads the file rel through root until one pass sees the same
// size and mtime before and after it, at most maxAttempts times, and returns
// that pass. refuseSensitive applies the sensitive-file check to the real
// path. w is the window to collect; it is reset before each attempt. buf is
// the read buffer.
func (r *Reader) stableRead(ctx context.Context, root *os.Root, rel string, refuseSensitive bool, w *window, buf []byte) (*pass, error) {
	initial := *w
	for range maxAttempts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		*w = initial
		w.out, w.cur = initial.out[:0], initial.cur[:0]
		p, err := r.readOnce(ctx, root, rel, refuseSensitive, w, buf)
		if errors.Is(err, errChanged) {
			initial.out, initial.cur = w.out, w.cur // reuse the buffers
			continue
		}
		return p, err
	}
	return nil, ErrUnstable
}

// readOnce makes one attempt of stableRead.
func (r *Reader) readOnce(ctx context.Context, root *os.Root, rel string, refuseSensitive bool, w *window, buf []byte) (*pass, error) {
	if r.beforeOpen != nil {
		r.beforeOpen()
	}
	// project.Open walks the path without following links and judges the
	// real path of what it opened; the Stat of the open file decides the
	// rest, so nothing swapped in after a check is read.
	f, _, err := project.Open(root, rel, !refuseSensitive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := checkMode(before); err != nil {
		return nil, err
	}
	size := before.Size()
	if size > r.limits.MaxFileBytes {
		return nil, ErrTooLarge
	}
	p := &pass{hash: sha256.New(), win: w}
	// Read at most one byte more than the size: enough to see growth,
	// bounded even if a writer keeps appending.
	for p.seen <= size {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := f.Read(buf[:min(int64(len(buf)), size+1-p.seen)])
		if n > 0 {
			p.write(buf[:n])
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read: %w", project.Scrub(err))
		}
	}
	p.finish()
	if r.afterScan != nil {
		r.afterScan()
	}
	after, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if p.seen != size || after.Size() != size || !after.ModTime().Equal(before.ModTime()) {
		return nil, errChanged
	}
	p.size = size
	p.version = Version{ContentHash: formatHash(p.hash.Sum(nil)), MtimeNs: before.ModTime().UnixNano()}
	return p, nil
}

func checkMode(fi os.FileInfo) error {
	switch {
	case fi.IsDir():
		return ErrIsDirectory
	case !fi.Mode().IsRegular():
		return ErrNotRegular
	}
	return nil
}

// pass is one read of a whole file: its hash, line statistics and window.
type pass struct {
	hash    hash.Hash
	win     *window
	seen    int64 // bytes read
	last    byte  // last byte read
	prevCR  bool  // the previous chunk ended with '\r'
	nLF     int   // '\n' bytes
	nCRLF   int   // "\r\n" pairs
	size    int64
	version Version
}

var (
	lf   = []byte{'\n'}
	crlf = []byte{'\r', '\n'}
)

func (p *pass) write(b []byte) {
	p.hash.Write(b)
	if p.seen < sniffBytes && bytes.IndexByte(b[:min(int64(len(b)), sniffBytes-p.seen)], 0) >= 0 {
		p.win.binary = true
	}
	p.seen += int64(len(b))
	p.nLF += bytes.Count(b, lf)
	p.nCRLF += bytes.Count(b, crlf)
	if p.prevCR && b[0] == '\n' {
		p.nCRLF++
	}
	p.prevCR = b[len(b)-1] == '\r'
	p.last = b[len(b)-1]
	p.win.write(b)
}

// finish ends the pass at EOF.
func (p *pass) finish() {
	if p.seen > 0 && p.last != '\n' {
		p.win.endFile() // an unterminated last line
	}
}

// totalLines counts a last line without terminator.
func (p *pass) totalLines() int {
	if p.seen > 0 && p.last != '\n' {
		return p.nLF + 1
	}
	return p.nLF
}

func (p *pass) lineEnding() string {
	switch {
	case p.nLF == 0:
		return ""
	case p.nCRLF == 0:
		return LineEndingLF
	case p.nCRLF == p.nLF:
		return LineEndingCRLF
	}
	return LineEndingMixed
}

// window collects the lines [off, end) of a file streamed through write,
// holding at most its output and one capped line.
type window struct {
	off, end int
	budget   int  // characters Content may still take
	full     bool // the budget is the largest an item gets: a long line may be cut
	lineCap  int  // bytes of the current line kept

	line      int  // index of the line the next byte belongs to
	stopped   bool // no more lines are kept (caps reached)
	cur       []byte
	curCut    bool // bytes of the current line were dropped
	utf       utf8Stream
	out       []byte
	lines     int
	truncated bool
	binary    bool
}

func (w *window) write(b []byte) {
	for len(b) > 0 && w.line < w.end && !w.binary {
		i := bytes.IndexByte(b, '\n')
		if w.line < w.off {
			if i < 0 {
				return
			}
			w.line++
			b = b[i+1:]
			continue
		}
		seg := b
		if i >= 0 {
			seg = b[:i]
		}
		// Lines of the window are checked even when the caps leave them
		// out, so Binary does not depend on the caps.
		if bytes.IndexByte(seg, 0) >= 0 || !w.utf.write(seg) {
			w.binary = true
			return
		}
		if !w.stopped {
			keep := min(len(seg), w.lineCap-len(w.cur))
			w.cur = append(w.cur, seg[:keep]...)
			if keep < len(seg) {
				w.curCut = true
			}
		}
		if i < 0 {
			return
		}
		w.endLine(true)
		w.line++
		b = b[i+1:]
	}
}

// endFile ends an unterminated last line.
func (w *window) endFile() {
	if !w.binary && w.line >= w.off && w.line < w.end {
		w.endLine(false)
	}
}

func (w *window) endLine(terminated bool) {
	if !w.utf.flush() {
		w.binary = true
		return
	}
	if w.stopped {
		return
	}
	line := w.cur
	if terminated && !w.curCut && len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	need := utf8.RuneCount(line)
	if terminated {
		need++
	}
	switch {
	case !w.curCut && need <= w.budget:
		w.out = append(w.out, line...)
		if terminated {
			w.out = append(w.out, '\n')
		}
		w.budget -= need
		w.lines++
	case w.lines == 0 && w.full && w.budget > 0:
		// Longer than any item may be: return its head. lineCap keeps
		// more than budget characters, so the cut is on a rune boundary.
		w.out = append(w.out, line[:runePrefix(line, w.budget)]...)
		w.budget -= utf8.RuneCount(w.out)
		w.lines = 1
		w.truncated = true
		w.stopped = true
	default:
		w.truncated = true
		w.stopped = true
	}
	w.cur = w.cur[:0]
	w.curCut = false
}

// runePrefix returns the length in bytes of the first n runes of b.
func runePrefix(b []byte, n int) int {
	i := 0
	for ; n > 0 && i < len(b); n-- {
		_, size := utf8.DecodeRune(b[i:])
		i += size
	}
	return i
}

// utf8Stream validates UTF-8 written in pieces; a rune may span pieces.
type utf8Stream struct {
	pend [utf8.UTFMax]byte
	n    int
}

// write reports whether b, after the pending bytes, is valid so far.
func (u *utf8Stream) write(b []byte) bool {
	if u.n > 0 {
		for u.n < utf8.UTFMax && len(b) > 0 && !utf8.FullRune(u.pend[:u.n]) {
			u.pend[u.n] = b[0]
			u.n++
			b = b[1:]
		}
		if !utf8.FullRune(u.pend[:u.n]) {
			return true // b is used up; wait for more
		}
		if r, size := utf8.DecodeRune(u.pend[:u.n]); r == utf8.RuneError && size <= 1 {
			return false
		}
		u.n = 0
	}
	// Hold back an incomplete rune at the end of b.
	k := len(b)
	for i := len(b) - 1; i >= 0 && i > len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				k = i
			}
			break
		}
	}
	if !utf8.Valid(b[:k]) {
		return false
	}
	u.n = copy(u.pend[:], b[k:])
	return true
}

// flush ends the text and reports whether no incomplete rune was pending.
func (u *utf8Stream) flush() bool {
	ok := u.n == 0
	u.n = 0
	return ok
}
