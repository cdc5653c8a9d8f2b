package process

import (
	"bufio"
	"errors"
	"io"

	"github.com/devspace-dev/devspace/internal/sandbox"
)

// The server and a supervisor talk over a Unix stream socketpair that the
// supervisor inherits as fd 3. A supervisor may be started ahead of need
// (the Manager keeps a few idle ones, because starting a large Go binary
// costs milliseconds); it then blocks until it is assigned a command:
//
//  1. server → supervisor: one byte carrying, as SCM_RIGHTS, the command's
//     stdin (a pipe read end, /dev/null or the pty slave) and its stdout and
//     stderr (a pipe write end or the pty slave);
//  2. server → supervisor: supervisorSpec as one JSON line, then requests,
//     one JSON object per line;
//  3. supervisor → server: events, one JSON object per line (started or
//     spawn_error, exit, done).
//
// The supervisor hands the two descriptors to the command and closes its
// copies, so the output pipe reaches EOF exactly when the last process of
// the tree holding it is gone. EOF on the socket while idle makes the
// supervisor exit; EOF during a command means the server died, and the
// supervisor kills the tree first.
//
// After done (or spawn_error) with reusable set, the supervisor is idle
// again and waits for step 1; the server sends nothing more for the old
// command, and stray bytes that raced with done are discarded.
const ctlFD = 3

// supervisorSpec is the first line the server writes: what to run.
type supervisorSpec struct {
	ID      string   `json:"id"`
	Path    string   `json:"path"` // absolute, resolved by the server
	Argv    []string `json:"argv"`
	Dir     string   `json:"dir"`
	Env     []string `json:"env"`
	TTY     bool     `json:"tty,omitempty"`
	GraceMS int64    `json:"grace_ms"`
	// Cgroup, when set, is the command's cgroup v2 directory. The
	// supervisor's warm launcher was started in it (the previous
	// command's NextCgroup, or supervisorCgroupEnv for a supervisor's
	// first command); otherwise the supervisor starts a launcher for it.
	// The supervisor falls back to signals alone when it cannot create it.
	Cgroup string `json:"cgroup,omitempty"`
	// NextCgroup, when set, is the cgroup v2 directory of the
	// supervisor's next command: once this command's tree is gone, the
	// next warm launcher is started in it (clone3 with CLONE_INTO_CGROUP),
	// so that no command waits for a move into its cgroup. Moving a
	// process (writing cgroup.procs) waits for an RCU grace period, ~10 ms
	// on an otherwise idle machine.
	NextCgroup string `json:"next_cgroup,omitempty"`
	// Sandbox, when set, is the Landlock domain the launcher enters
	// before it execs the command.
	Sandbox *sandbox.Policy `json:"sandbox,omitempty"`
}

// request operations.
const (
	opSignal = "signal" // deliver Signal to the whole tree
	opKill   = "kill"   // SIGTERM, GraceMS, then SIGKILL until the tree is gone
	// opInterrupt sends SIGINT to the tree; whatever is still alive after
	// InterruptMS is killed like opKill (GraceMS), setsid children included.
	opInterrupt = "interrupt"
)

type request struct {
	Op      string `json:"op"`
	Signal  int    `json:"signal,omitempty"`
	GraceMS int64  `json:"grace_ms,omitempty"`
	// InterruptMS is how long opInterrupt waits before it escalates.
	InterruptMS int64 `json:"interrupt_ms,omitempty"`
}

// event kinds.
const (
	evStarted    = "started"
	evSpawnError = "spawn_error"
	evExit       = "exit" // the command's main process ended
	evDone       = "done" // no process of the tree remains; the supervisor exits
	// evEscalated: an interrupt left processes alive; Killed of them are
	// being killed.
	evEscalated = "escalated"
	// evLimit: the tree exceeded a limit (Reason: ReasonPidsLimit,
	// ReasonOutOfMemory) and is being killed, or the kernel killed it
	// for want of memory; sent before the exit it causes.
	evLimit = "limit"
	// evUsage: what the tree uses now (Tasks, Memory), from a supervisor
	// that bounds it (commandLimits.Poll), when it changed.
	evUsage = "usage"
)

type event struct {
	Event  string `json:"event"`
	PID    int    `json:"pid,omitempty"`
	Cgroup bool   `json:"cgroup,omitempty"`
	// Sandbox on started lists the Landlock rules enforced ("" when the
	// command is not confined).
	Sandbox string `json:"sandbox,omitempty"`
	Error   string `json:"error,omitempty"`
	Code    *int   `json:"code,omitempty"`
	Signal  int    `json:"signal,omitempty"`
	// Done on an exit event means the tree was already empty.
	Done bool `json:"done,omitempty"`
	// Orphans counts re-parented descendants the supervisor had to kill.
	Orphans int `json:"orphans,omitempty"`
	// Killed on escalated counts the processes still alive after the
	// interrupt's grace.
	Killed int `json:"killed,omitempty"`
	// Reusable on done or spawn_error: the supervisor waits for another
	// command instead of exiting.
	Reusable bool `json:"reusable,omitempty"`
	// Retry on spawn_error: nothing ran and the supervisor is exiting (a
	// signal ended it as the command arrived); another may be tried.
	Retry bool `json:"retry,omitempty"`
	// Reason on limit: which limit.
	Reason string `json:"reason,omitempty"`
	// Tasks and Memory on usage: the tree's tasks and memory in bytes
	// (treeUsage).
	Tasks  int   `json:"tasks,omitempty"`
	Memory int64 `json:"memory,omitempty"`
}

const maxSpecBytes = 8 << 20

// readLine reads one newline-terminated line of at most limit bytes.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > limit {
			return nil, errors.New("line too long")
		}
		if err == nil {
			return buf[:len(buf)-1], nil
		}
		if err != bufio.ErrBufferFull {
			if err == io.EOF && len(buf) > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}
