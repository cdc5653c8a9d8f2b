package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/devspace-dev/devspace/internal/commands"
	"github.com/devspace-dev/devspace/internal/oauth"
)

// The process tools: decode and check the input, resolve the caller's
// execution, call the commands service once, render its result.

// ---- exec_command ----

type execIn struct {
	OperationID      string            `json:"operationId" jsonschema:"caller-chosen idempotency key (1-128 bytes); a retry with the same value never runs the command twice"`
	Program          string            `json:"program,omitempty" jsonschema:"direct mode: the program to run (looked up in PATH)"`
	Args             []string          `json:"args,omitempty" jsonschema:"direct mode: its arguments, passed as is (no shell)"`
	Shell            bool              `json:"shell,omitempty" jsonschema:"shell mode: run command with bash -c"`
	Command          string            `json:"command,omitempty" jsonschema:"shell mode: the shell command line"`
	WorkingDirectory string            `json:"workingDirectory,omitempty" jsonschema:"Project-relative directory to run in (default the Project root)"`
	Environment      map[string]string `json:"environment,omitempty" jsonschema:"extra environment variables (names [A-Za-z_][A-Za-z0-9_]*)"`
	TimeoutMs        int64             `json:"timeoutMs,omitempty" jsonschema:"kill the command after this many milliseconds (default 10 minutes, max 6 hours)"`
	TTY              bool              `json:"tty,omitempty" jsonschema:"run under a pseudo-terminal (for interactive programs)"`
	Stdin            string            `json:"stdin,omitempty" jsonschema:"text written to the command's input at start (at most 1 MiB)"`
	CloseStdin       bool              `json:"closeStdin,omitempty" jsonschema:"close the input after stdin (end of file)"`
	Sandbox          string            `json:"sandbox,omitempty" jsonschema:"readOnly: the command may read the Project but not change it; workspaceWrite: it may also write the Project (needs project:write; the default when granted). Either way it sees only the system, this Project and a private scratch directory (HOME, TMPDIR)"`
}

func (execIn) schema(s *jsonschema.Schema) {
	s.Properties["environment"].AdditionalProperties = &jsonschema.Schema{Type: "string"}
	s.Properties["sandbox"].Enum = []any{commands.SandboxReadOnly, commands.SandboxWorkspaceWrite}
	s.Properties["timeoutMs"].Minimum = jsonschema.Ptr(0.0)
	s.Properties["timeoutMs"].Maximum = jsonschema.Ptr(float64(commands.MaxTimeout / time.Millisecond))
}

// sandboxFor returns the effective sandbox of a command: the one asked
// for, or workspaceWrite when the grant may write and readOnly otherwise.
// workspaceWrite without project:write is insufficient_scope. (Whether
// the kernel can confine commands at all is the process manager's to say:
// the commands service's error.)
func (s *Server) sandboxFor(c *call, asked string) (string, error) {
	canWrite := c.principal.HasScope(oauth.ScopeWrite)
	sandbox := asked
	switch {
	case asked == "" && canWrite:
		sandbox = commands.SandboxWorkspaceWrite
	case asked == "":
		sandbox = commands.SandboxReadOnly
	case asked == commands.SandboxWorkspaceWrite && !canWrite:
		te := toolErr("insufficient_scope", "sandbox workspaceWrite needs project:write, which this connection was not granted; run the command with sandbox readOnly.",
			"exec_command with sandbox: readOnly", "reconnect the app to grant project:write")
		te.wwwAuth = s.opts.OAuth.Challenge("insufficient_scope", "workspaceWrite needs project:write", []string{oauth.ScopeRead, oauth.ScopeWrite, oauth.ScopeExecute})
		return "", te
	}
	return sandbox, nil
}

// processOut is the state of a command as the model sees it.
type processOut struct {
	ProcessRef   string `json:"processRef"`
	OutputRef    string `json:"outputRef"`
	Status       string `json:"status"` // running, exited, killed, timed_out
	ExitCode     *int   `json:"exitCode,omitempty"`
	Signal       string `json:"signal,omitempty"`
	Revision     int64  `json:"revision"`
	Output       string `json:"output"`
	Truncated    bool   `json:"truncated,omitempty"`
	OmittedBytes int64  `json:"omittedBytes,omitempty"`
	OutputBytes  int64  `json:"outputBytes"`
	WallTimeMs   int64  `json:"wallTimeMs"`
	Replayed     bool   `json:"replayed,omitempty"`
	NextCursor   string `json:"nextCursor,omitempty"`
	// Sandbox is the command's sandbox (readOnly, workspaceWrite, or off
	// when the owner disabled confinement); set by exec_command.
	Sandbox string `json:"sandbox,omitempty" jsonschema:"how the command is confined: readOnly, workspaceWrite, or off when the owner disabled the sandbox"`
	// TreeAlive: descendants of the command still run (the Project stays
	// busy until they are gone).
	TreeAlive bool `json:"treeAlive,omitempty" jsonschema:"processes the command started are still running (the Project stays busy until they end)"`
	// KillReason says why the tree was killed: interrupt (SIGINT left
	// processes running, so they were killed), timeout, close, revoke,
	// out_of_memory and pids_limit (past the command's limits,
	// the whole command)…
	KillReason string `json:"killReason,omitempty" jsonschema:"why the command's processes were killed: interrupt (Ctrl-C left some running), timeout, out_of_memory (it used more memory than a command may), pids_limit (it had more processes and threads than a command may), disk_low (a filesystem it wrote to ran low and it wrote the most there), scratch_quota (its execution's scratch directory passed its quota and was emptied), tools_quota (it made its Project's tool home grow past its quota; the files stay), tools_cleared (the Owner cleared its Project's tool home), close, revoke, shutdown…"`
	// InterruptKilled counts processes an interrupt had to kill because
	// SIGINT left them running.
	InterruptKilled int `json:"interruptKilled,omitempty" jsonschema:"processes an interrupt had to kill because Ctrl-C left them running"`
}

