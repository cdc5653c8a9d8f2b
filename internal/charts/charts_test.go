package charts_test

import (
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/devspace-dev/devspace/internal/charts"
)

// element is an SVG element as encoding/xml reads it back.
type element struct {
	Name     string
	Attrs    map[string]string
	Text     string
	Children []*element
}

// parse reads svg with encoding/xml, strictly: a chart that is not
// well-formed XML fails the test.
func parse(t *testing.T, svg string) *element {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	d.Strict = true
	var stack []*element
	var root *element
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := &element{Name: tok.Name.Local, Attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.Attrs[a.Name.Local] = a.Value
			}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.Children = append(p.Children, e)
			} else if root != nil {
				t.Fatalf("more than one root element")
			} else {
				root = e
			}
			stack = append(stack, e)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].Text += string(tok)
			} else if strings.TrimSpace(string(tok)) != "" {
				t.Fatalf("text outside the root: %q", tok)
			}
		case xml.ProcInst, xml.Directive:
			t.Fatalf("unexpected %T in a chart", tok)
		}
	}
	if root == nil {
		t.Fatal("no root element")
	}
	return root
}

func (e *element) all(name string) []*element {
	var out []*element
	var walk func(*element)
	walk = func(x *element) {
		if x.Name == name {
			out = append(out, x)
		}
		for _, c := range x.Children {
			walk(c)
		}
	}
	walk(e)
	return out
}

// texts are the visible <text> strings, in order.
func (e *element) texts() []string {
	var out []string
	for _, x := range e.all("text") {
		out = append(out, x.Text)
	}
	return out
}

func TestLinesStructure(t *testing.T) {
	svg := string(charts.Lines("Tool calls per minute", "", []charts.Series{
		{Name: "read_files", Points: []float64{0, 3, 7, 2}},
		{Name: "exec_command", Points: []float64{1, 1, 0, 4}},
	}, 600, 240))
	root := parse(t, svg)
	if root.Name != "svg" {
		t.Fatalf("root is <%s>", root.Name)
	}
	for k, want := range map[string]string{"viewBox": "0 0 600 258", "width": "100%", "role": "img",
		"aria-label": "Tool calls per minute", "xmlns": "http://www.w3.org/2000/svg"} {
		if root.Attrs[k] != want {
			t.Errorf("svg %s = %q, want %q", k, root.Attrs[k], want)
		}
	}
	if _, ok := root.Attrs["height"]; ok {
		t.Error("the svg has a fixed height: it would not scale with its width")
	}
	if root.Children[0].Name != "title" || root.Children[0].Text != "Tool calls per minute" {
		t.Errorf("first child: <%s>%s, want the <title>", root.Children[0].Name, root.Children[0].Text)
	}
	if d := root.all("desc"); len(d) != 1 || d[0].Text != "read_files: latest 2, highest 7; exec_command: latest 4, highest 4." {
		t.Errorf("desc: %+v", d)
	}
	lines := root.all("polyline")
	if len(lines) != 2 {
		t.Fatalf("%d polylines, want one per series", len(lines))
	}
	for i, l := range lines {
		if n := len(strings.Fields(l.Attrs["points"])); n != 4 {
			t.Errorf("polyline %d has %d points, want 4", i, n)
		}
		if l.Attrs["stroke"] == "" || l.Attrs["fill"] != "none" {
			t.Errorf("polyline %d: %v", i, l.Attrs)
		}
	}
	if lines[0].Attrs["stroke"] == lines[1].Attrs["stroke"] {
		t.Error("two series share a colour")
	}
	// y ticks 0, 2, 4, 6, 8; x marks -3, -2 (the middle) and now; the
	// legend names both series.
	want := []string{"Tool calls per minute", "0", "2", "4", "6", "8", "-3", "-2", "now", "read_files", "exec_command"}
	if diff := cmp.Diff(want, root.texts()); diff != "" {
		t.Errorf("texts (-want +got):\n%s", diff)
	}
	// The highest value is drawn at the top of the plot, 8 being the top
	// tick: 7 sits below it, 0 on the axis.
	pts := strings.Fields(lines[0].Attrs["points"])
	y := func(p string) string { return strings.SplitN(p, ",", 2)[1] }
	if y(pts[0]) != "218" { // the plot's bottom, height 240 - 22
		t.Errorf("0 drawn at y=%s", y(pts[0]))
	}
	for _, banned := range []string{"<script", "href", "url(", "style", "<image", "<foreignObject", "on"} {
		for _, el := range append(root.all("svg"), root.all("text")...) {
			for k := range el.Attrs {
				if strings.HasPrefix(k, banned) {
					t.Errorf("attribute %s on <%s>", k, el.Name)
				}
			}
		}
		if banned != "on" && strings.Contains(svg, banned) {
			t.Errorf("the chart contains %q", banned)
		}
	}
}

