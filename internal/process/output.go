package process

import (
	"errors"
	"io"
	"os"
	"sync"
)

// tailRingSize is how much of the latest output is kept in memory once the
// spool is full, so that Tail still shows how the command ended. It exceeds
// the inline output limit (40,000 bytes) on purpose.
const tailRingSize = 64 << 10

// spoolBudget bounds the bytes all spools of one Manager may retain.
type spoolBudget struct {
	mu          sync.Mutex
	used, limit int64
}

// reserve grants up to n bytes.
func (b *spoolBudget) reserve(n int64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	n = max(0, min(n, b.limit-b.used))
	b.used += n
	return n
}

func (b *spoolBudget) release(n int64) {
	b.mu.Lock()
	b.used = max(0, b.used-n)
	b.mu.Unlock()
}

// spool is the retained output of one process: the first bytes up to the
// cap in a file (created 0600 at the first byte, so that commands without
// output cost no file), a count of everything produced, and (once the cap
// is hit) a ring with the latest bytes. A single goroutine appends; readers
// may run concurrently.
type spool struct {
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
	removed   bool
}

func newSpool(path string, limit int64, budget *spoolBudget) *spool {
	return &spool{path: path, limit: limit, budget: budget}
}

// file returns the spool file, creating it on first use (append only).
func (s *spool) file() *os.File {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil && !s.fileErr && !s.removed {
		f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			s.fileErr = true
			return nil
		}
		s.f = f
	}
	return s.f
}

// append records b. It reports whether this call started truncation.
func (s *spool) append(b []byte) (startedTruncation bool) {
	f := s.file()
	s.mu.Lock()
	truncated, retained, removed := s.truncated, s.retained, s.removed
	s.mu.Unlock()
	var written int64
	if !truncated && !removed && f != nil {
		want := min(int64(len(b)), s.limit-retained)
		if want > 0 {
			want = s.budget.reserve(want)
		}
		if want > 0 {
			n, _ := f.WriteAt(b[:want], retained)
			written = int64(n)
			if written < want {
				s.budget.release(want - written)
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total += int64(len(b))
	s.retained += written
	if written == int64(len(b)) {
		return false
	}
	if !s.truncated {
		s.truncated = true
		startedTruncation = true
		s.ring = make([]byte, tailRingSize)
		// Seed the ring with the end of what the file holds.
		n := min(s.retained, tailRingSize)
		if n > 0 && s.f != nil {
			m, _ := s.f.ReadAt(s.ring[:n], s.retained-n)
			s.ringLen, s.ringPos = m, m%tailRingSize
		}
	}
	s.pushRing(b[written:])
	return startedTruncation
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
	n = int(min(int64(n), size-off))
	buf := make([]byte, n)
	m, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:m], nil
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
	retained, f := s.retained, s.f
	s.mu.Unlock()
	s.budget.release(retained)
	if f == nil {
		return nil
	}
	cerr := f.Close()
	if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return cerr
}
