// Package ratelimit slows down repeated Owner-password failures with a
// per-key exponential back-off. Keys are opaque strings chosen by the
// caller, such as "client:<id>" and "addr:<ip>"; an attempt is allowed only
// when every key it names is allowed.
//
// Reserve is the entry point for expensive checks: it counts the attempt
// before the check runs, allows at most one attempt in flight per key and
// bounds attempts in flight overall, so concurrent guesses cannot all pass
// before the first failure is recorded.
package ratelimit

import (
	"container/list"
	"sync"
	"time"
)

// Options configure New. The zero value gives the documented defaults.
type Options struct {
	// Free is how many failures a key may have before back-off starts.
	// Zero means 3; a negative value means none.
	Free int
	// Base is the wait after the first failure beyond Free. Zero means 1s.
	Base time.Duration
	// Max caps the wait. Zero means 5m.
	Max time.Duration
	// Forget is how long a key must go without a failure before it is
	// forgotten. Zero means 1h; a value below Max is raised to Max so that
	// no key is forgotten while it still has to wait.
	Forget time.Duration
	// MaxKeys bounds the number of keys tracked; when a new key would
	// exceed it, the key whose last failure is oldest is dropped. Zero
	// means 10000.
	MaxKeys int
	// MaxInFlight bounds the attempts reserved with Reserve and not yet
	// finished, over all keys. Zero means DefaultMaxInFlight.
	MaxInFlight int
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// Default option values.
const (
	DefaultFree    = 3
	DefaultBase    = time.Second
	DefaultMax     = 5 * time.Minute
	DefaultForget  = time.Hour
	DefaultMaxKeys = 10000
	// DefaultMaxInFlight is the default global bound on reserved attempts
	// (Owner-password verifications: Argon2id costs tens of MiB each).
	DefaultMaxInFlight = 2
	// BusyRetryAfter is the wait Reserve reports when an attempt is
	// refused only because another one is in flight.
	BusyRetryAfter = time.Second
)

// Limiter tracks failures per key. It is safe for concurrent use; its
// memory is bounded by Options.MaxKeys. Create it with New.
type Limiter struct {
	free    int
	base    time.Duration
	max     time.Duration
	forget  time.Duration
	maxKeys int
	maxBusy int
	now     func() time.Time

	mu       sync.Mutex
	inFlight int                      // attempts reserved and not finished
	busy     map[string]struct{}      // keys with an attempt in flight
	entries  map[string]*list.Element // of *entry
	// order holds the entries by last failure, most recent at the front,
	// so expiry and eviction both work from the back.
	order list.List
}

type entry struct {
	key         string
	failures    int
	lastFailure time.Time
	until       time.Time // no attempt before this instant
}

// New returns a Limiter with opts, defaults filled in.
func New(opts Options) *Limiter {
	l := &Limiter{
		free:    opts.Free,
		base:    opts.Base,
		max:     opts.Max,
		forget:  opts.Forget,
		maxKeys: opts.MaxKeys,
		maxBusy: opts.MaxInFlight,
		now:     opts.Now,
		entries: make(map[string]*list.Element),
		busy:    make(map[string]struct{}),
	}
	if l.maxBusy <= 0 {
		l.maxBusy = DefaultMaxInFlight
	}
	switch {
	case l.free == 0:
		l.free = DefaultFree
	case l.free < 0:
		l.free = 0
	}
	if l.base <= 0 {
		l.base = DefaultBase
	}
	if l.max <= 0 {
		l.max = DefaultMax
	}
	l.max = max(l.max, l.base)
	if l.forget <= 0 {
		l.forget = DefaultForget
	}
	l.forget = max(l.forget, l.max)
	if l.maxKeys <= 0 {
		l.maxKeys = DefaultMaxKeys
	}
	if l.now == nil {
		l.now = time.Now
	}
	return l
}

// Reserve starts an attempt naming keys, before it is checked. It refuses
// (ok false, retryAfter > 0) when any key is waiting out a back-off, when any
// key already has an attempt in flight, or when Options.MaxInFlight attempts
// are in flight. When it allows the attempt, the attempt already counts as a
// failure for every key — the back-off grows with attempts, not with
// completions — and the caller must call done exactly once: done(true)
// forgets the keys (as Success), done(false) keeps the failure. Reserve and
// done are safe for concurrent use; a second call of done does nothing.
func (l *Limiter) Reserve(keys ...string) (done func(success bool), retryAfter time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.expire(now)
	if ok, wait := l.allowLocked(now, keys); !ok {
		return nil, wait, false
	}
	if l.inFlight >= l.maxBusy {
		return nil, BusyRetryAfter, false
	}
	for _, k := range keys {
		if _, b := l.busy[k]; b {
			return nil, BusyRetryAfter, false
		}
	}
	l.inFlight++
	for _, k := range keys {
		l.busy[k] = struct{}{}
	}
	l.failureLocked(now, keys)
	var once sync.Once
	return func(success bool) {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.inFlight--
			for _, k := range keys {
				delete(l.busy, k)
			}
			if success {
				l.successLocked(keys)
			}
		})
	}, 0, true
}

