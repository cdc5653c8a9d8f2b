package process

import (
	"cmp"
	"errors"
	"io"
	"os"
	"sync"
)

// tailRingSize is how much of the latest output is kept in memory once the
// output is truncated (a cap, the owner's share or the total reached), so
// that Tail still shows how the command ended. It exceeds the inline
// output limit (40,000 bytes) on purpose.
const tailRingSize = 64 << 10

// spool is the retained output of one process: the first bytes up to the
// cap (or as far as its owner's share and the total budget allow, but
// never fewer than headKeepSize) in a file (created 0600 at the first
// byte, so that commands without output cost no file), a count of
// everything produced, and (once a bound is hit) a ring with the latest
// bytes. A single goroutine appends; readers
// may run concurrently. Once the output reached its end the file is closed
// (seal) and reads open it on demand, so that finished commands hold no
// descriptor.
type spool struct {
	id     string
	owner  string // whose share the file counts in (Spec.Tenant)
	path   string
	limit  int64
	budget *spoolBudget

	mu        sync.Mutex
	f         *os.File
	fileErr   bool  // the file could not be created: nothing is retained
	retained  int64 // bytes in f
	total     int64 // bytes produced
	truncated bool
	ring      []byte // allocated when truncation starts
	ringLen   int
	ringPos   int
	sealed    bool
	removed   bool
}

func newSpool(id, owner, path string, limit int64, budget *spoolBudget) *spool {
	return &spool{id: id, owner: owner, path: path, limit: limit, budget: budget}
}

// file returns the spool file, creating it on first use (append only).
func (s *spool) file() *os.File {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil && !s.fileErr && !s.removed && !s.sealed {
		f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			s.fileErr = true
			return nil
		}
		s.f = f
	}
	return s.f
}

