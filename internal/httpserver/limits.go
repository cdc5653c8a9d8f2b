package httpserver

import (
	"container/list"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// Default edge limits; Limits' zero fields mean these.
const (
	DefaultMaxConnections    = 512
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultBodyIdleTimeout   = 15 * time.Second
	DefaultBodyTimeout       = 2 * time.Minute
	DefaultIdleTimeout       = 2 * time.Minute
)

// Limits bound what a client may hold on the public listener. The zero
// value means the defaults above.
type Limits struct {
	// MaxConnections bounds open connections. At the bound the oldest
	// connection that is not serving a request (new, or idle between
	// requests) is closed to make room, else the oldest one still sending
	// its request body; if every connection is running a handler, the new
	// one is closed.
	MaxConnections int
	// ReadHeaderTimeout bounds the time to send a request's headers.
	ReadHeaderTimeout time.Duration
	// BodyIdleTimeout bounds a pause while a body arrives; BodyTimeout
	// bounds the whole body. A body that misses either fails with
	// ErrBodyTimeout, which handlers answer with 408.
	BodyIdleTimeout, BodyTimeout time.Duration
	// IdleTimeout bounds a keep-alive connection between requests.
	IdleTimeout time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.MaxConnections <= 0 {
		l.MaxConnections = DefaultMaxConnections
	}
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if l.BodyIdleTimeout <= 0 {
		l.BodyIdleTimeout = DefaultBodyIdleTimeout
	}
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = DefaultBodyTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	return l
}

// ErrBodyTimeout is the error a request body read returns when the client
// paused longer than Limits.BodyIdleTimeout or took longer than
// Limits.BodyTimeout. It matches os.ErrDeadlineExceeded, so packages below
// httpserver recognize it without importing it (errors.Is).
var ErrBodyTimeout error = bodyTimeoutError{}

type bodyTimeoutError struct{}

func (bodyTimeoutError) Error() string        { return "request body timed out" }
func (bodyTimeoutError) Timeout() bool        { return true }
func (bodyTimeoutError) Is(target error) bool { return target == os.ErrDeadlineExceeded }

// bodyDeadline guards every request body with read deadlines on the
// connection (http.ResponseController): each read must make progress
// within idle, and the whole body must arrive within total. The deadline
// stays set after a timeout so the server drops the connection instead of
// draining the rest of the body.
func bodyDeadline(next http.Handler, idle, total time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A connection counts as receiving from here until its body is read
		// to the end, also while the server drains a body the handler left
		// unread: that is when a slow client holds it.
		lc, _ := r.Context().Value(connCtxKey{}).(*limitedConn)
		if r.Body == nil || r.Body == http.NoBody {
			lc.setReceiving(false)
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		switch err := rc.SetReadDeadline(time.Now().Add(idle)); {
		case err == nil:
			lc.setReceiving(true)
			r.Body = &guardedBody{ReadCloser: r.Body, rc: rc, idle: idle, end: time.Now().Add(total), conn: lc}
		case !errors.Is(err, http.ErrNotSupported):
			return // the connection is gone
		}
		next.ServeHTTP(w, r)
	})
}

type guardedBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	idle time.Duration
	end  time.Time
	done bool
	conn *limitedConn // nil when the listener is not bounded
}

func (b *guardedBody) Read(p []byte) (int, error) {
	if b.done {
		return b.ReadCloser.Read(p)
	}
	now := time.Now()
	if !now.Before(b.end) {
		b.done = true
		return 0, ErrBodyTimeout
	}
	deadline := now.Add(b.idle)
	if b.end.Before(deadline) {
		deadline = b.end
	}
	_ = b.rc.SetReadDeadline(deadline)
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == nil:
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.done = true
		return n, ErrBodyTimeout
	default:
		b.conn.setReceiving(false)
		// EOF or another failure: the body is over. net/http clears the
		// deadline itself when it starts its background read after EOF;
		// clear it here too so a long handler is not cut off.
		b.done = true
		if err == io.EOF {
			_ = b.rc.SetReadDeadline(time.Time{})
		}
	}
	return n, err
}

