// Package activity keeps what the Owner's console shows about what DevSpace
// does right now: the latest tool calls (a bounded ring), a live feed of
// them for subscribers, and the last hour by minute (calls, errors by
// code, p50 and p99 latency per tool, commands running), all in memory and
// bounded whatever the call rate. It also declares the plain types the app
// returns for running commands, their output, patches and undos.
//
// Nothing here is durable: a restart starts an empty hour. Prometheus keeps
// the long history; this package is what the console needs without it.
package activity

import (
	"context"
	"sync"
	"time"
)

// Call is one MCP tool call as the edge saw it.
type Call struct {
	At       time.Time // when the call began
	Tool     string
	GrantID  string
	Client   string // the client's registered name: untrusted text
	Project  string // the projectRef the call worked on; "" when none
	Duration time.Duration
	Code     string // the error envelope's code; "" means success
}

// ToolMinute is one tool's calls within one minute. P50 and P99 are read
// from a fixed histogram (see Hour): exact below 16 µs, within 6.25 %
// above.
type ToolMinute struct {
	Calls, Errors int
	P50, P99      time.Duration
}

// Minute is one minute of the hour Hour returns. Tools is keyed by tool
// name and Errors by error code; both are empty (not nil) for a quiet
// minute. Running is the most commands that ran at once in the minute.
type Minute struct {
	Start   time.Time
	Tools   map[string]ToolMinute
	Errors  map[string]int
	Running int
}

// Command is a command running for a grant, as the Owner sees it.
// CommandLine has every literal credential the secret detector finds
// replaced (secret.Redact); it and Client are untrusted text.
type Command struct {
	ID, GrantID, Client, Project, CommandLine string
	Started                                   time.Time
	Running                                   bool
}

// Output is the latest output of a command: Tail holds its last bytes
// (valid UTF-8, untrusted text), Total how many it wrote in all, Done
// whether it ended.
type Output struct {
	Tail  string
	Total int64
	Done  bool
}

// Patch is one apply_patch that changed files, from the patch journal.
// Diff is the journal's unified diff (hashes only for sensitive files),
// cut at a bound with a note saying so.
type Patch struct {
	ID, GrantID, Project string
	At                   time.Time
	Files                []string
	Diff                 string
}

// Undo is one undo_patch call that changed files: an undo (Undone) or a
// redo (Undone false).
type Undo struct {
	ID, GrantID, Project string
	At                   time.Time
	Files                []string
	Undone               bool
}

// Defaults of Options.
const (
	DefaultRecent      = 1000
	DefaultSubscribers = 32
	DefaultBuffer      = 256
	// MaxToolsPerMinute and MaxCodesPerMinute bound the distinct tool
	// names and error codes one minute keeps; the rest count under Other.
	MaxToolsPerMinute = 32
	MaxCodesPerMinute = 32
	// Other is the tool name or code that counts what a minute's bounds
	// leave out.
	Other = "other"
)

// Options configure a Recorder; the zero value means the defaults.
type Options struct {
	// Now is the clock; nil means time.Now. A Call with a zero At is
	// stamped with it.
	Now func() time.Time
	// Recent is how many calls Recent keeps (DefaultRecent when zero).
	Recent int
	// Subscribers bounds the subscriptions open at once
	// (DefaultSubscribers when zero); Buffer is each one's queue
	// (DefaultBuffer when zero).
	Subscribers, Buffer int
}

// Recorder keeps the activity. Its zero value is not usable: call New.
// It is safe for concurrent use; Record never waits for a subscriber.
type Recorder struct {
	now    func() time.Time
	buffer int
	maxSub int

	mu      sync.Mutex
	ring    []Call // ring[next-1] is the newest
	next    int
	full    bool
	subs    map[*subscriber]struct{}
	minutes [60]bucket // by minute of the hour
	running int        // commands running now
	dropped int64      // calls a full subscriber queue did not get
}

type subscriber struct{ ch chan Call }

// New returns an empty Recorder.
func New(opts Options) *Recorder {
	r := &Recorder{now: opts.Now, buffer: opts.Buffer, maxSub: opts.Subscribers}
	if r.now == nil {
		r.now = time.Now
	}
	if opts.Recent <= 0 {
		opts.Recent = DefaultRecent
	}
	if r.buffer <= 0 {
		r.buffer = DefaultBuffer
	}
	if r.maxSub <= 0 {
		r.maxSub = DefaultSubscribers
	}
	r.ring = make([]Call, opts.Recent)
	r.subs = map[*subscriber]struct{}{}
	return r
}

