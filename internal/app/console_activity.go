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
	x.Project = c.label(x.Project)
	return x
}

func (c consoleActivity) Recent(n int) []console.Call {
	calls := c.a.Activity().Recent(n)
	for i := range calls {
		calls[i] = c.call(calls[i])
	}
	return calls
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

func (c consoleActivity) Hour(now time.Time) []console.Minute { return c.a.Activity().Hour(now) }

func (c consoleActivity) RunningCommands(ctx context.Context) ([]console.Command, error) {
	cmds, err := c.a.RunningCommands(ctx)
	for i := range cmds {
		cmds[i].Project = c.label(cmds[i].Project)
	}
	return cmds, err
}

func (c consoleActivity) CommandTail(ctx context.Context, id string, max int) (console.Output, error) {
	return c.a.CommandTail(ctx, id, max)
}

func (c consoleActivity) InterruptCommand(ctx context.Context, id string) error {
	return c.a.InterruptCommand(ctx, id)
}

func (c consoleActivity) RecentPatches(ctx context.Context, n int) ([]console.Patch, error) {
	ps, err := c.a.RecentPatches(ctx, n)
	for i := range ps {
		ps[i].Project = c.label(ps[i].Project)
	}
	return ps, err
}

func (c consoleActivity) UndoHistory(ctx context.Context, n int) ([]console.Undo, error) {
	us, err := c.a.UndoHistory(ctx, n)
	for i := range us {
		us[i].Project = c.label(us[i].Project)
	}
	return us, err
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
