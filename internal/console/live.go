package console

import (
	"context"
	"html/template"
	"time"
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

// Call is one finished tool call. Code is "" when it succeeded.
type Call struct {
	At                             time.Time
	Tool, GrantID, Client, Project string
	Duration                       time.Duration
	Code                           string
}

// ToolMinute is one tool's calls in one minute.
type ToolMinute struct {
	Calls, Errors int
	P50, P99      time.Duration
}

// Minute is one minute of activity.
type Minute struct {
	Start   time.Time
	Tools   map[string]ToolMinute
	Errors  map[string]int // by error code
	Running int            // commands running at its end
}

// Command is one command a grant started; CommandLine is redacted.
type Command struct {
	ID, GrantID, Client, Project, CommandLine string
	Started                                   time.Time
	Running                                   bool
}

// Output is a command's output tail.
type Output struct {
	Tail  string
	Total int64
	Done  bool
}

// Patch is one applied patch with its diff.
type Patch struct {
	ID, GrantID, Project string
	At                   time.Time
	Files                []string
	Diff                 string
}

// Undo is one undo snapshot of a patch.
type Undo struct {
	ID, GrantID, Project string
	At                   time.Time
	Files                []string
	Undone               bool
}
