package process

import "errors"

// Sentinel errors. The process package detects these conditions and owns
// them; callers compare with errors.Is and map them to tool errors once, at
// the edge.
var (
	// ErrInvalidSpec means the Spec is malformed (both or neither mode, a
	// relative working directory, a negative or too long timeout…). Nothing
	// was started.
	ErrInvalidSpec = errors.New("invalid process spec")

	// ErrSpawn means the command could not be started (program not found,
	// not executable, working directory missing, supervisor failure).
	// Nothing ran: the phase is not_started.
	ErrSpawn = errors.New("command spawn failed")

	// ErrTooMany means the group's live-process limit
	// (Options.MaxPerGroup) is reached. Nothing was started.
	ErrTooMany = errors.New("too many live processes")
	// ErrAllBusy means the Manager runs Options.MaxLive trees already,
	// the commands of every caller together: a later try may start.
	ErrAllBusy = errors.New("every command slot is in use")

	// ErrSandboxUnavailable means commands must be confined
	// (SandboxOptions.Off is false) but the kernel offers no Landlock.
	// Nothing was started.
	ErrSandboxUnavailable = errors.New("command sandbox is unavailable")

	// ErrClosed means the Manager was shut down.
	ErrClosed = errors.New("process manager is shut down")

	// ErrRevisionConflict means the caller's expected revision is not the
	// process's current one; nothing was written.
	ErrRevisionConflict = errors.New("process revision conflict")

	// ErrStdinClosed means the command's stdin is closed (at start, by
	// CloseStdin, or because the command closed its end).
	ErrStdinClosed = errors.New("stdin is closed")

	// ErrStdinFull means too much input is queued because the command does
	// not read its stdin.
	ErrStdinFull = errors.New("stdin buffer is full")

	// ErrNotRunning means the command's main process has already exited.
	ErrNotRunning = errors.New("process is not running")

	// ErrKillTimeout means the tree was still not gone when Kill stopped
	// waiting; the supervisor keeps killing it.
	ErrKillTimeout = errors.New("process tree still alive after kill bound")
)
