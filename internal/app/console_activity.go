package app

import (
	"context"
	"html/template"
	"log/slog"
	"time"

	"github.com/devspace-dev/devspace/internal/activity"
	"github.com/devspace-dev/devspace/internal/charts"
	"github.com/devspace-dev/devspace/internal/console"
)

// consoleOptions are the console's options with the activity recorder
// and the chart renderer.
func (a *App) consoleOptions(log *slog.Logger, now func() time.Time) console.Options {
	return console.Options{Admin: a, Activity: consoleActivity{a}, Charts: chartRenderer{},
		ListenAddr: a.cfg.AdminListen, Logger: log, Now: now}
}

// consoleActivity is the console's view of the activity recorder and of
// the App's activity methods (activity.go): the same values, with each
// projectRef shown as its Project's label.
type consoleActivity struct{ a *App }

var (
	_ console.Activity      = consoleActivity{}
	_ console.ChartRenderer = chartRenderer{}
)

// label is the label of the Project ref names, or ref itself when it is
// no longer configured ("" stays "").
func (c consoleActivity) label(ref string) string {
	if r, ok := c.a.catalog.Lookup(ref); ok {
		return r.Label
	}
	return ref
}

func (c consoleActivity) call(x activity.Call) console.Call {
	return console.Call{At: x.At, Tool: x.Tool, GrantID: x.GrantID, Client: x.Client, Project: c.label(x.Project),
		Duration: x.Duration, Code: x.Code}
}

func (c consoleActivity) Recent(n int) []console.Call {
	calls := c.a.Activity().Recent(n)
	out := make([]console.Call, len(calls))
	for i, x := range calls {
		out[i] = c.call(x)
	}
	return out
}

// Subscribe relays the recorder's feed; it never blocks the recorder (its
// own subscription drops what a slow reader misses).
func (c consoleActivity) Subscribe(ctx context.Context) <-chan console.Call {
	in := c.a.Activity().Subscribe(ctx)
	out := make(chan console.Call, 16)
	go func() {
		defer close(out)
		for x := range in {
			select {
			case out <- c.call(x):
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

func (c consoleActivity) Hour(now time.Time) []console.Minute {
	hour := c.a.Activity().Hour(now)
	out := make([]console.Minute, len(hour))
	for i, m := range hour {
		tools := make(map[string]console.ToolMinute, len(m.Tools))
		for t, tm := range m.Tools {
			tools[t] = console.ToolMinute{Calls: tm.Calls, Errors: tm.Errors, P50: tm.P50, P99: tm.P99}
		}
		out[i] = console.Minute{Start: m.Start, Tools: tools, Errors: m.Errors, Running: m.Running}
	}
	return out
}

func (c consoleActivity) RunningCommands(ctx context.Context) ([]console.Command, error) {
	cmds, err := c.a.RunningCommands(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]console.Command, len(cmds))
	for i, x := range cmds {
		out[i] = console.Command{ID: x.ID, GrantID: x.GrantID, Client: x.Client, Project: c.label(x.Project),
			CommandLine: x.CommandLine, Started: x.Started, Running: x.Running}
	}
	return out, nil
}

func (c consoleActivity) CommandTail(ctx context.Context, id string, max int) (console.Output, error) {
	o, err := c.a.CommandTail(ctx, id, max)
	return console.Output{Tail: o.Tail, Total: o.Total, Done: o.Done}, err
}

func (c consoleActivity) InterruptCommand(ctx context.Context, id string) error {
	return c.a.InterruptCommand(ctx, id)
}

func (c consoleActivity) RecentPatches(ctx context.Context, n int) ([]console.Patch, error) {
	ps, err := c.a.RecentPatches(ctx, n)
	if err != nil {
		return nil, err
	}
	out := make([]console.Patch, len(ps))
	for i, p := range ps {
		out[i] = console.Patch{ID: p.ID, GrantID: p.GrantID, Project: c.label(p.Project), At: p.At, Files: p.Files, Diff: p.Diff}
	}
	return out, nil
}

func (c consoleActivity) UndoHistory(ctx context.Context, n int) ([]console.Undo, error) {
	us, err := c.a.UndoHistory(ctx, n)
	if err != nil {
		return nil, err
	}
	out := make([]console.Undo, len(us))
	for i, u := range us {
		out[i] = console.Undo{ID: u.ID, GrantID: u.GrantID, Project: c.label(u.Project), At: u.At, Files: u.Files, Undone: u.Undone}
	}
	return out, nil
}

// chartRenderer draws the console's charts with internal/charts.
type chartRenderer struct{}

func (chartRenderer) Lines(title, unit string, series []console.Series, width, height int) template.HTML {
	s := make([]charts.Series, len(series))
	for i, x := range series {
		s[i] = charts.Series{Name: x.Name, Points: x.Points}
	}
	return charts.Lines(title, unit, s, width, height)
}