// InFlight returns the number of attempts reserved and not yet finished.
func (l *Limiter) InFlight() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inFlight
}

// Allow reports whether an attempt naming keys may proceed now. If not,
// retryAfter is the longest remaining wait among the keys. Allow records
// nothing; report the outcome with Failure or Success.
func (l *Limiter) Allow(keys ...string) (ok bool, retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.expire(now)
	return l.allowLocked(now, keys)
}

func (l *Limiter) allowLocked(now time.Time, keys []string) (ok bool, retryAfter time.Duration) {
	for _, k := range keys {
		el, found := l.entries[k]
		if !found {
			continue
		}
		if wait := el.Value.(*entry).until.Sub(now); wait > retryAfter {
			retryAfter = wait
		}
	}
	return retryAfter <= 0, retryAfter
}

// Failure records a failed attempt for each key. Once a key has more than
// Free failures, each further failure sets its wait to Base, 2*Base,
// 4*Base, … capped at Max, counted from now.
func (l *Limiter) Failure(keys ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.expire(now)
	l.failureLocked(now, keys)
}

func (l *Limiter) failureLocked(now time.Time, keys []string) {
	for _, k := range keys {
		el, found := l.entries[k]
		if !found {
			if len(l.entries) >= l.maxKeys {
				l.remove(l.order.Back())
			}
			el = l.order.PushFront(&entry{key: k})
			l.entries[k] = el
		}
		l.order.MoveToFront(el)
		e := el.Value.(*entry)
		e.failures++
		e.lastFailure = now
		if over := e.failures - l.free; over > 0 {
			e.until = now.Add(l.backoff(over))
		}
	}
}

// Success forgets keys, so their next failures start again from Free.
func (l *Limiter) Success(keys ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.successLocked(keys)
}

func (l *Limiter) successLocked(keys []string) {
	for _, k := range keys {
		if el, found := l.entries[k]; found {
			l.remove(el)
		}
	}
}

// Len returns the number of keys currently tracked.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire(l.now())
	return len(l.entries)
}

// backoff returns the wait after the over-th failure beyond Free (over ≥ 1).
func (l *Limiter) backoff(over int) time.Duration {
	d := l.base
	for i := 1; i < over; i++ {
		if d >= l.max/2 {
			return l.max
		}
		d *= 2
	}
	return min(d, l.max)
}

// expire drops keys whose last failure is at least Forget ago. The list is
// ordered by last failure, so it stops at the first key still remembered.
func (l *Limiter) expire(now time.Time) {
	for el := l.order.Back(); el != nil; el = l.order.Back() {
		if now.Sub(el.Value.(*entry).lastFailure) < l.forget {
			return
		}
		l.remove(el)
	}
}

func (l *Limiter) remove(el *list.Element) {
	delete(l.entries, el.Value.(*entry).key)
	l.order.Remove(el)
}