// Record adds a call that just ended: to the ring Recent reads, to the
// current minute (by the Recorder's clock, the one Hour and SetRunning
// go by; c.At is what Recent shows), and to each subscriber's queue that
// has room (a full queue misses it). It takes one short lock and
// allocates only for a tool's first call in a minute.
func (r *Recorder) Record(c Call) {
	now := r.now()
	if c.At.IsZero() {
		c.At = now
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ring[r.next] = c
	if r.next++; r.next == len(r.ring) {
		r.next, r.full = 0, true
	}
	if b := r.bucketLocked(now); b != nil {
		b.add(c)
	}
	for s := range r.subs {
		select {
		case s.ch <- c:
		default:
			r.dropped++
		}
	}
}

// Recent returns up to n calls, newest first; n <= 0 or past the ring's
// size means all it keeps. The caller owns the slice.
func (r *Recorder) Recent(n int) []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	have := r.next
	if r.full {
		have = len(r.ring)
	}
	if n <= 0 || n > have {
		n = have
	}
	out := make([]Call, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, r.ring[(r.next-i+len(r.ring))%len(r.ring)])
	}
	return out
}

// Subscribe returns a channel that receives each call recorded from now
// on, until ctx ends; then it is closed. A subscriber that does not keep
// up misses calls (its queue holds Options.Buffer) rather than slowing
// Record. Past Options.Subscribers open subscriptions the channel is
// returned closed.
func (r *Recorder) Subscribe(ctx context.Context) <-chan Call {
	s := &subscriber{ch: make(chan Call, r.buffer)}
	r.mu.Lock()
	if len(r.subs) >= r.maxSub || ctx.Err() != nil {
		r.mu.Unlock()
		close(s.ch)
		return s.ch
	}
	r.subs[s] = struct{}{}
	r.mu.Unlock()
	context.AfterFunc(ctx, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.subs, s)
		close(s.ch) // Record sends only under r.mu, to subscribers in subs
	})
	return s.ch
}

// Dropped counts the calls subscribers missed because their queue was
// full.
func (r *Recorder) Dropped() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}

// SetRunning says how many commands run now; each minute keeps the most
// it was told of while it lasted.
func (r *Recorder) SetRunning(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// A minute this starts began at the level before: it ran too.
	if b := r.bucketLocked(r.now()); b != nil {
		b.running = max(b.running, n)
		b.runningLast = n
	}
	r.running = n
}

// Hour returns the 60 minutes up to and including now's, oldest first.
// A minute without calls has empty maps; Running is the most commands
// that ran at once in it (the level last set, for a minute in which it
// did not change).
func (r *Recorder) Hour(now time.Time) []Minute {
	end := now.Truncate(time.Minute)
	out := make([]Minute, 60)
	r.mu.Lock()
	defer r.mu.Unlock()
	// The level before the window's first known minute is unknown; the
	// first known minute's level at its start stands for it, and the
	// current level when no minute is known.
	level := r.running
	for i := range 60 {
		start := end.Add(time.Duration(i-59) * time.Minute)
		if b := r.lookupLocked(start); b != nil {
			level = b.runningFirst
			break
		}
	}
	for i := range 60 {
		start := end.Add(time.Duration(i-59) * time.Minute)
		m := Minute{Start: start, Tools: map[string]ToolMinute{}, Errors: map[string]int{}, Running: level}
		if b := r.lookupLocked(start); b != nil {
			b.fill(&m)
			level = b.runningLast
		}
		out[i] = m
	}
	return out
}

// bucketLocked returns the bucket of t's minute, starting it afresh when
// its slot holds an older minute; nil when the clock went back over an
// hour. r.mu is held.
func (r *Recorder) bucketLocked(t time.Time) *bucket {
	start := t.Truncate(time.Minute)
	b := &r.minutes[slot(start)]
	if b.start.Equal(start) {
		return b
	}
	if !b.start.IsZero() && b.start.After(start) {
		return nil // the slot holds a later minute: the clock went back
	}
	*b = bucket{start: start, running: r.running, runningFirst: r.running, runningLast: r.running}
	return b
}

// lookupLocked returns the bucket of the minute beginning at start, or
// nil. r.mu is held.
func (r *Recorder) lookupLocked(start time.Time) *bucket {
	b := &r.minutes[slot(start)]
	if b.start.IsZero() || !b.start.Equal(start) {
		return nil
	}
	return b
}

func slot(start time.Time) int {
	m := start.Unix() / 60 % 60
	if m < 0 {
		m += 60
	}
	return int(m)
}
