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
	// DefaultSessionIdleTimeout closes a session that has had no POST in
	// progress for this long (the SDK's SessionTimeout: go-sdk v1.8 stops
	// its timer while a POST runs and restarts it when the last one ends;
	// GET streams do not count, so a session that only listens on an open
	// GET stream is closed, and its stream with it).
	DefaultSessionIdleTimeout = 30 * time.Minute
	// DefaultSessionsPerGrant caps the sessions of one grant: opening one
	// more closes that grant's least recently used session (see
	// sessionTracker).
	DefaultSessionsPerGrant = 32
)

// sessionTracker knows which grant opened which session and when each was
// last used, so that a grant's least recently used session can be closed
// when it opens one too many. Use is what the SDK's idle timer counts: a
// session was last used when its latest POST began or ended (a GET or
// DELETE is not a use), and it is idle only while no POST is in progress.
// The tracker forgets a session when it is deleted or has been idle for
// the idle timeout (the SDK closes it then): a timer sweeps while any
// session is tracked. Safe for concurrent use; its memory follows the live
// sessions (its map is rebuilt when it empties, since Go maps do not
// shrink).
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
	lastUsed  time.Time // when its latest POST began or ended
	posts     int       // POSTs in progress: not idle while positive
	el        *list.Element
}

func newSessionTracker(idle time.Duration, perGrant int) *sessionTracker {
	return &sessionTracker{idle: idle, perGrant: perGrant, now: time.Now,
		grants: map[string]*list.List{}, byID: map[string]*trackedSession{}}
}

// began records that a POST on session id began; ended, that it ended.
// Every began must be followed by one ended.
func (t *sessionTracker) began(id string) { t.used(id, 1) }
func (t *sessionTracker) ended(id string) { t.used(id, -1) }

func (t *sessionTracker) used(id string, posts int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ts, ok := t.byID[id]; ok {
		ts.posts += posts
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
// order of use, so it stops at the first session that is neither busy
// with a POST nor idle long enough.
func (t *sessionTracker) sweep() {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	for _, l := range t.grants {
		for el := l.Front(); el != nil; {
			ts, next := el.Value.(*trackedSession), el.Next()
			if ts.posts == 0 {
				if now.Sub(ts.lastUsed) < t.idle {
					break
				}
				t.removeLocked(ts.id)
			}
			el = next
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
// a POST naming a session uses it from its start to its end, as the SDK's
// idle timer counts (a GET does not), a DELETE forgets it, and a request
// that created one registers it under the grant, closing the grant's least
// recently used sessions beyond the cap.
func (s *Server) serveStateful(w http.ResponseWriter, r *http.Request, grant string) {
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		switch r.Method {
		case http.MethodDelete:
			defer s.sessions.forget(id)
		case http.MethodPost:
			s.sessions.began(id)
			defer s.sessions.ended(id)
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

// counts returns the number of tracked sessions per grant.
func (t *sessionTracker) counts() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int, len(t.grants))
	for g, l := range t.grants {
		out[g] = l.Len()
	}
	return out
}
