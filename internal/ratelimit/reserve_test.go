package ratelimit

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestReserve(t *testing.T) {
	t.Run("one attempt in flight per key", func(t *testing.T) {
		l := New(Options{Now: newFakeClock().Now})
		done, _, ok := l.Reserve("req:1", "client:a")
		if !ok {
			t.Fatal("first reservation refused")
		}
		if _, wait, ok := l.Reserve("req:2", "client:a"); ok || wait != BusyRetryAfter {
			t.Fatalf("second reservation on a busy key: ok=%v wait=%v", ok, wait)
		}
		if _, _, ok := l.Reserve("req:2", "client:b"); !ok {
			t.Fatal("reservation on other keys refused")
		}
		done(false)
		done(false) // a second call does nothing
		if got := l.InFlight(); got != 1 {
			t.Fatalf("InFlight = %d, want 1", got)
		}
	})
	t.Run("global bound", func(t *testing.T) {
		l := New(Options{MaxInFlight: 2, Now: newFakeClock().Now})
		d1, _, ok1 := l.Reserve("a")
		_, _, ok2 := l.Reserve("b")
		if _, _, ok3 := l.Reserve("c"); !ok1 || !ok2 || ok3 {
			t.Fatalf("reservations = %v %v %v, want true true false", ok1, ok2, ok3)
		}
		d1(true)
		if _, _, ok := l.Reserve("c"); !ok {
			t.Fatal("reservation after a release refused")
		}
	})
	t.Run("back-off counts attempts, not completions", func(t *testing.T) {
		clk := newFakeClock()
		l := New(Options{Free: 2, Base: time.Second, MaxInFlight: 100, Now: clk.Now})
		for i := range 3 {
			done, _, ok := l.Reserve("k"+string(rune('a'+i)), "client")
			if !ok {
				t.Fatalf("attempt %d refused", i+1)
			}
			done(false) // finished, but even unfinished ones count
		}
		if _, wait, ok := l.Reserve("kz", "client"); ok || wait != time.Second {
			t.Fatalf("fourth attempt: ok=%v wait=%v, want refused for 1s", ok, wait)
		}
		clk.Advance(time.Second)
		done, _, ok := l.Reserve("kz", "client")
		if !ok {
			t.Fatal("attempt after back-off refused")
		}
		done(true)
		if _, _, ok := l.Reserve("kz", "client"); !ok {
			t.Fatal("success did not forget the keys")
		}
	})
	t.Run("concurrent reservations on one key", func(t *testing.T) {
		l := New(Options{MaxInFlight: 100, Now: newFakeClock().Now})
		var granted atomic.Int32
		var wg, attempted sync.WaitGroup
		release := make(chan struct{})
		for range 50 {
			wg.Add(1)
			attempted.Add(1)
			go func() {
				defer wg.Done()
				done, _, ok := l.Reserve("req:x")
				attempted.Done()
				if ok {
					granted.Add(1)
					<-release
					done(false)
				}
			}()
		}
		attempted.Wait() // every reservation was tried while the winner held it
		close(release)
		wg.Wait()
		if granted.Load() != 1 {
			t.Fatalf("%d concurrent reservations granted on one key, want 1", granted.Load())
		}
	})
}
