package console

import (
	"encoding/json"
	"html/template"
	"net/http"
	"sort"
	"time"
)

// Live parts are Server-Sent Events: JSON the page's script puts into the
// page as text (textContent), never as markup.

// outputTailBytes is how much of a command's output the live tail shows.
const outputTailBytes = 16 << 10

// streamTick is how often a stream sends the running commands or the
// output tail again.
const streamTick = 500 * time.Millisecond

// sse prepares w for an event stream; false when it cannot flush.
func sse(w http.ResponseWriter) (send func(event string, v any) error, ok bool) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return nil, false
	}
	return func(event string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := w.Write([]byte("event: " + event + "\ndata: " + string(b) + "\n\n")); err != nil {
			return err
		}
		return rc.Flush()
	}, true
}

// activityStream sends each tool call as it finishes ("call") and the
// running commands every streamTick ("commands"), while alive.
func (c *Console) activityStream(w http.ResponseWriter, r *http.Request, alive func() bool) {
	a := c.opts.Activity
	if a == nil {
		http.Error(w, "No activity source.", http.StatusNotFound)
		return
	}
	send, ok := sse(w)
	if !ok {
		return
	}
	ctx := r.Context()
	calls := a.Subscribe(ctx)
	tick := time.NewTicker(streamTick)
	defer tick.Stop()
	var last []byte
	for {
		select {
		case <-ctx.Done():
			return
		case call, open := <-calls:
			if !open || !alive() {
				return
			}
			if send("call", c.callRowOf(c.now(), call)) != nil {
				return
			}
		case <-tick.C:
			if !alive() {
				return
			}
			cmds, err := a.RunningCommands(ctx)
			if err != nil {
				continue
			}
			rows := c.commandRows(c.now(), cmds)
			b, _ := json.Marshal(rows)
			if string(b) == string(last) {
				continue
			}
			last = b
			if send("commands", rows) != nil {
				return
			}
		}
	}
}

// outputStream sends a command's output tail ("output") whenever it grew,
// until the command is done, while alive.
func (c *Console) outputStream(w http.ResponseWriter, r *http.Request, alive func() bool) {
	a := c.opts.Activity
	if a == nil {
		http.Error(w, "No activity source.", http.StatusNotFound)
		return
	}
	id := r.URL.Query().Get("id")
	out, err := a.CommandTail(r.Context(), id, outputTailBytes)
	if err != nil {
		http.Error(w, "No such command.", http.StatusNotFound)
		return
	}
	send, ok := sse(w)
	if !ok {
		return
	}
	ctx := r.Context()
	tick := time.NewTicker(streamTick)
	defer tick.Stop()
	total := int64(-1)
	for {
		if out.Total != total || out.Done {
			total = out.Total
			if send("output", out) != nil || out.Done {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !alive() {
			return
		}
		if out, err = a.CommandTail(ctx, id, outputTailBytes); err != nil {
			return
		}
	}
}

type chartsData struct {
	Available bool
	Charts    []template.HTML
}

// maxChartSeries bounds the lines of one chart (the busiest tools or codes).
const maxChartSeries = 6

func (c *Console) chartsPage(w http.ResponseWriter, r *http.Request, ss *session) {
	d := chartsData{Available: c.opts.Activity != nil && c.opts.Charts != nil}
	if d.Available {
		hour := c.opts.Activity.Hour(c.now())
		calls, p50, p99, errs := hourSeries(hour)
		running := Series{Name: "running", Points: make([]float64, len(hour))}
		for i, m := range hour {
			running.Points[i] = float64(m.Running)
		}
		const width, height = 640, 240
		ch := c.opts.Charts
		d.Charts = []template.HTML{
			ch.Lines("Tool calls per minute", "calls", calls, width, height),
			ch.Lines("Latency p50 per tool", "ms", p50, width, height),
			ch.Lines("Latency p99 per tool", "ms", p99, width, height),
			ch.Lines("Commands running", "commands", []Series{running}, width, height),
			ch.Lines("Errors per minute by code", "errors", errs, width, height),
		}
	}
	c.render(w, r, http.StatusOK, "charts", view{Title: "Charts", Nav: "charts", CSRF: ss.csrf, Data: d})
}

// hourSeries turns an hour of minutes into the charts' series: the busiest
// tools' calls and latencies, and the commonest error codes.
func hourSeries(hour []Minute) (calls, p50, p99, errs []Series) {
	toolCalls := map[string]int{}
	codeCount := map[string]int{}
	for _, m := range hour {
		for t, tm := range m.Tools {
			toolCalls[t] += tm.Calls
		}
		for code, n := range m.Errors {
			codeCount[code] += n
		}
	}
	for _, t := range top(toolCalls) {
		s1, s2, s3 := Series{Name: t}, Series{Name: t}, Series{Name: t}
		for _, m := range hour {
			tm := m.Tools[t]
			s1.Points = append(s1.Points, float64(tm.Calls))
			s2.Points = append(s2.Points, float64(tm.P50)/float64(time.Millisecond))
			s3.Points = append(s3.Points, float64(tm.P99)/float64(time.Millisecond))
		}
		calls, p50, p99 = append(calls, s1), append(p50, s2), append(p99, s3)
	}
	for _, code := range top(codeCount) {
		s := Series{Name: code}
		for _, m := range hour {
			s.Points = append(s.Points, float64(m.Errors[code]))
		}
		errs = append(errs, s)
	}
	return calls, p50, p99, errs
}

// top returns the keys with the largest counts, at most maxChartSeries,
// largest first (ties by name).
func top(counts map[string]int) []string {
	keys := make([]string, 0, len(counts))
	for k, n := range counts {
		if n > 0 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	if len(keys) > maxChartSeries {
		keys = keys[:maxChartSeries]
	}
	return keys
}