// TestLinesEscapes: hostile names and titles are text, never markup.
func TestLinesEscapes(t *testing.T) {
	hostile := `</title><script>alert(1)</script><text onload="x">&amp;"'` + "\x00\x1b[31m\xff"
	svg := string(charts.Lines(hostile, `ms"><script>`, []charts.Series{{Name: hostile, Points: []float64{1, 2}}}, 390, 200))
	root := parse(t, svg)
	if n := len(root.all("script")); n != 0 {
		t.Fatalf("%d <script> elements", n)
	}
	if strings.Contains(svg, "<script") || strings.Contains(svg, `onload="`) {
		t.Fatalf("raw markup from a name reached the chart:\n%s", svg)
	}
	// encoding/xml decoded the escapes back to the name (control
	// characters and invalid UTF-8 replaced).
	clean := strings.NewReplacer("\x00", "\uFFFD", "\x1b", "\uFFFD", "\xff", "\uFFFD").Replace(hostile)
	if got := root.Attrs["aria-label"]; got != clean {
		t.Errorf("aria-label = %q, want %q", got, clean)
	}
	var titled bool
	for _, el := range root.all("title") {
		if el.Text == clean {
			titled = true
		}
	}
	if !titled {
		t.Error("no <title> carries the name as text")
	}
	for _, el := range root.all("text") {
		if strings.Contains(el.Text, "ms\"><script>") {
			return // the unit as text on the axis
		}
	}
	t.Error("the unit is not on the axis as text")
}

func TestLinesEdgeCases(t *testing.T) {
	for _, tt := range []struct {
		name   string
		series []charts.Series
		// polylines is how many lines are drawn, and noData whether the
		// chart says it has none.
		polylines int
		noData    bool
	}{
		{"no series", nil, 0, true},
		{"empty series", []charts.Series{{Name: "a"}}, 1, true},
		{"all zero", []charts.Series{{Name: "a", Points: []float64{0, 0, 0}}}, 1, false},
		{"all NaN", []charts.Series{{Name: "a", Points: []float64{math.NaN(), math.Inf(1)}}}, 1, true},
		{"NaN gaps", []charts.Series{{Name: "a", Points: []float64{1, math.NaN(), 3, math.Inf(-1)}}}, 1, false},
		{"huge", []charts.Series{{Name: "a", Points: []float64{math.MaxFloat64, -math.MaxFloat64, 1e300}}}, 1, false},
		{"tiny", []charts.Series{{Name: "a", Points: []float64{1e-300, 5e-301}}}, 1, false},
		{"negative", []charts.Series{{Name: "a", Points: []float64{-5, -2}}}, 1, false},
		{"one point", []charts.Series{{Name: "a", Points: []float64{4}}}, 1, false},
		{"long", []charts.Series{{Name: "a", Points: make([]float64, 100000)}}, 1, false},
		{"many series", func() []charts.Series {
			var s []charts.Series
			for range 40 {
				s = append(s, charts.Series{Name: "x", Points: []float64{1}})
			}
			return s
		}(), charts.MaxSeries, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			svg := string(charts.Lines("t", "s", tt.series, 0, 0))
			root := parse(t, svg)
			if n := len(root.all("polyline")); n != tt.polylines {
				t.Errorf("%d polylines, want %d", n, tt.polylines)
			}
			texts := strings.Join(root.texts(), "|")
			if got := strings.Contains(texts, "No data"); got != tt.noData {
				t.Errorf("says no data: %v, want %v (%s)", got, tt.noData, texts)
			}
			for _, bad := range []string{"NaN", "Inf"} {
				if strings.Contains(svg, bad) {
					t.Errorf("%s in the chart:\n%s", bad, svg)
				}
			}
			for _, l := range root.all("polyline") {
				if n := len(strings.Fields(l.Attrs["points"])); n > charts.MaxPoints {
					t.Errorf("a polyline of %d points", n)
				}
			}
			if len(svg) > 64<<10 {
				t.Errorf("chart is %d bytes", len(svg))
			}
		})
	}
	// Past MaxSeries the legend says how many were left out.
	var many []charts.Series
	for range charts.MaxSeries + 3 {
		many = append(many, charts.Series{Name: "x", Points: []float64{1}})
	}
	if texts := strings.Join(parse(t, string(charts.Lines("t", "", many, 0, 0))).texts(), "|"); !strings.Contains(texts, "and 3 more") {
		t.Errorf("legend does not count the series left out: %s", texts)
	}
}

// TestLinesLongNameClipped: a long name is cut in the legend, whole in
// its tooltip.
func TestLinesLongNameClipped(t *testing.T) {
	name := strings.Repeat("n", 200)
	root := parse(t, string(charts.Lines("t", "", []charts.Series{{Name: name, Points: []float64{1, 2}}}, 390, 0)))
	texts := root.texts()
	if last := texts[len(texts)-1]; len([]rune(last)) > 22 || !strings.HasSuffix(last, "…") {
		t.Errorf("legend shows %q", last)
	}
	found := false
	for _, el := range root.all("title") {
		found = found || el.Text == name
	}
	if !found {
		t.Error("the whole name is in no tooltip")
	}
}
