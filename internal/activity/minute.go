package activity

import (
	"math/bits"
	"time"
)

// bucket is one minute of calls. It holds at most MaxToolsPerMinute
// tools and MaxCodesPerMinute codes, whatever is recorded.
type bucket struct {
	start        time.Time
	tools        map[string]*toolBucket
	errors       map[string]int
	running      int // most commands at once in the minute
	runningFirst int // level when the minute began
	runningLast  int // level when it was last set
}

type toolBucket struct {
	calls, errors int
	hist          histogram
}

func (b *bucket) add(c Call) {
	if b.tools == nil {
		b.tools = map[string]*toolBucket{}
		b.errors = map[string]int{}
	}
	t := b.tools[c.Tool]
	if t == nil {
		name := c.Tool
		if len(b.tools) >= MaxToolsPerMinute-1 && name != Other {
			name = Other
		}
		if t = b.tools[name]; t == nil {
			t = &toolBucket{}
			b.tools[name] = t
		}
	}
	t.calls++
	t.hist.add(c.Duration)
	if c.Code == "" {
		return
	}
	t.errors++
	code := c.Code
	if _, ok := b.errors[code]; !ok && len(b.errors) >= MaxCodesPerMinute-1 {
		code = Other
	}
	b.errors[code]++
}

func (b *bucket) fill(m *Minute) {
	for name, t := range b.tools {
		m.Tools[name] = ToolMinute{Calls: t.calls, Errors: t.errors, P50: t.hist.quantile(0.50), P99: t.hist.quantile(0.99)}
	}
	for code, n := range b.errors {
		m.Errors[code] = n
	}
	m.Running = b.running
}

// histogram counts durations in microseconds: exactly below 16 µs, and
// above in 8 buckets per power of two (each 1/8 of its octave wide, so a
// bucket's midpoint is within 6.25 % of any value in it), up to 2^36 µs
// (about 19 hours; longer counts in the last bucket). 272 counters, 1 KiB,
// whatever the number of calls.
type histogram struct {
	counts [histBuckets]uint32
	n      uint32
}

const (
	histLinear    = 16 // values below are their own bucket
	histSub       = 8  // buckets per power of two above
	histSubBits   = 3
	histMaxExp    = 36
	histBuckets   = histLinear + (histMaxExp-4)*histSub
	histMaxMicros = 1<<histMaxExp - 1
)

func (h *histogram) add(d time.Duration) {
	us := d.Microseconds()
	if us < 0 {
		us = 0
	}
	h.counts[bucketOf(uint64(min(us, histMaxMicros)))]++
	h.n++
}

// bucketOf is the bucket of us microseconds (at most histMaxMicros).
func bucketOf(us uint64) int {
	if us < histLinear {
		return int(us)
	}
	e := bits.Len64(us) - 1 // us is in [2^e, 2^(e+1)), e >= 4
	sub := int(us>>(e-histSubBits)) & (histSub - 1)
	return histLinear + (e-4)*histSub + sub
}

// bounds are the values bucket i holds, [lo, hi).
func bounds(i int) (lo, hi uint64) {
	if i < histLinear {
		return uint64(i), uint64(i) + 1
	}
	e := (i-histLinear)/histSub + 4
	sub := uint64((i - histLinear) % histSub)
	width := uint64(1) << (e - histSubBits)
	lo = 1<<e + sub*width
	return lo, lo + width
}

// quantile is the q-quantile (nearest rank): the midpoint of the bucket
// holding the ⌈q·n⌉-th smallest value; 0 when empty.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint32(q*float64(h.n) + 0.999999)
	rank = min(max(rank, 1), h.n)
	var seen uint32
	for i, c := range h.counts {
		if seen += c; seen >= rank {
			lo, hi := bounds(i)
			if i < histLinear {
				return time.Duration(lo) * time.Microsecond
			}
			return time.Duration((lo+hi)/2) * time.Microsecond
		}
	}
	return 0
}
