package console

import (
	"context"
	"html/template"
	"time"

	"github.com/devspace-dev/devspace/internal/activity"
)

// Activity is what the console needs of the activity source (the
// in-process recorder and the commands, patches and undo services behind
// it); app adapts internal/activity to it. The types below are the
// console's view of that source's values, field for field.
type Activity interface {
	// Recent returns the n latest tool calls, newest first.
	Recent(n int) []Call
	// Subscribe delivers tool calls as they finish until ctx ends, then
	// closes the channel; it never blocks the recorder.
	Subscribe(ctx context.Context) <-chan Call
	// Hour returns the last hour, one Minute each, oldest first.
	Hour(now time.Time) []Minute
	RunningCommands(ctx context.Context) ([]Command, error)
	CommandTail(ctx context.Context, id string, max int) (Output, error)
	InterruptCommand(ctx context.Context, id string) error
	RecentPatches(ctx context.Context, n int) ([]Patch, error)
	UndoHistory(ctx context.Context, n int) ([]Undo, error)
}

// ChartRenderer draws a line chart as inline SVG (internal/charts.Lines).
type ChartRenderer interface {
	Lines(title, unit string, series []Series, width, height int) template.HTML
}

// Series is one line of a chart: one point per minute.
type Series struct {
	Name   string
	Points []float64
}

// The activity source's values, as internal/activity declares them
// (untrusted text in every string field).
type (
	Call       = activity.Call
	ToolMinute = activity.ToolMinute
	Minute     = activity.Minute
	Command    = activity.Command
	Output     = activity.Output
	Patch      = activity.Patch
	Undo       = activity.Undo
)