func (o processOut) summary() string {
	switch o.Status {
	case "running":
		return "The command is still running; poll it with read_process_output (processRef)."
	case "exited":
		if o.ExitCode != nil {
			return fmt.Sprintf("The command exited with code %d.", *o.ExitCode)
		}
		return "The command exited (" + o.Signal + ")."
	case "timed_out":
		return "The command hit its timeout and was stopped."
	}
	switch o.KillReason {
	case commands.ReasonOutOfMemory:
		return "The command used more memory than a command may and was stopped, all of its processes."
	case commands.ReasonPidsLimit:
		return "The command started more processes and threads than a command may and was stopped, all of its processes."
	}
	return "The command was stopped (" + o.Status + ")."
}

// render is a command's state as the model sees it.
func render(v commands.View) processOut {
	return processOut{ProcessRef: v.ProcessRef, OutputRef: v.OutputRef, Status: v.Status, ExitCode: v.ExitCode, Signal: v.Signal,
		Revision: v.Revision, Output: v.Output, Truncated: v.Truncated, OmittedBytes: v.OmittedBytes, OutputBytes: v.OutputBytes,
		WallTimeMs: v.WallTime.Milliseconds(), Replayed: v.Replayed, Sandbox: v.Sandbox, TreeAlive: v.TreeAlive,
		KillReason: v.KillReason, InterruptKilled: v.InterruptKilled}
}

func registerProcessTools(s *Server) {
	addTool(s, spec{
		name:  "exec_command",
		title: "Run a command",
		description: "Use when you need to build, test or run something in the Project: direct mode (program + args) or shell mode (shell: true + command), in a Project directory. " +
			"The command runs confined: it sees the system, this Project (read-only with sandbox readOnly) and a private scratch directory, nothing else. " +
			"Avoid long-running servers unless asked, and never put secrets in the command. " +
			"Returns within about 2 seconds: the exit status and output (head and tail when long), or status running with a processRef to poll with read_process_output.",
		scopes: []string{oauth.ScopeRead, oauth.ScopeExecute},
		hints:  hints{destructive: true, openWorld: true},
	}, s.execCommand)
	addTool(s, spec{
		name:  "write_stdin",
		title: "Write to a running command",
		description: "Use when a running command waits for input: send chars, close its input, or interrupt it (Ctrl-C). " +
			"Avoid sending a literal Ctrl-C character; use interrupt. " +
			"Returns the command's new state and recent output.",
		scopes: []string{oauth.ScopeRead, oauth.ScopeExecute},
		hints:  hints{destructive: true, openWorld: true},
	}, s.writeStdin)
	addTool(s, spec{
		name:  "read_process_output",
		title: "Read command output",
		description: "Use when a command is still running (live poll with processRef; waits up to 10 s for new output) or to page through, tail or search a finished command's retained output (outputRef). " +
			"Avoid polling in a tight loop; follow nextCursor. " +
			"Returns output text with the command's state, and a cursor to continue.",
		scopes: []string{oauth.ScopeRead, oauth.ScopeExecute},
		hints:  hints{readOnly: true, idempotent: true},
	}, s.readProcessOutput)
}

func (s *Server) execCommand(ctx context.Context, c *call, in *execIn) (processOut, error) {
	fail := func(err error) (processOut, error) { return processOut{}, operationError(in.OperationID, err) }
	sandbox, err := s.sandboxFor(c, in.Sandbox)
	if err != nil {
		return fail(err)
	}
	x, err := s.execution(ctx, c)
	if err != nil {
		return fail(err)
	}
	defer x.Release()
	v, err := s.opts.Commands.Start(ctx, x, commands.StartRequest{Command: commands.Command(*in), Sandbox: sandbox})
	if err != nil {
		return fail(err)
	}
	return render(v), nil
}

