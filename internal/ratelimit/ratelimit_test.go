package ratelimit

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/devspace-dev/devspace/internal/testutil"
)

func newFakeClock() *testutil.Clock {
	return testutil.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
}

type op int

const (
	opAllow op = iota
	opFail
	opSuccess
	opWait
)

// step is one action on the limiter. opFail runs n times (at least once).
type step struct {
	op   op
	keys []string
	n    int
	d    time.Duration
}

func allow(keys ...string) step          { return step{op: opAllow, keys: keys} }
func fail(n int, keys ...string) step    { return step{op: opFail, keys: keys, n: n} }
func succeed(keys ...string) step        { return step{op: opSuccess, keys: keys} }
func wait(d time.Duration) step          { return step{op: opWait, d: d} }
func ok() result                         { return result{OK: true} }
func blocked(retry time.Duration) result { return result{RetryAfter: retry} }

// result is what one Allow returned.
type result struct {
	OK         bool
	RetryAfter time.Duration
}

func TestLimiter(t *testing.T) {
	const sec = time.Second
	tests := []struct {
		name  string
		opts  Options
		steps []step
		want  []result // one per allow step
	}{
		{
			name: "free failures then back-off",
			opts: Options{},
			steps: []step{
				allow("a"), fail(1, "a"), allow("a"), fail(2, "a"), allow("a"),
				fail(1, "a"), allow("a"),
			},
			want: []result{ok(), ok(), ok(), blocked(sec)},
		},
		{
			name: "doubling",
			opts: Options{Free: -1},
			steps: []step{
				fail(1, "a"), allow("a"), fail(1, "a"), allow("a"), fail(1, "a"), allow("a"),
				fail(1, "a"), allow("a"),
			},
			want: []result{blocked(sec), blocked(2 * sec), blocked(4 * sec), blocked(8 * sec)},
		},
		{
			name: "custom free and base",
			opts: Options{Free: 1, Base: 100 * time.Millisecond},
			steps: []step{
				fail(1, "a"), allow("a"), fail(1, "a"), allow("a"), fail(1, "a"), allow("a"),
			},
			want: []result{ok(), blocked(100 * time.Millisecond), blocked(200 * time.Millisecond)},
		},
		{
			name: "cap at max",
			opts: Options{Free: -1, Max: 5 * sec},
			steps: []step{
				fail(3, "a"), allow("a"), fail(1, "a"), allow("a"), fail(1, "a"), allow("a"),
			},
			want: []result{blocked(4 * sec), blocked(5 * sec), blocked(5 * sec)},
		},
		{
			name:  "default cap is five minutes",
			opts:  Options{Free: -1},
			steps: []step{fail(20, "a"), allow("a")},
			want:  []result{blocked(5 * time.Minute)},
		},
		{
			name:  "many failures do not overflow",
			opts:  Options{Free: -1, Max: 1000 * time.Hour, Forget: 2000 * time.Hour},
			steps: []step{fail(200, "a"), allow("a")},
			want:  []result{blocked(1000 * time.Hour)},
		},
		{
			name: "wait runs down",
			opts: Options{Free: -1},
			steps: []step{
				fail(2, "a"), wait(500 * time.Millisecond), allow("a"), wait(1500 * time.Millisecond), allow("a"),
				fail(1, "a"), allow("a"),
			},
			want: []result{blocked(1500 * time.Millisecond), ok(), blocked(4 * sec)},
		},
		{
			name: "success resets",
			opts: Options{},
			steps: []step{
				fail(6, "a"), allow("a"), succeed("a"), allow("a"),
				fail(3, "a"), allow("a"), fail(1, "a"), allow("a"),
			},
			want: []result{blocked(4 * sec), ok(), ok(), blocked(sec)},
		},
		{
			name: "forgotten after idle",
			opts: Options{Free: -1},
			steps: []step{
				fail(3, "a"), wait(time.Hour), allow("a"), fail(1, "a"), allow("a"),
			},
			want: []result{ok(), blocked(sec)},
		},
		{
			name: "remembered until idle long enough",
			opts: Options{Free: -1, Forget: 10 * sec},
			steps: []step{
				fail(1, "a"), wait(9 * sec), fail(1, "a"), wait(9 * sec), fail(1, "a"), allow("a"),
			},
			want: []result{blocked(4 * sec)},
		},
		{
			name: "forget is at least max",
			opts: Options{Free: -1, Base: 10 * sec, Max: 10 * sec, Forget: sec},
			steps: []step{
				fail(1, "a"), wait(5 * sec), allow("a"), wait(5 * sec), allow("a"),
			},
			want: []result{blocked(5 * sec), ok()},
		},
		{
			name: "longest wait among keys wins",
			opts: Options{Free: -1},
			steps: []step{
				fail(3, "client:x"), fail(1, "addr:1.2.3.4"),
				allow("client:x", "addr:1.2.3.4"), allow("addr:1.2.3.4", "client:x"),
				allow("addr:1.2.3.4"), allow("addr:1.2.3.4", "client:y"), allow("client:y"), allow(),
			},
			want: []result{blocked(4 * sec), blocked(4 * sec), blocked(sec), blocked(sec), ok(), ok()},
		},
		{
			name: "failure and success on several keys",
			opts: Options{Free: -1},
			steps: []step{
				fail(2, "a", "b"), allow("a"), allow("b"), succeed("a"), allow("a"), allow("a", "b"),
			},
			want: []result{blocked(2 * sec), blocked(2 * sec), ok(), blocked(2 * sec)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			tt.opts.Now = clock.Now
			l := New(tt.opts)
			var got []result
			for _, s := range tt.steps {
				switch s.op {
				case opAllow:
					ok, retry := l.Allow(s.keys...)
					got = append(got, result{OK: ok, RetryAfter: retry})
				case opFail:
					for range max(s.n, 1) {
						l.Failure(s.keys...)
					}
				case opSuccess:
					l.Success(s.keys...)
				case opWait:
					clock.Advance(s.d)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Allow results (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	type settings struct {
		Free              int
		Base, Max, Forget time.Duration
		MaxKeys           int
	}
	tests := []struct {
		name string
		opts Options
		want settings
	}{
		{"zero", Options{}, settings{3, time.Second, 5 * time.Minute, time.Hour, 10000}},
		{"negative free", Options{Free: -1}, settings{0, time.Second, 5 * time.Minute, time.Hour, 10000}},
		{"custom", Options{Free: 5, Base: 2 * time.Second, Max: time.Minute, Forget: 2 * time.Hour, MaxKeys: 10},
			settings{5, 2 * time.Second, time.Minute, 2 * time.Hour, 10}},
		{"max below base", Options{Base: time.Minute, Max: time.Second}, settings{3, time.Minute, time.Minute, time.Hour, 10000}},
		{"forget below max", Options{Max: time.Hour, Forget: time.Minute}, settings{3, time.Second, time.Hour, time.Hour, 10000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := New(tt.opts)
			got := settings{l.free, l.base, l.max, l.forget, l.maxKeys}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("settings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMaxKeysEviction(t *testing.T) {
	clock := newFakeClock()
	l := New(Options{Free: -1, MaxKeys: 3, Now: clock.Now})
	for i := range 10 {
		l.Failure(fmt.Sprintf("k%d", i))
		if n := l.Len(); n > 3 {
			t.Fatalf("after %d keys Len() = %d, want at most 3", i+1, n)
		}
		clock.Advance(time.Millisecond)
		// Touching k0 again keeps it among the most recent.
		l.Failure("k0")
		clock.Advance(time.Millisecond)
	}
	var got []string
	for i := range 10 {
		if ok, _ := l.Allow(fmt.Sprintf("k%d", i)); !ok {
			got = append(got, fmt.Sprintf("k%d", i))
		}
	}
	if diff := cmp.Diff([]string{"k0", "k8", "k9"}, got); diff != "" {
		t.Errorf("keys still limited (-want +got):\n%s", diff)
	}
}

func TestLenForgetsIdleKeys(t *testing.T) {
	clock := newFakeClock()
	l := New(Options{Forget: time.Hour, Now: clock.Now})
	l.Failure("a", "b")
	clock.Advance(30 * time.Minute)
	l.Failure("c")
	steps := []struct {
		advance time.Duration
		want    int
	}{
		{0, 3},
		{30 * time.Minute, 1},
		{30 * time.Minute, 0},
	}
	for i, s := range steps {
		clock.Advance(s.advance)
		if got := l.Len(); got != s.want {
			t.Errorf("step %d: Len() = %d, want %d", i, got, s.want)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	l := New(Options{Free: 1, Base: time.Millisecond, MaxKeys: 50})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				key := fmt.Sprintf("addr:%d", (g*500+i)%120)
				l.Allow(key, "client:shared")
				l.Failure(key, "client:shared")
				if i%7 == 0 {
					l.Success(key)
				}
			}
		})
	}
	wg.Wait()
	if n := l.Len(); n > 50 {
		t.Errorf("Len() = %d, want at most 50", n)
	}
}
