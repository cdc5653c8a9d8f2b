// Package commands runs the model's commands on a Project: it owns the
// table of commands per execution, the per-Project bound, starting a
// command (idempotently, under the Project's Command lock), writing its
// input, polling, paging, tailing and searching its output, interrupting
// an execution's commands, and closing executions — killing their
// commands, retiring their retained output and deleting their undo
// snapshots.
//
// It takes plain inputs (the execution the edge resolved, the Project,
// the command) and returns plain results; the MCP edge decodes, resolves
// the execution, calls one method and renders. Errors are this package's
// sentinels or process, rootlock, operation and cursor errors, wrapped
// with %w.
package commands

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/devspace-dev/devspace/internal/cursor"
	"github.com/devspace-dev/devspace/internal/fault"
	"github.com/devspace-dev/devspace/internal/idempotency"
	"github.com/devspace-dev/devspace/internal/process"
	"github.com/devspace-dev/devspace/internal/rootlock"
	"github.com/devspace-dev/devspace/internal/undo"
)

// Errors owned by this package; each says its code (docs/errors.md),
// which the edge looks up.
var (
	// ErrNotFound: the caller's execution has no command with that ref
	// (another execution's, session's or grant's ref gets the same answer).
	ErrNotFound = fault.New("process_not_found", "no such command")
	// ErrOutputGone: the command's retained output was retired (expired,
	// its execution closed, the spool cap) between the lookup and the read.
	ErrOutputGone = fault.New("process_not_found", "command output no longer retained")
	// ErrCursorMismatch: the cursor belongs to another command or mode.
	ErrCursorMismatch = fault.New("cursor_invalid", "cursor belongs to another command or mode")
	// ErrWorkingDirMissing: the working directory does not exist.
	ErrWorkingDirMissing = fault.New("working_directory_invalid", "working directory does not exist")
	// ErrWorkingDirNotDir: the working directory is not a directory.
	ErrWorkingDirNotDir = fault.New("working_directory_invalid", "working directory is not a directory")
	// ErrGrantShare: the caller's grant already runs its share of the
	// command slots (MaxPerGrantPerProject, MaxPerGrant); its own
	// commands must end first.
	ErrGrantShare = fault.New("process_limit", "the grant's share of command slots is in use")
	// ErrSlotsBusy: the slots are taken by several grants' commands
	// (MaxPerProject, or the server's); a retry later may start.
	ErrSlotsBusy = fault.New("process_slots_busy", "command slots busy")
)

// Limits of the process tools (docs/design.md §9).
const (
	// MaxPerProject bounds live commands per Project across executions and
	// grants (docs/design.md §7); the process manager bounds them per
	// execution and in all.
	MaxPerProject = 8
	// MaxPerGrantPerProject is one grant's share of a Project's slots: a
	// grant never takes them all, so another grant approved for the same
	// Project can always start a command.
	MaxPerGrantPerProject = MaxPerProject / 2
	// MaxPerGrant is one grant's share of the server's slots
	// (process.DefaultMaxLive), across its Projects.
	MaxPerGrant = process.DefaultMaxLive / 2
	// MaxTimeout bounds a command's timeout (process.MaxTimeout).
	MaxTimeout = process.MaxTimeout
	// ReasonOutOfMemory and ReasonPidsLimit are the kill reasons of a
	// command stopped past its limits (View.KillReason).
	ReasonOutOfMemory = process.ReasonOutOfMemory
	ReasonPidsLimit   = process.ReasonPidsLimit
	// OutputPageDefault and OutputPageMax bound a page of output.
	OutputPageDefault = 40000
	OutputPageMax     = 256000
	// LiveWaitMax bounds how long a live poll waits for new output.
	LiveWaitMax = 10 * time.Second

	inlineBytes = 40000
	startWait   = 2 * time.Second
	// lockWait bounds how long a start waits for the Project's root lock
	// before answering rootlock.ErrBusy.
	lockWait = rootlock.DefaultWait
)

// Checkpointer records a sanitized entry on an execution's Thread; the
// binding package's Activity implements it.
type Checkpointer interface {
	Checkpoint(ctx context.Context, executionID, kind string, data map[string]any)
}