// connLimiter bounds the connections a listener hands out. It learns each
// connection's state from http.Server.ConnState so that, at the bound, it
// can close the oldest connection that is not serving a request, and at
// shutdown the ones that never sent one (drain).
type connLimiter struct {
	net.Listener
	max int

	mu    sync.Mutex
	conns list.List // of *limitedConn, oldest at the front
	// draining is set by drain: connections accepted after it are closed.
	draining bool
}

type limitedConn struct {
	net.Conn
	l *connLimiter
	// el and state are guarded by l.mu; el is nil once the connection is
	// no longer counted.
	el    *list.Element
	state http.ConnState
	// receiving is true while a handler runs whose request body has not
	// been read to its end: such a connection may be a slow client.
	receiving bool
}

type connCtxKey struct{}

// setReceiving records whether c's request body is still arriving; a nil
// c (an unbounded listener) does nothing.
func (c *limitedConn) setReceiving(v bool) {
	if c == nil {
		return
	}
	c.l.mu.Lock()
	c.receiving = v
	c.l.mu.Unlock()
}

// connContext puts the bounded connection into each request's context;
// install it as http.Server.ConnContext.
func (l *connLimiter) connContext(ctx context.Context, c net.Conn) context.Context {
	if lc, ok := c.(*limitedConn); ok {
		return context.WithValue(ctx, connCtxKey{}, lc)
	}
	return ctx
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.l.mu.Lock()
	c.l.forgetLocked(c)
	c.l.mu.Unlock()
	return err
}

func (l *connLimiter) forgetLocked(c *limitedConn) {
	if c.el != nil {
		l.conns.Remove(c.el)
		c.el = nil
	}
}

func newConnLimiter(ln net.Listener, max int) *connLimiter {
	return &connLimiter{Listener: ln, max: max}
}

// Accept returns the next connection, first making room for it.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		if l.draining {
			l.mu.Unlock()
			c.Close()
			continue
		}
		var victim *limitedConn
		if l.conns.Len() >= l.max {
			victim = l.victimLocked()
			if victim == nil {
				l.mu.Unlock()
				c.Close() // every connection is serving a request
				continue
			}
			// Count the victim out now, so a burst cannot evict the same
			// connection twice and overshoot the bound.
			l.forgetLocked(victim)
		}
		lc := &limitedConn{Conn: c, l: l, state: http.StateNew}
		lc.el = l.conns.PushBack(lc)
		l.mu.Unlock()
		if victim != nil {
			victim.Conn.Close()
		}
		return lc, nil
	}
}

// victimLocked picks the connection to close at the bound: the oldest
// that serves no request, else the oldest still sending its body, else nil.
func (l *connLimiter) victimLocked() *limitedConn {
	var slow *limitedConn
	for el := l.conns.Front(); el != nil; el = el.Next() {
		lc := el.Value.(*limitedConn)
		if lc.state == http.StateNew || lc.state == http.StateIdle {
			return lc
		}
		if slow == nil && lc.state == http.StateActive && lc.receiving {
			slow = lc
		}
	}
	return slow
}

// connState records state changes; install it as http.Server.ConnState.
func (l *connLimiter) connState(c net.Conn, s http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lc.state = s
	if s == http.StateHijacked || s == http.StateClosed {
		// A hijacked connection is the hijacker's to close; stop counting it.
		l.forgetLocked(lc)
	}
}

// drain closes the connections that have not sent a request yet and every
// connection accepted from now on (the server is shutting down).
func (l *connLimiter) drain() {
	l.mu.Lock()
	l.draining = true
	var silent []*limitedConn
	for el := l.conns.Front(); el != nil; el = el.Next() {
		if lc := el.Value.(*limitedConn); lc.state == http.StateNew {
			silent = append(silent, lc)
		}
	}
	l.mu.Unlock()
	for _, lc := range silent {
		lc.Close()
	}
}

// states counts the connections currently counted by state.
func (l *connLimiter) states() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := map[string]int{}
	for el := l.conns.Front(); el != nil; el = el.Next() {
		n[el.Value.(*limitedConn).state.String()]++
	}
	return n
}

// Len returns the connections currently counted.
func (l *connLimiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conns.Len()
}