// append records b. When this call started truncation it returns why:
// one of the Truncated* reasons; "" otherwise.
func (s *spool) append(b []byte) (truncation string) {
	f := s.file()
	s.mu.Lock()
	truncated, retained, removed := s.truncated, s.retained, s.removed
	s.mu.Unlock()
	var written int64
	var cut string // which bound keeps part of b out of the file
	if !truncated && !removed && f != nil {
		want := min(int64(len(b)), s.limit-retained)
		if want < int64(len(b)) {
			cut = TruncatedCommandCap
		}
		if want > 0 {
			granted, budgetCut := s.budget.reserve(s.id, s.owner, retained, want)
			if granted < want {
				cut = budgetCut
			}
			want = granted
		}
		if want > 0 {
			n, _ := f.WriteAt(b[:want], retained)
			written = int64(n)
			if written < want {
				s.budget.release(s.id, want-written)
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total += int64(len(b))
	s.retained += written
	if written == int64(len(b)) {
		return ""
	}
	if !s.truncated {
		s.truncated = true
		truncation = cmp.Or(cut, TruncatedFileError) // no bound: the file failed
		s.ring = make([]byte, tailRingSize)
		// Seed the ring with the end of what the file holds.
		n := min(s.retained, tailRingSize)
		if n > 0 && s.f != nil {
			m, _ := s.f.ReadAt(s.ring[:n], s.retained-n)
			s.ringLen, s.ringPos = m, m%tailRingSize
		}
	}
	s.pushRing(b[written:])
	return truncation
}

func (s *spool) pushRing(b []byte) {
	if len(b) >= tailRingSize {
		copy(s.ring, b[len(b)-tailRingSize:])
		s.ringLen, s.ringPos = tailRingSize, 0
		return
	}
	n := copy(s.ring[s.ringPos:], b)
	if n < len(b) {
		copy(s.ring, b[n:])
	}
	s.ringPos = (s.ringPos + len(b)) % tailRingSize
	s.ringLen = min(tailRingSize, s.ringLen+len(b))
}

// sizes returns the retained and total byte counts and the truncation flag.
func (s *spool) sizes() (retained, total int64, truncated bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.retained, s.total, s.truncated
}

// readAt reads up to n retained bytes from off. It returns io.EOF (with no
// data) at or past the end of the retained output.
func (s *spool) readAt(off int64, n int) ([]byte, error) {
	if off < 0 || n < 0 {
		return nil, errors.New("negative offset or length")
	}
	s.mu.Lock()
	size, removed, f := s.retained, s.removed, s.f
	s.mu.Unlock()
	if removed {
		return nil, os.ErrClosed
	}
	if off >= size {
		return nil, io.EOF
	}
	buf := make([]byte, min(int64(n), size-off))
	var m int
	var err error
	if f != nil {
		m, err = f.ReadAt(buf, off)
	}
	if f == nil || errors.Is(err, os.ErrClosed) { // sealed (maybe meanwhile)
		m, err = readFileAt(s.path, buf, off)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:m], nil
}

// readFileAt opens path just for one read.
func readFileAt(path string, buf []byte, off int64) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.ReadAt(buf, off)
}

// seal closes the file once no more output can come; reads reopen it.
func (s *spool) seal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sealed = true
	if s.f != nil {
		_ = s.f.Close()
		s.f = nil
	}
}

// tailBytes returns the ring's content when output was truncated (the
// latest bytes, which the file lacks), nil otherwise.
func (s *spool) tailBytes() []byte {
	s.mu.Lock()
	truncated := s.truncated
	s.mu.Unlock()
	if !truncated {
		return nil
	}
	return s.tail(tailRingSize)
}

// tail returns the last n bytes the command produced: from the file while
// nothing was dropped, from the ring (at most tailRingSize bytes) after.
func (s *spool) tail(n int) []byte {
	if n <= 0 {
		return nil
	}
	s.mu.Lock()
	if s.truncated {
		defer s.mu.Unlock()
		n = min(n, s.ringLen)
		out := make([]byte, n)
		start := (s.ringPos - n + tailRingSize) % tailRingSize
		m := copy(out, s.ring[start:min(tailRingSize, start+n)])
		copy(out[m:], s.ring[:n-m])
		return out
	}
	size := s.retained
	s.mu.Unlock()
	n = int(min(int64(n), size))
	b, _ := s.readAt(size-int64(n), n)
	return b
}

// remove closes and deletes the file and returns its bytes to the budget.
func (s *spool) remove() error {
	s.mu.Lock()
	if s.removed {
		s.mu.Unlock()
		return nil
	}
	s.removed = true
	f := s.f
	s.f = nil
	s.mu.Unlock()
	s.budget.forget(s.id)
	var cerr error
	if f != nil {
		cerr = f.Close()
	}
	if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return cerr
}

// Retained is the output of a finished command that the server no longer
// tracks in memory (it was handed over to the retention, or it survived a
// restart), read from its spool file on demand. Its methods mirror
// Process's output accessors.
type Retained struct {
	path string
	size int64
	tail []byte // the latest bytes when the output was truncated
}

// Retained returns the reader of spool id's file holding size bytes; tail
// is what Process.TailRing returned (nil when nothing was dropped).
func (m *Manager) Retained(id string, size int64, tail []byte) *Retained {
	return &Retained{path: m.spoolPath(id), size: size, tail: tail}
}

// ReadAt is Process.ReadAt.
func (r *Retained) ReadAt(off int64, n int) ([]byte, error) {
	if off < 0 || n < 0 {
		return nil, errors.New("negative offset or length")
	}
	if off >= r.size {
		return nil, io.EOF
	}
	buf := make([]byte, min(int64(n), r.size-off))
	m, err := readFileAt(r.path, buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:m], nil
}

// Head is Process.Head.
func (r *Retained) Head(n int) []byte {
	b, _ := r.ReadAt(0, max(n, 0))
	return b
}

// Tail is Process.Tail.
func (r *Retained) Tail(n int) []byte {
	if n <= 0 {
		return nil
	}
	if r.tail != nil {
		return r.tail[len(r.tail)-min(n, len(r.tail)):]
	}
	n = int(min(int64(n), r.size))
	b, _ := r.ReadAt(r.size-int64(n), n)
	return b
}
