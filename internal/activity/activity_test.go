package activity_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/devspace-dev/devspace/internal/activity"
	"github.com/devspace-dev/devspace/internal/testutil"
)

var t0 = time.Date(2026, 12, 7, 18, 0, 0, 0, time.UTC)

func TestRecentNewestFirstAndBounded(t *testing.T) {
	r := activity.New(activity.Options{Recent: 3, Now: testutil.NewClock(t0).Now})
	if got := r.Recent(10); len(got) != 0 {
		t.Fatalf("empty recorder: %v", got)
	}
	for i := range 5 {
		r.Record(activity.Call{Tool: fmt.Sprint("t", i)})
	}
	tools := func(cs []activity.Call) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Tool)
		}
		return out
	}
	for _, tt := range []struct {
		name string
		n    int
		want []string
	}{
		{"all", 0, []string{"t4", "t3", "t2"}},
		{"past the ring", 10, []string{"t4", "t3", "t2"}},
		{"two", 2, []string{"t4", "t3"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tools(r.Recent(tt.n))); diff != "" {
				t.Errorf("Recent(%d) (-want +got):\n%s", tt.n, diff)
			}
		})
	}
	if at := r.Recent(1)[0].At; !at.Equal(t0) {
		t.Errorf("a call without At was stamped %v, want the clock's %v", at, t0)
	}
}

