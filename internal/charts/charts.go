// Package charts draws small line charts as inline SVG for the Owner's
// console: no script, no style sheet, no external reference, every text
// escaped, so a chart is safe under a strict Content-Security-Policy and
// whatever the series are named. The SVG scales to its container's width
// (a 390 px phone as well as a desktop) through its viewBox.
package charts

import (
	"encoding/xml"
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Series is one line: a name (untrusted text: a tool name, an error
// code) and its values, one per x step, oldest first. NaN and infinite
// values are gaps: the line joins the values on either side.
type Series struct {
	Name   string
	Points []float64
}

// Bounds of a chart.
const (
	DefaultWidth  = 600
	DefaultHeight = 240
	// MaxSeries bounds the lines drawn; the legend says how many more
	// there were.
	MaxSeries = 16
	// MaxPoints bounds the points of a line; a longer series is reduced
	// to this many by taking each span's largest value.
	MaxPoints = 720
	maxSide   = 4000
	nameRunes = 22 // legend names are cut past this, the full name in a tooltip
)

// palette holds colours told apart with the common colour-vision
// deficiencies (Okabe and Ito), darkened where white showed through;
// past it, lines are dashed as well.
var palette = []string{"#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#8c6d1f"}

var dashes = []string{"", "6 3", "2 3", "8 3 2 3"}

// layout of the drawing, in viewBox units.
const (
	marginLeft   = 56
	marginRight  = 12
	marginTop    = 28
	axisBelow    = 18 // x axis labels
	legendRow    = 18
	legendColumn = 150
	fontSize     = 11
)

// Lines draws series as a line chart titled title, values in unit (""
// for plain counts; "ms", "s" or any other is written after each axis
// label), in a viewBox of width by height (DefaultWidth and
// DefaultHeight when not positive) plus the legend's rows. The y axis
// starts at zero (below it for negative values) and carries five
// labelled ticks; the x axis marks the first, middle and last step
// counted back from the newest ("-59", "-30", "now" when steps are
// minutes). It returns a self-contained <svg> element with role="img",
// an aria-label and a <title> naming the chart and a <desc> giving each
// line's latest and largest value. Empty input, all-zero, NaN and huge
// values draw a sane chart. Safe for concurrent use.
func Lines(title, unit string, series []Series, width, height int) template.HTML {
	if width <= 0 {
		width = DefaultWidth
	}
	if height <= 0 {
		height = DefaultHeight
	}
	width, height = min(max(width, 160), maxSide), min(max(height, 100), maxSide)
	more := 0
	if len(series) > MaxSeries {
		more = len(series) - MaxSeries
		series = series[:MaxSeries]
	}
	lines := make([]Series, len(series))
	steps := 0
	for i, s := range series {
		lines[i] = Series{Name: s.Name, Points: reduce(s.Points)}
		steps = max(steps, len(lines[i].Points))
	}
	lo, hi, has := extent(lines)
	scale := newScale(lo, hi)

	perRow := max(1, (width-marginLeft-marginRight)/legendColumn)
	items := len(lines)
	if more > 0 {
		items++
	}
	rows := (items + perRow - 1) / perRow
	total := height + rows*legendRow
	plotX0, plotX1 := float64(marginLeft), float64(width-marginRight)
	plotY0, plotY1 := float64(marginTop), float64(height-axisBelow-4)
	y := func(v float64) float64 { return plotY1 - scale.frac(v)*(plotY1-plotY0) }
	x := func(i, n int) float64 {
		// The newest point is at the right edge whatever the length: series
		// shorter than the longest end "now" too.
		if steps <= 1 {
			return (plotX0 + plotX1) / 2
		}
		return plotX0 + float64(steps-n+i)*(plotX1-plotX0)/float64(steps-1)
	}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="100%%" preserveAspectRatio="xMidYMid meet" role="img" aria-label="%s" font-family="system-ui, sans-serif" font-size="%d">`,
		width, total, esc(title), fontSize)
	fmt.Fprintf(&b, `<title>%s</title><desc>%s</desc>`, esc(title), esc(describe(lines, more, unit, has)))
	fmt.Fprintf(&b, `<text x="%d" y="16" font-weight="600" fill="#222">%s</text>`, marginLeft, esc(clip(title, 80)))

	// Horizontal grid and y labels.
	for _, t := range scale.ticks() {
		ty := y(t)
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#ddd" stroke-width="1"/>`, num(plotX0), num(ty), num(plotX1), num(ty))
		fmt.Fprintf(&b, `<text x="%d" y="%s" text-anchor="end" dominant-baseline="middle" fill="#555">%s</text>`,
			marginLeft-6, num(ty), esc(label(t, unit)))
	}
	// Axes.
	fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#888" stroke-width="1"/>`, num(plotX0), num(plotY0), num(plotX0), num(plotY1))
	fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#888" stroke-width="1"/>`, num(plotX0), num(y(0)), num(plotX1), num(y(0)))
	for _, i := range xTicks(steps) {
		tx := x(i, steps)
		text := "now"
		if i < steps-1 {
			text = strconv.Itoa(i - (steps - 1))
		}
		anchor := "middle"
		if steps > 1 && i == steps-1 {
			anchor = "end"
		}
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="%s" fill="#555">%s</text>`, num(tx), num(plotY1+15), anchor, text)
	}
	if !has {
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle" fill="#777">No data</text>`,
			num((plotX0+plotX1)/2), num((plotY0+plotY1)/2))
	}

	// Lines.
	for i, s := range lines {
		color, dash := palette[i%len(palette)], dashes[(i/len(palette))%len(dashes)]
		var pts []string
		for j, v := range s.Points {
			if finite(v) {
				pts = append(pts, num(x(j, len(s.Points)))+","+num(y(v)))
			}
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" stroke-linejoin="round" stroke-linecap="round"`, color)
		if dash != "" {
			fmt.Fprintf(&b, ` stroke-dasharray="%s"`, dash)
		}
		fmt.Fprintf(&b, ` points="%s"><title>%s</title></polyline>`, strings.Join(pts, " "), esc(s.Name))
		if len(pts) == 1 {
			xy := strings.SplitN(pts[0], ",", 2)
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`, xy[0], xy[1], color)
		}
	}

	// Legend.
	for i := range items {
		lx := marginLeft + (i%perRow)*legendColumn
		ly := height + (i/perRow)*legendRow + legendRow/2
		if i == len(lines) {
			fmt.Fprintf(&b, `<text x="%d" y="%d" dominant-baseline="middle" fill="#555">and %d more</text>`, lx, ly, more)
			continue
		}
		color, dash := palette[i%len(palette)], dashes[(i/len(palette))%len(dashes)]
		fmt.Fprintf(&b, `<g><title>%s</title><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"`,
			esc(lines[i].Name), lx, ly, lx+18, ly, color)
		if dash != "" {
			fmt.Fprintf(&b, ` stroke-dasharray="%s"`, dash)
		}
		fmt.Fprintf(&b, `/><text x="%d" y="%d" dominant-baseline="middle" fill="#222">%s</text></g>`, lx+24, ly, esc(clip(lines[i].Name, nameRunes)))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // every text above went through esc
}

// reduce bounds a series to MaxPoints, each kept point the largest finite
// value of its span (a spike stays visible); a span of gaps stays a gap.
func reduce(p []float64) []float64 {
	if len(p) <= MaxPoints {
		return p
	}
	out := make([]float64, MaxPoints)
	for i := range out {
		lo, hi := i*len(p)/MaxPoints, (i+1)*len(p)/MaxPoints
		best := math.NaN()
		for _, v := range p[lo:hi] {
			if finite(v) && (math.IsNaN(best) || v > best) {
				best = v
			}
		}
		out[i] = best
	}
	return out
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// extent is the smallest and largest finite value of the lines, and
// whether there is one.
func extent(lines []Series) (lo, hi float64, has bool) {
	for _, s := range lines {
		for _, v := range s.Points {
			if !finite(v) {
				continue
			}
			if !has {
				lo, hi, has = v, v, true
				continue
			}
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	return lo, hi, has
}

// scale maps values to [0, 1] between round bounds that include zero.
type scale struct{ lo, hi, step float64 }

func newScale(lo, hi float64) scale {
	lo, hi = min(lo, 0), max(hi, 0)
	if hi == lo {
		hi = lo + 1
	}
	quarter := hi/4 - lo/4 // a quarter of the span; the span itself may overflow
	step := niceStep(quarter)
	top, bottom := math.Ceil(hi/step)*step, math.Floor(lo/step)*step
	if !finite(top) || !finite(bottom) {
		return scale{lo: lo, hi: hi, step: quarter}
	}
	return scale{lo: bottom, hi: top, step: step}
}

// niceStep rounds a tick spacing up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || !finite(raw) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if s := m * p; s >= raw*(1-1e-9) && finite(s) {
			return s
		}
	}
	return raw
}

func (s scale) frac(v float64) float64 {
	f := (v/2 - s.lo/2) / (s.hi/2 - s.lo/2) // halves: no difference of huge values overflows
	if !finite(f) {
		return 0
	}
	return min(max(f, 0), 1)
}

// ticks are the labelled values: the bounds and the steps between them,
// at most nine.
func (s scale) ticks() []float64 {
	n := s.hi/s.step - s.lo/s.step
	if !finite(n) || n < 1 || n > 8 {
		return []float64{s.lo, s.hi}
	}
	var out []float64
	for i := 0; i <= int(math.Round(n)); i++ {
		out = append(out, (s.lo/2+float64(i)*(s.step/2))*2) // halves: no overflow on the way to a huge bound
	}
	return out
}

// xTicks are the steps labelled on the x axis: first, middle and last.
func xTicks(steps int) []int {
	switch {
	case steps <= 0:
		return nil
	case steps == 1:
		return []int{0}
	case steps == 2:
		return []int{0, 1}
	}
	return []int{0, (steps - 1) / 2, steps - 1}
}

// label writes a tick value with SI prefixes past a thousand, and unit.
func label(v float64, unit string) string {
	a := math.Abs(v)
	var s string
	switch {
	case a >= 1e15:
		s = strconv.FormatFloat(v, 'e', 1, 64)
	case a >= 1e12:
		s = short(v/1e12) + "T"
	case a >= 1e9:
		s = short(v/1e9) + "G"
	case a >= 1e6:
		s = short(v/1e6) + "M"
	case a >= 1e3:
		s = short(v/1e3) + "k"
	default:
		s = short(v)
	}
	if unit != "" {
		s += " " + unit
	}
	return s
}

func short(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		s = "0"
	}
	return s
}

// describe is the chart in words, for screen readers.
func describe(lines []Series, more int, unit string, has bool) string {
	if !has {
		return "No data."
	}
	var parts []string
	for _, s := range lines {
		last, peak, seen := 0.0, 0.0, false
		for _, v := range s.Points {
			if !finite(v) {
				continue
			}
			if !seen || v > peak {
				peak = v
			}
			last, seen = v, true
		}
		if !seen {
			parts = append(parts, clip(s.Name, 80)+": no data")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: latest %s, highest %s", clip(s.Name, 80), label(last, unit), label(peak, unit)))
	}
	if more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more series not drawn", more))
	}
	return strings.Join(parts, "; ") + "."
}

// clip cuts s to n characters with an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// esc makes text safe as XML character data and attribute values, which
// is what HTML's parser needs of inline SVG too: markup characters and
// quotes escaped, characters XML forbids (controls, invalid UTF-8)
// replaced by U+FFFD.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// num writes a coordinate with at most two decimals.
func num(v float64) string {
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}
