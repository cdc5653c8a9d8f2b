package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// Sign-in bounds.
const (
	// LinkTTL is how long a sign-in link from `devspace admin` lives.
	LinkTTL = 2 * time.Minute
	// IdleTimeout ends a session unused for this long.
	IdleTimeout = 30 * time.Minute
	// MaxSessionAge ends a session this long after sign-in, used or not.
	MaxSessionAge = 12 * time.Hour
	// maxLinks and maxSessions bound the maps; past them the oldest goes.
	maxLinks    = 16
	maxSessions = 32
)

// Cookie names: the __Secure- prefix where the console is reached over
// https (__Host- would need Path=/, and the cookie's path is its
// session's place); plain http on loopback cannot set Secure.
const (
	cookieName       = "devspace_console"
	secureCookieName = "__Secure-devspace_console"
)

// placePrefix starts the path of every page and action of a session: its
// place, "/s/<random>/". The session cookie's Path is its place, and
// browsers keep cookies by host and path, never by port: a page another
// program serves on the same host (a dev server a grant's command
// started on 127.0.0.1) is never under that path, so it never receives
// the cookie to replay.
const placePrefix = "/s/"

// sessions holds sign-in links and sessions, by the SHA-256 of their
// random values: a memory dump holds no usable token.
type sessions struct {
	now func() time.Time

	mu    sync.Mutex
	links map[[32]byte]time.Time // hash → expiry
	live  map[[32]byte]*session
}

// session is one signed-in browser.
type session struct {
	csrf     string // per session, compared in constant time
	place    string // the random path segment of its pages (placePrefix)
	created  time.Time
	lastSeen time.Time
}

func newSessions(now func() time.Time) *sessions {
	return &sessions{now: now, links: map[[32]byte]time.Time{}, live: map[[32]byte]*session{}}
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

func hashOf(v string) [32]byte { return sha256.Sum256([]byte(v)) }

// newLink makes a one-time sign-in token.
func (s *sessions) newLink() string {
	tok := randomToken()
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for h, exp := range s.links {
		if !now.Before(exp) {
			delete(s.links, h)
		}
	}
	for len(s.links) >= maxLinks {
		var oldest [32]byte
		var at time.Time
		for h, exp := range s.links {
			if at.IsZero() || exp.Before(at) {
				oldest, at = h, exp
			}
		}
		delete(s.links, oldest)
	}
	s.links[hashOf(tok)] = now.Add(LinkTTL)
	return tok
}

// useLink consumes a sign-in token: true once, within LinkTTL.
func (s *sessions) useLink(tok string) bool {
	if tok == "" {
		return false
	}
	h := hashOf(tok)
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.links[h]
	delete(s.links, h)
	return ok && s.now().Before(exp)
}

// start opens a session and returns its cookie value and its place.
func (s *sessions) start() (tok, place string) {
	tok, place = randomToken(), randomToken()
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked(now)
	for len(s.live) >= maxSessions {
		var oldest [32]byte
		var at time.Time
		for h, ss := range s.live {
			if at.IsZero() || ss.lastSeen.Before(at) {
				oldest, at = h, ss.lastSeen
			}
		}
		delete(s.live, oldest)
	}
	s.live[hashOf(tok)] = &session{csrf: randomToken(), place: place, created: now, lastSeen: now}
	return tok, place
}

func (s *sessions) sweepLocked(now time.Time) {
	for h, ss := range s.live {
		if ss.expired(now) {
			delete(s.live, h)
		}
	}
}

func (ss *session) expired(now time.Time) bool {
	return !now.Before(ss.lastSeen.Add(IdleTimeout)) || !now.Before(ss.created.Add(MaxSessionAge))
}

// lookup returns the live session of a cookie value whose place is place,
// and marks it used; nil when there is none (a cookie asked for on another
// place is not a use of its session).
func (s *sessions) lookup(tok, place string) *session {
	if tok == "" {
		return nil
	}
	h := hashOf(tok)
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.live[h]
	if ss == nil || subtle.ConstantTimeCompare([]byte(ss.place), []byte(place)) != 1 {
		return nil
	}
	if ss.expired(now) {
		delete(s.live, h)
		return nil
	}
	ss.lastSeen = now
	cp := *ss
	return &cp
}

// alive reports whether the session of a cookie value is still open,
// without marking it used (an event stream asks it; see Console.stream).
func (s *sessions) alive(tok string) bool {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.live[hashOf(tok)]
	return ss != nil && !ss.expired(now)
}

// end signs one session out.
func (s *sessions) end(tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.live, hashOf(tok))
}

// endAll signs every session out and drops every link.
func (s *sessions) endAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.live)
	clear(s.links)
}

// csrfOK reports whether a form's token is the session's.
func (ss *session) csrfOK(got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(ss.csrf)) == 1
}

// cookieOf returns the name of the session cookie for r.
func cookieOf(r *http.Request) string {
	if r.TLS != nil {
		return secureCookieName
	}
	return cookieName
}

// setSessionCookie hands the browser its session: HttpOnly, SameSite=Strict,
// Path=base/ (the session's place), and on https Secure with the
// __Secure- prefix. It carries no Max-Age: the server ends the session
// (idle, absolute age, rotation). remove takes it back (same path).
func setSessionCookie(w http.ResponseWriter, r *http.Request, value, base string, remove bool) {
	c := &http.Cookie{Name: cookieOf(r), Value: value, Path: base + "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil}
	if remove {
		c.Value, c.MaxAge = "", -1
	}
	http.SetCookie(w, c)
}

// sessionOf returns r's session and its cookie value, or nil: the cookie
// must name a live session whose place is the one r's path is under.
func (c *Console) sessionOf(r *http.Request) (*session, string) {
	ck, err := r.Cookie(cookieOf(r))
	if err != nil {
		return nil, ""
	}
	ss := c.auth.lookup(ck.Value, placeOf(r))
	if ss == nil {
		return nil, ""
	}
	return ss, ck.Value
}