func TestSubscribe(t *testing.T) {
	r := activity.New(activity.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	ch := r.Subscribe(ctx)
	r.Record(activity.Call{Tool: "read_files", GrantID: "g", Code: "path_denied"})
	select {
	case c := <-ch:
		if c.Tool != "read_files" || c.Code != "path_denied" {
			t.Errorf("received %+v", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no call on the subscription")
	}
	cancel()
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("a call after the context ended")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the channel was not closed when the context ended")
	}
	// Recording after the close must not panic (send on a closed channel).
	r.Record(activity.Call{Tool: "x"})
}

func TestSubscribersBounded(t *testing.T) {
	r := activity.New(activity.Options{Subscribers: 2})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.Subscribe(ctx)
	r.Subscribe(ctx)
	if _, ok := <-r.Subscribe(ctx); ok {
		t.Fatal("a third subscription past the bound of 2 was served")
	}
	ended, stop := context.WithCancel(context.Background())
	stop()
	if _, ok := <-r.Subscribe(ended); ok {
		t.Fatal("a subscription with an ended context was served")
	}
}

// TestSlowSubscriberDoesNotBlock: a subscriber that never reads misses
// calls past its queue; Record goes on, and a reading subscriber gets
// every call.
func TestSlowSubscriberDoesNotBlock(t *testing.T) {
	r := activity.New(activity.Options{Buffer: 4})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_ = r.Subscribe(ctx) // never read
	fast := r.Subscribe(ctx)
	got := make(chan int)
	go func() {
		n := 0
		for range fast {
			n++
		}
		got <- n
	}()
	const calls = 10000
	done := make(chan struct{})
	go func() {
		for range calls {
			r.Record(activity.Call{Tool: "t"})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Record blocked on a subscriber that does not read")
	}
	if d := r.Dropped(); d < calls-4 {
		t.Errorf("Dropped = %d, want at least %d (the slow subscriber's)", d, calls-4)
	}
	cancel()
	// The fast reader may miss some too under -race scheduling; it must
	// not have been starved by the slow one.
	if n := <-got; n == 0 {
		t.Error("the reading subscriber got nothing")
	}
}

// TestConcurrent records, reads and subscribes from many goroutines; run
// with -race.
func TestConcurrent(t *testing.T) {
	clock := testutil.NewClock(t0)
	r := activity.New(activity.Options{Now: clock.Now, Recent: 100})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 2000 {
				r.Record(activity.Call{Tool: fmt.Sprint("tool", j%5), GrantID: fmt.Sprint("g", i), Duration: time.Duration(j) * time.Microsecond})
				if j%500 == 0 {
					clock.Advance(10 * time.Second)
				}
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for range 200 {
				sctx, scancel := context.WithCancel(ctx)
				ch := r.Subscribe(sctx)
				select {
				case <-ch:
				default:
				}
				scancel()
			}
		})
		wg.Go(func() {
			for range 200 {
				_ = r.Recent(50)
				_ = r.Hour(clock.Now())
				r.SetRunning(rand.IntN(5))
			}
		})
	}
	wg.Wait()
	if n := len(r.Recent(0)); n != 100 {
		t.Errorf("Recent kept %d, want the ring's 100", n)
	}
}

// TestMemoryBounded: a million calls with a million distinct tool names
// and codes over two hours leave the heap as a few thousand would.
func TestMemoryBounded(t *testing.T) {
	clock := testutil.NewClock(t0)
	r := activity.New(activity.Options{Now: clock.Now})
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	record := func(from, n int) {
		for i := from; i < from+n; i++ {
			r.Record(activity.Call{Tool: fmt.Sprint("tool-", i), GrantID: "g", Client: "c", Project: "p",
				Duration: time.Duration(i%1000) * time.Millisecond, Code: fmt.Sprint("code-", i)})
			if i%10000 == 0 {
				clock.Advance(time.Minute + time.Second)
			}
		}
	}
	record(0, 20000) // every minute slot and the ring in use
	base := heap()
	record(20000, 1_000_000)
	after := heap()
	if grown := int64(after) - int64(base); grown > 4<<20 {
		t.Errorf("heap grew %d bytes over a million calls (from %d to %d), want bounded", grown, base, after)
	}
	for _, m := range r.Hour(clock.Now()) {
		if len(m.Tools) > activity.MaxToolsPerMinute || len(m.Errors) > activity.MaxCodesPerMinute {
			t.Fatalf("minute %v holds %d tools and %d codes", m.Start, len(m.Tools), len(m.Errors))
		}
	}
}

// TestHourRollsOver: calls land in the minute they are recorded; the
// hour is the 60 minutes up to now, oldest first; a minute slot reused an
// hour later starts empty.
func TestHourRollsOver(t *testing.T) {
	clock := testutil.NewClock(t0.Add(30 * time.Second))
	r := activity.New(activity.Options{Now: clock.Now})
	r.Record(activity.Call{Tool: "read_files", Duration: time.Millisecond})
	r.Record(activity.Call{Tool: "read_files", Duration: time.Millisecond, Code: "path_denied"})
	clock.Advance(time.Minute)
	r.Record(activity.Call{Tool: "inspect", Duration: time.Millisecond})

	h := r.Hour(clock.Now())
	if len(h) != 60 {
		t.Fatalf("Hour has %d minutes", len(h))
	}
	if !h[59].Start.Equal(t0.Add(time.Minute)) || !h[0].Start.Equal(t0.Add(-58*time.Minute)) {
		t.Fatalf("hour spans %v to %v", h[0].Start, h[59].Start)
	}
	for i := 1; i < 60; i++ {
		if h[i].Start.Sub(h[i-1].Start) != time.Minute {
			t.Fatalf("minute %d starts %v after %v", i, h[i].Start, h[i-1].Start)
		}
	}
	// 1 ms is in the bucket [960 µs, 1024 µs): its midpoint.
	want58 := map[string]activity.ToolMinute{"read_files": {Calls: 2, Errors: 1, P50: 992 * time.Microsecond, P99: 992 * time.Microsecond}}
	if diff := cmp.Diff(want58, h[58].Tools); diff != "" {
		t.Errorf("minute 58 tools (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"path_denied": 1}, h[58].Errors); diff != "" {
		t.Errorf("minute 58 errors (-want +got):\n%s", diff)
	}
	if h[59].Tools["inspect"].Calls != 1 || len(h[59].Tools) != 1 || len(h[59].Errors) != 0 {
		t.Errorf("minute 59: %+v", h[59])
	}
	if len(h[0].Tools) != 0 || h[0].Tools == nil || h[0].Errors == nil {
		t.Errorf("a quiet minute: %+v, want empty non-nil maps", h[0])
	}

	// An hour later the first minute's slot is reused: the old calls are
	// gone from the hour, the new one counts alone.
	clock.Set(t0.Add(60*time.Minute + 10*time.Second))
	r.Record(activity.Call{Tool: "skills", Duration: time.Millisecond})
	h = r.Hour(clock.Now())
	if got := h[59].Tools; len(got) != 1 || got["skills"].Calls != 1 {
		t.Errorf("reused slot holds %v, want skills alone", got)
	}
	if got := h[58].Tools; len(got) != 0 {
		t.Errorf("minute 58 = %v, want the hour-old inspect call out of the window", got)
	}
	for _, m := range h {
		if m.Tools["read_files"].Calls != 0 {
			t.Errorf("the first minute's calls are still in the hour: %v", m)
		}
	}
	// A call counts in the minute it is recorded, by the Recorder's
	// clock, whatever its At says.
	r.Record(activity.Call{At: t0.Add(-2 * time.Hour), Tool: "late"})
	if h := r.Hour(clock.Now()); h[59].Tools["late"].Calls != 1 {
		t.Errorf("a call with an old At is not in the minute it was recorded: %v", h[59].Tools)
	}
	if got := r.Recent(1)[0]; got.Tool != "late" || !got.At.Equal(t0.Add(-2*time.Hour)) {
		t.Errorf("Recent shows %+v, want the call with its own At", got)
	}
}

// TestRunning: each minute keeps the most commands running while it
// lasted; a minute without a change carries the level on.
func TestRunning(t *testing.T) {
	clock := testutil.NewClock(t0)
	r := activity.New(activity.Options{Now: clock.Now})
	r.SetRunning(2)
	clock.Advance(20 * time.Second)
	r.SetRunning(5)
	clock.Advance(20 * time.Second)
	r.SetRunning(1)
	clock.Advance(3 * time.Minute) // three quiet minutes at 1
	r.SetRunning(0)
	h := r.Hour(clock.Now())
	var got []int
	for _, m := range h[55:] {
		got = append(got, m.Running)
	}
	// Minutes t0-1 (before the first report: its level at the start, 0
	// before any) … t0+3.
	if diff := cmp.Diff([]int{0, 5, 1, 1, 1}, got); diff != "" {
		t.Errorf("Running by minute (-want +got):\n%s", diff)
	}
	fresh := activity.New(activity.Options{Now: clock.Now})
	fresh.SetRunning(3)
	h = fresh.Hour(clock.Now().Add(5 * time.Minute))
	got = nil
	for _, m := range h[53:] {
		got = append(got, m.Running)
	}
	if diff := cmp.Diff([]int{0, 3, 3, 3, 3, 3, 3}, got); diff != "" {
		t.Errorf("a level set once, 5 minutes on (-want +got):\n%s", diff)
	}
}

// TestPercentiles: p50 and p99 (nearest rank) are within the histogram's
// resolution of the exact ones, for several distributions.
func TestPercentiles(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, tt := range []struct {
		name string
		gen  func(i int) time.Duration
	}{
		{"constant", func(int) time.Duration { return 3 * time.Millisecond }},
		{"uniform µs", func(int) time.Duration { return time.Duration(rnd.IntN(15)) * time.Microsecond }},
		{"uniform ms", func(int) time.Duration { return time.Duration(1+rnd.IntN(1000)) * time.Millisecond }},
		{"long tail", func(i int) time.Duration {
			if i%50 == 0 {
				return time.Duration(5+rnd.IntN(20)) * time.Second
			}
			return time.Duration(200+rnd.IntN(800)) * time.Microsecond
		}},
		{"log-uniform", func(int) time.Duration { return time.Duration(float64(time.Microsecond) * math.Exp2(rnd.Float64()*30)) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := activity.New(activity.Options{Now: testutil.NewClock(t0).Now})
			var ds []time.Duration
			for i := range 1000 {
				d := tt.gen(i).Truncate(time.Microsecond)
				ds = append(ds, d)
				r.Record(activity.Call{Tool: "t", Duration: d})
			}
			slices.Sort(ds)
			exact := func(q float64) time.Duration {
				rank := int(q*float64(len(ds)) + 0.999999)
				return ds[max(rank, 1)-1]
			}
			got := r.Hour(t0)[59].Tools["t"]
			for _, c := range []struct {
				name      string
				got, want time.Duration
			}{{"p50", got.P50, exact(0.50)}, {"p99", got.P99, exact(0.99)}} {
				tol := time.Duration(float64(c.want)*0.0625) + time.Microsecond
				if diff := c.got - c.want; diff > tol || -diff > tol {
					t.Errorf("%s = %v, exact %v (tolerance %v)", c.name, c.got, c.want, tol)
				}
			}
		})
	}
}

// BenchmarkRecord is the hot path's cost, with two subscribers reading.
func BenchmarkRecord(b *testing.B) {
	r := activity.New(activity.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 2 {
		ch := r.Subscribe(ctx)
		go func() {
			for range ch {
			}
		}()
	}
	c := activity.Call{Tool: "read_files", GrantID: "grt_x", Client: "ChatGPT", Project: "prj_x", Duration: 3 * time.Millisecond}
	b.ReportAllocs()
	for b.Loop() {
		r.Record(c)
	}
}
