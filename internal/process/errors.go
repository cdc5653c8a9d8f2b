package process

import (
	"errors"

	"github.com/devspace-dev/devspace/internal/fault"
)

// Sentinel errors. The process package detects these conditions and owns
// them, each with the code of the tool error it is (ErrInvalidSpec and
// ErrKillTimeout are bugs or internal: none); callers compare with
// errors.Is, and the edge looks the code up.
var (
	// ErrInvalidSpec means the Spec is malformed (both or neither mode, a
	// relative working directory, a negative or too long timeout…). Nothing
	// was started.
	ErrInvalidSpec = errors.New("invalid process spec")

	// ErrSpawn means the command could not be started (program not found,
	// not executable, working directory missing, supervisor failure).
	// Nothing ran: the phase is not_started.
	ErrSpawn = fault.New("command_spawn_failed", "command spawn failed")

	// ErrTooMany means the group's live-process limit
	// (Options.MaxPerGroup) is reached. Nothing was started.
	ErrTooMany = fault.New("process_limit", "too many live processes")
	// ErrAllBusy means the Manager runs Options.MaxLive trees already,
	// the commands of every caller together: a later try may start.
	ErrAllBusy = fault.New("process_slots_busy", "every command slot is in use")

	// ErrSandboxUnavailable means commands must be confined
	// (SandboxOptions.Off is false) but the kernel offers no Landlock.
	// Nothing was started.
	ErrSandboxUnavailable = fault.New("sandbox_unavailable", "command sandbox is unavailable")

	// ErrClosed means the Manager was shut down.
	ErrClosed = fault.New("server_shutting_down", "process manager is shut down")

	// ErrRevisionConflict means the caller's expected revision is not the
	// process's current one; nothing was written.
	ErrRevisionConflict = fault.New("process_revision_conflict", "process revision conflict")

	// ErrStdinClosed means the command's stdin is closed (at start, by
	// CloseStdin, or because the command closed its end).
	ErrStdinClosed = fault.New("process_not_running", "stdin is closed")

	// ErrStdinFull means too much input is queued because the command does
	// not read its stdin.
	ErrStdinFull = fault.New("stdin_busy", "stdin buffer is full")

	// ErrNotRunning means the command's main process has already exited.
	ErrNotRunning = fault.New("process_not_running", "process is not running")

	// ErrKillTimeout means the tree was still not gone when Kill stopped
	// waiting; the supervisor keeps killing it.
	ErrKillTimeout = errors.New("process tree still alive after kill bound")
)
