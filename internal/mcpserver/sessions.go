package mcpserver

import (
	"container/list"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of stateful MCP sessions (Mcp-Session-Id). Each holds a few KB
// in the SDK; without bounds a client could open them forever.
const (
	// DefaultSessionIdleTimeout closes a session that received no request
	// for this long (the SDK's SessionTimeout; a request in progress, such
	// as an open GET stream, pauses it).
	DefaultSessionIdleTimeout = 30 * time.Minute
	// DefaultSessionsPerGrant caps the sessions of one grant: opening one
	// more closes that grant's least recently used session.
	DefaultSessionsPerGrant = 32
)

// sessionTracker knows which grant opened which session and when each was
// last used, so that a grant's least recently used session can be closed
// when it opens one too many. It forgets a session when it is deleted or
// has been idle for the idle timeout (the SDK closes it then): a timer
// sweeps while any session is tracked. Safe for concurrent use; its memory
// follows the live sessions (its map is rebuilt when it empties, since Go
// maps do not shrink).
type sessionTracker struct {
	idle     time.Duration
	perGrant int
	now      func() time.Time

	mu     sync.Mutex
	grants map[string]*list.List      // grant → *trackedSession, least recently used first
	byID   map[string]*trackedSession // by session ID
	timer  *time.Timer                // pending sweep; nil while nothing is tracked
}

type trackedSession struct {
	id, grant string
	lastUsed  time.Time
	el        *list.Element
}

func newSessionTracker(idle time.Duration, perGrant int) *sessionTracker {
	return &sessionTracker{idle: idle, perGrant: perGrant, now: time.Now,
		grants: map[string]*list.List{}, byID: map[string]*trackedSession{}}
}

// touch records a request on session id.
func (t *sessionTracker) touch(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ts, ok := t.byID[id]; ok {
		ts.lastUsed = t.now()
		t.grants[ts.grant].MoveToBack(ts.el)
	}
}

// forget drops session id (it was deleted).
func (t *sessionTracker) forget(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.removeLocked(id)
}

// opened records that grant opened session id and returns the sessions to
// close: the grant's least recently used ones beyond the cap.
func (t *sessionTracker) opened(grant, id string) (evict []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.byID[id]; ok {
		return nil
	}
	l := t.grants[grant]
	if l == nil {
		l = list.New()
		t.grants[grant] = l
	}
	ts := &trackedSession{id: id, grant: grant, lastUsed: t.now()}
	ts.el = l.PushBack(ts)
	t.byID[id] = ts
	for l.Len() > t.perGrant {
		old := l.Front().Value.(*trackedSession).id
		evict = append(evict, old)
		t.removeLocked(old)
	}
	if t.timer == nil {
		t.timer = time.AfterFunc(t.idle/4, t.sweep)
	}
	return evict
}

// sweep forgets sessions idle past the timeout (the SDK has closed them)
// and runs again while any session is tracked. Each grant's list is in
// order of use, so it stops at the first live session.
func (t *sessionTracker) sweep() {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	for _, l := range t.grants {
		for el := l.Front(); el != nil && now.Sub(el.Value.(*trackedSession).lastUsed) >= t.idle; el = l.Front() {
			t.removeLocked(el.Value.(*trackedSession).id)
		}
	}
	if len(t.byID) == 0 {
		t.timer = nil
		return
	}
	t.timer.Reset(t.idle / 4)
}

func (t *sessionTracker) removeLocked(id string) {
	ts, ok := t.byID[id]
	if !ok {
		return
	}
	l := t.grants[ts.grant]
	l.Remove(ts.el)
	if l.Len() == 0 {
		delete(t.grants, ts.grant)
	}
	delete(t.byID, id)
	if len(t.byID) == 0 {
		t.byID = map[string]*trackedSession{}
		t.grants = map[string]*list.List{}
	}
}

// serveStateful runs the stateful handler and keeps the tracker current:
// a request naming a session touches it (DELETE forgets it), a request that
// created one registers it under the grant, closing the grant's least
// recently used sessions beyond the cap.
func (s *Server) serveStateful(w http.ResponseWriter, r *http.Request, grant string) {
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		if r.Method == http.MethodDelete {
			defer s.sessions.forget(id)
		} else {
			s.sessions.touch(id)
		}
		s.stateful.ServeHTTP(w, r)
		return
	}
	s.stateful.ServeHTTP(w, r)
	id := w.Header().Get("Mcp-Session-Id")
	if id == "" {
		return
	}
	if evict := s.sessions.opened(grant, id); len(evict) > 0 {
		s.closeSessions(evict)
	}
}

// closeSessions closes the named sessions; the SDK then forgets them and
// their clients get 404 and start again.
func (s *Server) closeSessions(ids []string) {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	var victims []*mcp.ServerSession
	for ss := range s.mcp.Sessions() {
		if want[ss.ID()] {
			victims = append(victims, ss)
		}
	}
	for _, ss := range victims {
		_ = ss.Close()
	}
	if len(victims) > 0 {
		s.log.Info("closed least recently used MCP sessions of a grant over its cap", "sessions", len(victims))
	}
}