// Options configure a Service.
type Options struct {
	// Processes runs the commands. Nil means no command can run (the CLI
	// acting on the state directory): CanRun is false, and closing an
	// execution kills nothing.
	Processes *process.Manager
	// Outputs keeps finished commands' output; nil keeps it in memory
	// until its execution closes.
	Outputs *OutputRecords
	// Undo holds the executions' undo snapshots, deleted when they close;
	// nil means there are none.
	Undo *undo.Store
	// Locks, Operations, Cursors and Checkpoints are required when
	// Processes is set.
	Locks       *rootlock.Locks
	Operations  *idempotency.Service
	Cursors     *cursor.Codec
	Checkpoints Checkpointer
	// Disk refuses a new command while the disk it would write is low
	// (diskguard.ErrDiskLow); nil checks nothing.
	Disk interface {
		CheckCommand(ctx context.Context, root string, writesRoot bool) error
	}
	// HostEnv is the server's environment; commands get an allowlist of it.
	HostEnv []string
	Logger  *slog.Logger // nil discards
}

// Service owns the commands the server started. It is safe for
// concurrent use.
type Service struct {
	opts      Options
	log       *slog.Logger
	table     table
	recording sync.WaitGroup // afterExit goroutines
	baseEnv   []string
}

// New builds a Service.
func New(opts Options) *Service {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{opts: opts, log: log.With("component", "commands"), baseEnv: process.BaseEnv(opts.HostEnv)}
}

// CanRun reports whether the service has a process manager to run
// commands with.
func (s *Service) CanRun() bool { return s.opts.Processes != nil }

// Sandbox is how commands are confined (the process manager's state).
// Call it only when CanRun.
func (s *Service) Sandbox() process.SandboxState { return s.opts.Processes.Sandbox() }

// Interrupt sends an interrupt to the commands of an execution whose tree
// is alive (also when the main process already exited but descendants
// live on) and returns how many it reached. What SIGINT leaves alive is
// killed shortly after (process.Process.Interrupt). It never fails; the
// error is for executions.Resources.
func (s *Service) Interrupt(_ context.Context, executionID string) (int, error) {
	n := 0
	for _, e := range s.table.ofExec(executionID) {
		if e.p != nil && e.p.State().TreeAlive {
			if err := e.p.Interrupt(); err == nil {
				n++
			}
		}
	}
	return n, nil
}

// Running counts an execution's commands whose tree is alive.
func (s *Service) Running(executionID string) int {
	n := 0
	for _, e := range s.table.ofExec(executionID) {
		if e.p.State().TreeAlive {
			n++
		}
	}
	return n
}

// SlotsGrantMax is the most command slots one grant's live commands hold
// (its share is MaxPerGrant in all, MaxPerGrantPerProject on a Project).
func (s *Service) SlotsGrantMax() int { return s.table.grantMax() }

// CloseExecutions releases what closed executions (Thread close, grant
// revocation, Project removal) own outside the store: it deletes their
// undo snapshots, kills their commands' whole trees with reason, and
// removes their output, retained or in memory. Failures are logged: the
// executions are closed already.
func (s *Service) CloseExecutions(ctx context.Context, executionIDs []string, reason string) {
	for _, id := range executionIDs {
		if s.opts.Undo != nil {
			if err := s.opts.Undo.DropExecution(id); err != nil {
				s.log.ErrorContext(ctx, "delete undo snapshots of a closed execution", "err", err)
			}
		}
		if s.opts.Processes != nil {
			s.opts.Processes.KillGroup(id, reason)
		}
		for _, e := range s.table.dropExec(id) {
			_ = e.p.Remove()
		}
	}
	if s.opts.Outputs != nil {
		if err := s.opts.Outputs.RetireExecutions(ctx, executionIDs); err != nil {
			s.log.ErrorContext(ctx, "retire output of closed executions", "err", err)
		}
	}
}

// WaitRecorded waits until every ended command's final state is recorded
// (after the process manager's Shutdown), or ctx is done.
func (s *Service) WaitRecorded(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		s.recording.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