// ---- write_stdin ----

type writeStdinIn struct {
	OperationID      string `json:"operationId" jsonschema:"caller-chosen idempotency key (1-128 bytes)"`
	ProcessRef       string `json:"processRef" jsonschema:"the running command"`
	Chars            string `json:"chars,omitempty" jsonschema:"text to type (at most 1 MiB; include \\n to press Enter)"`
	CloseStdin       bool   `json:"closeStdin,omitempty" jsonschema:"close the command's input (end of file)"`
	Interrupt        bool   `json:"interrupt,omitempty" jsonschema:"send an interrupt (Ctrl-C) to the command and its children"`
	ExpectedRevision *int64 `json:"expectedRevision,omitempty" jsonschema:"only act if the command's revision is still this"`
}

func (in *writeStdinIn) validate() error {
	n := 0
	for _, b := range []bool{in.Chars != "", in.CloseStdin, in.Interrupt} {
		if b {
			n++
		}
	}
	if n != 1 {
		return invalidInput("send exactly one of chars, closeStdin or interrupt")
	}
	if !utf8.ValidString(in.Chars) {
		return invalidInput("chars must be valid UTF-8")
	}
	return nil
}

func (s *Server) writeStdin(ctx context.Context, c *call, in *writeStdinIn) (processOut, error) {
	x, err := s.execution(ctx, c)
	if err != nil {
		return processOut{}, err
	}
	defer x.Release()
	v, err := s.opts.Commands.WriteStdin(ctx, x, commands.Input(*in))
	if errors.Is(err, commands.ErrNotFound) {
		return processOut{}, err
	}
	if err != nil {
		return processOut{}, operationError(in.OperationID, err)
	}
	return render(v), nil
}

// ---- read_process_output ----

type readOutputIn struct {
	ProcessRef string `json:"processRef,omitempty" jsonschema:"live poll of a running command (new output since the cursor)"`
	OutputRef  string `json:"outputRef,omitempty" jsonschema:"retained output of a command, running or finished"`
	Mode       string `json:"mode,omitempty" jsonschema:"live (default with processRef), page (default with outputRef), tail or search"`
	Query      string `json:"query,omitempty" jsonschema:"search: literal text to find"`
	Cursor     string `json:"cursor,omitempty" jsonschema:"nextCursor of the previous call"`
	Limit      int    `json:"limit,omitempty" jsonschema:"bytes per page (default 40000, max 256000)"`
	WaitMs     int    `json:"waitMs,omitempty" jsonschema:"live: wait up to this long for new output (default and max 10000)"`
}

func (readOutputIn) schema(s *jsonschema.Schema) {
	s.Properties["mode"].Enum = []any{commands.ModeLive, commands.ModePage, commands.ModeTail, commands.ModeSearch}
	s.Properties["limit"].Minimum = jsonschema.Ptr(0.0)
	s.Properties["limit"].Maximum = jsonschema.Ptr(float64(commands.OutputPageMax))
	s.Properties["waitMs"].Minimum = jsonschema.Ptr(0.0)
	s.Properties["waitMs"].Maximum = jsonschema.Ptr(float64(commands.LiveWaitMax / time.Millisecond))
}

func (in *readOutputIn) validate() error {
	if (in.ProcessRef == "") == (in.OutputRef == "") {
		return invalidInput("pass exactly one of processRef (live) or outputRef (retained output)")
	}
	if in.Mode == commands.ModeSearch && (in.Query == "" || len(in.Query) > 1024) {
		return invalidInput("search needs a query of 1-1024 bytes")
	}
	return nil
}

type searchHit struct {
	Offset int64  `json:"offset"`
	Text   string `json:"text"`
}

type readOutputOut struct {
	processOut
	Offset int64       `json:"offset"`
	Hits   []searchHit `json:"hits,omitempty"`
}

func (s *Server) readProcessOutput(ctx context.Context, c *call, in *readOutputIn) (readOutputOut, error) {
	x, err := s.execution(ctx, c)
	if err != nil {
		return readOutputOut{}, err
	}
	defer x.Release()
	req := commands.ReadRequest{Ref: in.ProcessRef, Mode: in.Mode, Query: in.Query, Cursor: in.Cursor, Limit: in.Limit,
		Wait: time.Duration(in.WaitMs) * time.Millisecond}
	if in.OutputRef != "" {
		req.Ref, req.ByOutput = in.OutputRef, true
	}
	o, err := s.opts.Commands.Read(ctx, x, req)
	if err != nil {
		return readOutputOut{}, err
	}
	out := readOutputOut{processOut: render(o.View), Offset: o.Offset}
	out.NextCursor = o.NextCursor
	for _, h := range o.Hits {
		out.Hits = append(out.Hits, searchHit{Offset: h.Offset, Text: h.Text})
	}
	return out, nil
}
