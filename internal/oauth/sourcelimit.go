package oauth

import (
	"sync"
	"time"
)

// DefaultRegistrationsPerSource is how many dynamic registrations one
// trusted source address may make per RegistrationWindow.
const DefaultRegistrationsPerSource = 20

// RegistrationWindow is the window of the per-source registration limit.
const RegistrationWindow = time.Hour

// maxRegistrationSources bounds the addresses tracked; the oldest window
// is dropped first.
const maxRegistrationSources = 4096

// sourceLimit counts events per source address in fixed windows. It is
// used only for addresses a trusted proxy vouched for: behind a tunnel
// without one, every client shares the tunnel's address and a per-source
// limit would be a global one that anyone could exhaust.
type sourceLimit struct {
	limit  int
	window time.Duration

	mu      sync.Mutex
	windows map[string]*sourceWindow
}

type sourceWindow struct {
	start time.Time
	count int
}

func newSourceLimit(limit int, window time.Duration) *sourceLimit {
	return &sourceLimit{limit: limit, window: window, windows: map[string]*sourceWindow{}}
}

// take counts one event for addr at now and reports whether it is within
// the limit; when not, retryAfter is when the window ends.
func (l *sourceLimit) take(addr string, now time.Time) (ok bool, retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.windows[addr]
	if w == nil || now.Sub(w.start) >= l.window {
		if w == nil && len(l.windows) >= maxRegistrationSources {
			l.dropOldestLocked(now)
		}
		w = &sourceWindow{start: now}
		l.windows[addr] = w
	}
	if w.count >= l.limit {
		return false, w.start.Add(l.window).Sub(now)
	}
	w.count++
	return true, 0
}

func (l *sourceLimit) dropOldestLocked(now time.Time) {
	var oldest string
	for a, w := range l.windows {
		if now.Sub(w.start) >= l.window {
			delete(l.windows, a)
			continue
		}
		if oldest == "" || w.start.Before(l.windows[oldest].start) {
			oldest = a
		}
	}
	if len(l.windows) >= maxRegistrationSources && oldest != "" {
		delete(l.windows, oldest)
	}
}
