package process

import (
	"os"
	"sync"
)

// MaxStdinBytes bounds one write to a command's stdin (docs/design.md §9).
const MaxStdinBytes = 1 << 20

// maxStdinQueued bounds input waiting for a command that does not read.
const maxStdinQueued = 4 << 20

// stdinQueue feeds a command's stdin from one goroutine so that a command
// that does not read never blocks the caller; memory is bounded by
// maxStdinQueued.
type stdinQueue struct {
	f   *os.File // pipe write end, or the pty master (shared with output)
	pty bool

	mu      sync.Mutex
	cond    *sync.Cond
	buf     []byte
	closing bool // close once buf is written
	closed  bool // no more input accepted
	stop    bool
}

func newStdinQueue(f *os.File, pty bool) *stdinQueue {
	q := &stdinQueue{f: f, pty: pty}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *stdinQueue) enqueue(b []byte) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.closing {
		return ErrStdinClosed
	}
	if len(q.buf)+len(b) > maxStdinQueued {
		return ErrStdinFull
	}
	q.buf = append(q.buf, b...)
	q.cond.Signal()
	return nil
}

// isClosed reports whether input is no longer accepted.
func (q *stdinQueue) isClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed || q.closing
}

// close asks for stdin to be closed after the queued input: the pipe is
// closed, or under a pty one EOF character (Ctrl-D) is sent.
func (q *stdinQueue) close() {
	q.mu.Lock()
	q.closing = true
	q.cond.Signal()
	q.mu.Unlock()
}

// abort drops queued input and unblocks a pending write. The pty master is
// closed by its owner (the output side).
func (q *stdinQueue) abort() {
	q.mu.Lock()
	q.stop, q.closed, q.buf = true, true, nil
	q.cond.Signal()
	q.mu.Unlock()
	if !q.pty {
		_ = q.f.Close()
	}
}

func (q *stdinQueue) run() {
	for {
		q.mu.Lock()
		for len(q.buf) == 0 && !q.closing && !q.stop {
			q.cond.Wait()
		}
		if q.stop {
			q.mu.Unlock()
			return
		}
		if len(q.buf) == 0 {
			q.closed = true
			q.mu.Unlock()
			if q.pty {
				_, _ = q.f.Write([]byte{4}) // VEOF
			} else {
				_ = q.f.Close()
			}
			return
		}
		chunk := q.buf
		q.buf = nil
		q.mu.Unlock()
		if _, err := q.f.Write(chunk); err != nil {
			q.mu.Lock()
			q.closed, q.buf = true, nil
			q.mu.Unlock()
			if !q.pty {
				_ = q.f.Close()
			}
			return
		}
	}
}
