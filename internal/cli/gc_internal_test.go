package cli

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestPauseGC checks that the start's pause bounds the heap and that
// resuming gives back exactly the collector settings it found, including
// an owner's GOGC and GOMEMLIMIT.
func TestPauseGC(t *testing.T) {
	for _, c := range []struct {
		name      string
		percent   int
		limit     int64
		wantLimit int64
	}{
		{"defaults", 100, math.MaxInt64, startHeapLimit},
		{"owner's settings", 250, 1 << 30, startHeapLimit},
		{"lower GOMEMLIMIT kept", 100, 32 << 20, 32 << 20},
		{"GOGC=off kept", -1, 1 << 30, startHeapLimit},
	} {
		t.Run(c.name, func(t *testing.T) {
			oldPercent := debug.SetGCPercent(c.percent)
			oldLimit := debug.SetMemoryLimit(c.limit)
			t.Cleanup(func() { debug.SetGCPercent(oldPercent); debug.SetMemoryLimit(oldLimit) })

			resume := pauseGC()
			if p := debug.SetGCPercent(-1); p != -1 {
				t.Errorf("paused: GOGC %d, want off", p)
			}
			if l := debug.SetMemoryLimit(-1); l != c.wantLimit {
				t.Errorf("paused: memory limit %d, want %d", l, c.wantLimit)
			}
			resume()
			if p := debug.SetGCPercent(c.percent); p != c.percent {
				t.Errorf("resumed: GOGC %d, want %d", p, c.percent)
			}
			if l := debug.SetMemoryLimit(-1); l != c.limit {
				t.Errorf("resumed: memory limit %d, want %d", l, c.limit)
			}
		})
	}
}
