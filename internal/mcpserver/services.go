package mcpserver

import (
	"context"
	"time"

	"github.com/devspace-dev/devspace/internal/activity"
	"github.com/devspace-dev/devspace/internal/commands"
	"github.com/devspace-dev/devspace/internal/edits"
	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/reads"
	"github.com/devspace-dev/devspace/internal/tasks"
)

// The services the tools call, as the edge needs them. The app passes the
// domain services (the var block below checks that they fit); the
// handler tests pass fakes.

// Opener opens a caller's execution (executions.Service): the Projects
// the caller may open, and project_control's open, hydrate, resume and
// interrupt under the caller's binding lock.
type Opener interface {
	Projects(c executions.Caller) []project.Root
	Lock(ctx context.Context, c executions.Caller) (unlock func(), err error)
	Open(ctx context.Context, c executions.Caller, projectRef, operationID string, worktreeMode bool) (*executions.Opened, bool, error)
	Hydrate(ctx context.Context, c executions.Caller, cursor string) (*executions.Opened, error)
	Resume(ctx context.Context, c executions.Caller, taskRef, operationID string) (*executions.Opened, *executions.Checkpoint, bool, error)
	Interrupt(ctx context.Context, c executions.Caller) (int, error)
}

// Resolver hands out the handle of the caller's open execution
// (executions.Service), which every tool that works in a Project passes
// to its service and releases when the call ends.
type Resolver interface {
	Resolve(ctx context.Context, c executions.Caller) (executions.Handle, error)
}

// Threads lists and changes the caller's Threads (executions.Service),
// for project_thread_control and the widget's part of list_projects.
type Threads interface {
	Threads(ctx context.Context, c executions.Caller) ([]executions.ThreadView, error)
	ThreadStatus(ctx context.Context, c executions.Caller, ref string) (*executions.ThreadView, error)
	Activity(ctx context.Context, c executions.Caller, ref string, since int64, wait time.Duration) ([]executions.ActivityView, error)
	SetThreadStatus(ctx context.Context, c executions.Caller, ref, status string, ifMatch int64) (*executions.ThreadView, error)
}

// Bindings is what the tools need of the execution lifecycle
// (executions.Service).
type Bindings interface {
	Opener
	Resolver
	Threads
}

// Tasks saves progress (save_progress) and counts and lists the
// resumable Tasks of Projects (list_projects) (tasks.Service).
type Tasks interface {
	Save(ctx context.Context, h executions.Handle, r tasks.SaveRequest) (*tasks.Saved, bool, error)
	List(ctx context.Context, projectRef string) ([]tasks.Summary, error)
	Counts(ctx context.Context, refs []string) (map[string]int, error)
}

// Reads runs read_files, inspect, skills and show_changes
// (reads.Service).
type Reads interface {
	ReadFiles(ctx context.Context, h executions.Handle, reqs []reads.FileRequest, allowSensitive bool) (*reads.Files, error)
	Inspect(ctx context.Context, h executions.Handle, ops []reads.Op, allowSensitive bool) (*reads.Inspection, error)
	Skills(ctx context.Context, h executions.Handle, req reads.SkillsRequest) (*reads.Skills, error)
	Changes(ctx context.Context, h executions.Handle, source, cursor string) (*reads.Changes, error)
}

// Edits runs apply_patch and undo_patch (edits.Service); UndoEnabled
// says whether undo_patch is offered.
type Edits interface {
	Apply(ctx context.Context, h executions.Handle, req edits.ApplyRequest) (*edits.Applied, error)
	Undo(ctx context.Context, h executions.Handle, req edits.UndoRequest) (*edits.Undone, error)
	UndoEnabled() bool
}

// Commands runs the process tools (commands.Service); CanRun says whether
// they are offered.
type Commands interface {
	CanRun() bool
	Start(ctx context.Context, h executions.Handle, req commands.StartRequest) (commands.View, error)
	WriteStdin(ctx context.Context, h executions.Handle, in commands.Input) (commands.View, error)
	Read(ctx context.Context, h executions.Handle, req commands.ReadRequest) (*commands.Output, error)
}

// Calls observes tool calls (activity.Recorder): Record is called once
// per call, when it ends, on the call's goroutine, so it must be cheap and
// never block.
type Calls interface {
	Record(c activity.Call)
}

var (
	_ Calls    = (*activity.Recorder)(nil)
	_ Bindings = (*executions.Service)(nil)
	_ Tasks    = (*tasks.Service)(nil)
	_ Reads    = (*reads.Service)(nil)
	_ Edits    = (*edits.Service)(nil)
	_ Commands = (*commands.Service)(nil)
)
