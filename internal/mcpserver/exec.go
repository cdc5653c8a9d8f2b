package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/devspace-dev/devspace/internal/cursor"
	"github.com/devspace-dev/devspace/internal/ids"
	"github.com/devspace-dev/devspace/internal/oauth"
	"github.com/devspace-dev/devspace/internal/operation"
	"github.com/devspace-dev/devspace/internal/process"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/retention"
	"github.com/devspace-dev/devspace/internal/rootlock"
	"github.com/devspace-dev/devspace/internal/store"
)

// Limits of the process tools (docs/design.md §9).
const (
	execInlineBytes   = 40000
	execWait          = 2 * time.Second
	liveWaitMax       = 10 * time.Second
	outputPageDefault = 40000
	outputPageMax     = 256000
	stdinMax          = 1 << 20
	envMaxEntries     = 128
)

// outputSource reads a command's retained output: the live Process, or
// the spool file of a finished one (process.Retained).
type outputSource interface {
	ReadAt(off int64, n int) ([]byte, error)
	Head(n int) []byte
	Tail(n int) []byte
}

// procEntry is a command the server started, with what binds it. While
// the command runs (and until its final state is recorded) p is its live
// Process; a finished command read back from its retention record has p
// nil, its final state in final and its output in out.
type procEntry struct {
	p          *process.Process
	out        outputSource
	final      process.State
	ref        string // processRef shown to the model
	outputRef  string // outputRef shown to the model
	grantID    string
	execID     string
	sessionRef string
	mode       string
	dir        string // Project-relative working directory
	projectRef string
}

func (e *procEntry) state() process.State {
	if e.p != nil {
		return e.p.State()
	}
	return e.final
}

// wait is Process.Wait; a retained command has ended already.
func (e *procEntry) wait(ctx context.Context, d time.Duration) (process.State, error) {
	if e.p != nil {
		return e.p.Wait(ctx, d)
	}
	return e.final, nil
}

// retainedEntry makes an entry of a retention record.
func (s *Server) retainedEntry(rec *retention.Record) *procEntry {
	return &procEntry{out: s.opts.Outputs.Output(rec), final: retention.State(rec), ref: rec.ProcessRef,
		outputRef: rec.OutputRef, grantID: rec.GrantID, execID: rec.ExecutionID, projectRef: rec.ProjectRef}
}

// maxPerProject bounds live commands per Project across executions and
// grants (docs/design.md §7); the manager bounds them per execution and in all.
const maxPerProject = 8

func (t *procTable) aliveInProject(ref string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, e := range t.byRef {
		if e.projectRef == ref && e.p.State().TreeAlive {
			n++
		}
	}
	return n
}

// procTable maps refs to the processes in memory: running ones, and
// finished ones until their final state is recorded with the retention
// (without a retention, until their execution is closed).
type procTable struct {
	mu     sync.Mutex
	byRef  map[string]*procEntry
	byOut  map[string]*procEntry
	byExec map[string][]*procEntry
}

func (t *procTable) add(e *procEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byRef == nil {
		t.byRef, t.byOut, t.byExec = map[string]*procEntry{}, map[string]*procEntry{}, map[string][]*procEntry{}
	}
	t.byRef[e.ref] = e
	t.byOut[e.outputRef] = e
	t.byExec[e.execID] = append(t.byExec[e.execID], e)
}

// lookup returns the entry for a ref only if it belongs to the caller's
// execution (and grant): another execution's, session's or grant's ref is
// indistinguishable from an unknown one.
func (t *procTable) lookup(ref string, byOutput bool, grantID, execID string) *procEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.byRef
	if byOutput {
		m = t.byOut
	}
	e := m[ref]
	if e == nil || e.grantID != grantID || e.execID != execID {
		return nil
	}
	return e
}

func (t *procTable) ofExec(execID string) []*procEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*procEntry(nil), t.byExec[execID]...)
}

// retire forgets a finished entry whose record now holds its output,
// unless dropExec got it first. It reports whether it did.
func (t *procTable) retire(e *procEntry) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byRef[e.ref] != e {
		return false
	}
	delete(t.byRef, e.ref)
	delete(t.byOut, e.outputRef)
	es := t.byExec[e.execID]
	for i, x := range es {
		if x == e {
			es = append(es[:i:i], es[i+1:]...)
			break
		}
	}
	if len(es) == 0 {
		delete(t.byExec, e.execID)
	} else {
		t.byExec[e.execID] = es
	}
	return true
}

// dropExec forgets an execution's processes and removes their output.
func (t *procTable) dropExec(execID string) []*procEntry {
	t.mu.Lock()
	es := t.byExec[execID]
	delete(t.byExec, execID)
	for _, e := range es {
		delete(t.byRef, e.ref)
		delete(t.byOut, e.outputRef)
	}
	t.mu.Unlock()
	return es
}

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

// Sandbox values of exec_command.
const (
	sandboxReadOnly       = "readOnly"
	sandboxWorkspaceWrite = "workspaceWrite"
)

func (in *execIn) validate() error {
	if err := operation.ValidateID(in.OperationID); err != nil {
		return invalidInput("operationId must be 1-128 bytes of UTF-8 without NUL")
	}
	direct, shell := in.Program != "", in.Shell || in.Command != ""
	if direct == shell || (shell && (!in.Shell || in.Command == "")) || (direct && in.Command != "") {
		return toolErr("command_mode_invalid", catInput,
			"Use exactly one mode: program (+ args) for direct mode, or shell: true with command for shell mode.")
	}
	if shell && len(in.Args) > 0 {
		return toolErr("command_mode_invalid", catInput, "args belong to direct mode; put them in command for shell mode.")
	}
	if in.TimeoutMs < 0 || time.Duration(in.TimeoutMs)*time.Millisecond > process.MaxTimeout {
		return invalidInput("timeoutMs must be between 0 and 21600000 (6 hours)")
	}
	if len(in.Stdin) > stdinMax {
		return toolErr("stdin_too_large", catLimit, "stdin is limited to 1 MiB; write more with write_stdin.")
	}
	if len(in.Environment) > envMaxEntries {
		return invalidInput("environment is limited to %d entries", envMaxEntries)
	}
	for _, s := range append([]string{in.Program, in.Command, in.WorkingDirectory}, in.Args...) {
		if strings.IndexByte(s, 0) >= 0 {
			return invalidInput("program, args, command and workingDirectory must not contain NUL")
		}
	}
	if err := process.ValidateEnv(in.Environment); err != nil {
		return invalidInput("%v", err)
	}
	return nil
}

// sandboxFor returns the effective sandbox of a command: the one asked
// for, or workspaceWrite when the grant may write and readOnly otherwise.
// workspaceWrite without project:write is insufficient_scope.
func (s *Server) sandboxFor(c *call, asked string) (string, error) {
	canWrite := c.principal.HasScope(oauth.ScopeWrite)
	switch {
	case asked == "" && canWrite:
		return sandboxWorkspaceWrite, nil
	case asked == "":
		return sandboxReadOnly, nil
	case asked == sandboxWorkspaceWrite && !canWrite:
		te := toolErr("insufficient_scope", catScope, "sandbox workspaceWrite needs project:write, which this connection was not granted; run the command with sandbox readOnly.",
			"exec_command with sandbox: readOnly", "reconnect the app to grant project:write")
		te.wwwAuth = s.opts.OAuth.Challenge("insufficient_scope", "workspaceWrite needs project:write", []string{oauth.ScopeRead, oauth.ScopeWrite, oauth.ScopeExecute})
		return "", te
	}
	return asked, nil
}

// secretIn returns the kind of a literal credential found in anything
// that would be stored (operation records, logs), or "".
func (in *execIn) secretIn() string {
	vals := append([]string{in.Program, in.Command, in.Stdin}, in.Args...)
	for k, v := range in.Environment {
		vals = append(vals, k+"="+v)
	}
	for _, v := range vals {
		if kind, found := process.DetectSecret(v); found {
			return kind
		}
	}
	return ""
}

func (execIn) schema(s *jsonschema.Schema) {
	s.Properties["environment"].AdditionalProperties = &jsonschema.Schema{Type: "string"}
	s.Properties["sandbox"].Enum = []any{sandboxReadOnly, sandboxWorkspaceWrite}
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
	// processes running, so they were killed), timeout, close, revoke…
	KillReason string `json:"killReason,omitempty" jsonschema:"why the command's processes were killed: interrupt (Ctrl-C left some running), timeout, close, revoke, shutdown…"`
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
	return "The command was stopped (" + o.Status + ")."
}

// inline renders head+tail of a process's output within execInlineBytes.
func inline(p outputSource, st process.State) (string, bool, int64) {
	size := st.RetainedBytes
	omitted := st.OutputBytes - st.RetainedBytes
	if size <= execInlineBytes {
		b, _ := p.ReadAt(0, int(size))
		return strings.ToValidUTF8(string(b), "\uFFFD"), omitted > 0, omitted
	}
	half := execInlineBytes / 2
	head := p.Head(half)
	tail := p.Tail(half)
	omitted += size - int64(len(head)) - int64(len(tail))
	text := strings.ToValidUTF8(string(head), "\uFFFD") + fmt.Sprintf("\n[… %d bytes omitted …]\n", size-int64(len(head))-int64(len(tail))) +
		strings.ToValidUTF8(string(tail), "\uFFFD")
	return text, true, omitted
}

func render(e *procEntry, st process.State, withOutput bool) processOut {
	out := processOut{ProcessRef: e.ref, OutputRef: e.outputRef, Status: st.Status, ExitCode: st.ExitCode, Signal: st.Signal,
		Revision: st.Revision, OutputBytes: st.OutputBytes, TreeAlive: st.TreeAlive && st.Status != process.StatusRunning,
		InterruptKilled: st.InterruptKilled, KillReason: st.KillReason}
	end := st.EndedAt
	if end.IsZero() {
		end = time.Now()
	}
	out.WallTimeMs = end.Sub(st.StartedAt).Milliseconds()
	if withOutput {
		out.Output, out.Truncated, out.OmittedBytes = inline(e.out, st)
	} else if st.Truncated {
		// Output dropped past the spool cap: never silent.
		out.Truncated, out.OmittedBytes = true, st.OutputBytes-st.RetainedBytes
	}
	return out
}

type storedExec struct {
	ProcessRef string `json:"processRef"`
	OutputRef  string `json:"outputRef"`
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
	fail := func(err error) (processOut, error) {
		te := s.procError(err)
		te.OperationID = in.OperationID
		if te.Phase == "" {
			te.Phase = "not_started"
		}
		return processOut{}, te
	}
	if kind := in.secretIn(); kind != "" {
		return fail(toolErr("secret_persistence_blocked", catSafety,
			"The command contains something that looks like a credential ("+kind+"); pass secrets through files the command reads, not in its arguments."))
	}
	sandbox, err := s.sandboxFor(c, in.Sandbox)
	if err != nil {
		return fail(err)
	}
	if s.opts.Processes.Sandbox().Mode == process.SandboxUnavailable {
		return fail(process.ErrSandboxUnavailable)
	}
	if err := c.requireSession(); err != nil {
		return fail(err)
	}
	e, proj, err := s.opts.Bindings.Resolve(ctx, c.caller)
	if err != nil {
		return fail(err)
	}
	dir, err := s.workingDir(proj, in.WorkingDirectory)
	if err != nil {
		return fail(err)
	}
	hash, err := operation.HashRequest(in)
	if err != nil {
		return processOut{}, err
	}
	key := operation.Key{GrantID: c.caller.GrantID, ExecutionID: e.ID, Tool: "exec_command", OperationID: in.OperationID}
	raw, replayed, err := s.opts.Operations.Do(ctx, key, hash, func(ctx context.Context) ([]byte, error) {
		if s.procs.aliveInProject(proj.Ref) >= maxPerProject {
			return nil, fmt.Errorf("%w: %w", operation.ErrNotStarted, process.ErrTooMany)
		}
		lease, err := s.opts.Locks.Acquire(ctx, proj.Path, rootlock.Command, lockTimeout)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", operation.ErrNotStarted, err)
		}
		spec := process.Spec{Program: in.Program, Args: in.Args, Shell: in.Shell, Command: in.Command,
			Dir: filepath.Join(proj.Path, filepath.FromSlash(dir)), Root: proj.Path, ReadOnly: sandbox == sandboxReadOnly,
			Env: process.MergeEnv(s.baseEnv, in.Environment),
			TTY: in.TTY, Stdin: []byte(in.Stdin), CloseStdin: in.CloseStdin,
			Timeout: time.Duration(in.TimeoutMs) * time.Millisecond, MaxOutputBytes: process.DefaultMaxOutputBytes}
		if spec.Timeout == 0 {
			spec.Timeout = 10 * time.Minute
		}
		if proj.Source != "" {
			// A managed worktree's Git metadata lives in the source
			// repository: readable, so Git works (status, diff, log), never
			// writable (its hooks and config run on the owner's host).
			spec.ReadPaths = []string{filepath.Join(proj.Source, ".git")}
		}
		p, err := s.opts.Processes.Start(ctx, e.ID, spec)
		if err != nil {
			lease.Release()
			return nil, fmt.Errorf("%w: %w", operation.ErrNotStarted, err)
		}
		mode := "direct"
		if in.Shell {
			mode = "shell"
		}
		entry := &procEntry{p: p, out: p, ref: ids.New("prc_", 16), outputRef: ids.New("out_", 16), grantID: c.caller.GrantID, execID: e.ID,
			sessionRef: c.caller.SessionRef, mode: mode, dir: dir, projectRef: proj.Ref}
		// The record exists before the operation completes, so that after
		// a crash every ref the model was given reads back (as killed).
		recorded := false
		if s.opts.Outputs != nil {
			if err := s.opts.Outputs.Started(context.WithoutCancel(ctx), &retention.Record{OutputRef: entry.outputRef, ProcessRef: entry.ref,
				SpoolID: p.SpoolID(), GrantID: entry.grantID, ExecutionID: entry.execID, ProjectRef: entry.projectRef,
				StartedAt: p.State().StartedAt.UTC()}); err != nil {
				_ = p.Remove() // kills the tree
				<-p.Done()
				lease.Release()
				return nil, err // it ran for a moment: outcome unknown, not "not started"
			}
			recorded = true
		}
		s.procs.add(entry)
		s.recording.Add(1)
		go s.afterExit(entry, lease, recorded)
		return json.Marshal(storedExec{ProcessRef: entry.ref, OutputRef: entry.outputRef})
	})
	if err != nil {
		return fail(err)
	}
	var st storedExec
	if err := json.Unmarshal(raw, &st); err != nil {
		return processOut{}, err
	}
	entry, err := s.findProc(ctx, st.ProcessRef, false, c.caller.GrantID, e.ID)
	if err != nil {
		return processOut{}, err
	}
	if entry == nil {
		// Replayed after the command's output was retired.
		return processOut{ProcessRef: st.ProcessRef, OutputRef: st.OutputRef, Status: "gone", Replayed: true}, nil
	}
	state, err := entry.wait(ctx, execWait)
	if err != nil && !errors.Is(err, context.Canceled) {
		return processOut{}, err
	}
	out := render(entry, state, true)
	out.Replayed = replayed
	out.Sandbox = sandbox
	if s.opts.Processes.Sandbox().Mode == process.SandboxOff {
		out.Sandbox = process.SandboxOff
	}
	return out, nil
}

// workingDir checks a model-supplied working directory: contained, an
// existing directory inside the root (symlinks only while they stay in).
func (s *Server) workingDir(proj project.Root, rel string) (string, error) {
	clean, err := project.CleanRel(rel)
	if err != nil {
		return "", s.pathDenied(err)
	}
	r, err := openRoot(proj.Path)
	if err != nil {
		return "", err
	}
	defer r.Close()
	fi, err := r.Stat(clean)
	if err != nil {
		if errors.Is(project.Classify(err), project.ErrPathDenied) {
			return "", s.pathDenied(project.Classify(err))
		}
		return "", toolErr("working_directory_invalid", catInput, "workingDirectory does not exist in the Project.")
	}
	if !fi.IsDir() {
		return "", toolErr("working_directory_invalid", catInput, "workingDirectory is not a directory.")
	}
	return clean, nil
}

// afterExit releases the Command lease when the whole tree is gone,
// records a sanitized checkpoint on the execution's Thread, and (when the
// command was recorded) hands the finished output over to the retention:
// the entry leaves memory.
func (s *Server) afterExit(e *procEntry, lease *rootlock.Lease, recorded bool) {
	defer s.recording.Done()
	ctx := context.Background()
	<-e.p.Done()
	lease.Release()
	st := e.p.State()
	defer func() {
		if recorded {
			s.handOver(ctx, e, st)
		}
	}()
	data := map[string]any{"mode": e.mode, "workingDirectory": e.dir, "outcome": st.Status,
		"wallTimeMs": st.EndedAt.Sub(st.StartedAt).Milliseconds(), "outputRetained": st.RetainedBytes > 0,
		"outputPartlyLost": st.Truncated}
	if st.ExitCode != nil {
		data["exitCode"] = *st.ExitCode
	}
	if st.Signal != "" {
		data["signal"] = st.Signal
	}
	if st.KillReason != "" {
		data["killReason"] = st.KillReason
	}
	s.opts.Bindings.Checkpoint(ctx, e.execID, "command_finished", data)
}

// handOver records a finished command's final state; from then on its
// output is read from the retention and the entry leaves memory. If the
// execution was closed meanwhile the record (and file) are gone already.
func (s *Server) handOver(ctx context.Context, e *procEntry, st process.State) {
	err := s.opts.Outputs.Finished(ctx, e.outputRef, e.p.SpoolID(), st, e.p.TruncatedTail())
	switch {
	case errors.Is(err, retention.ErrNotFound):
		if s.procs.retire(e) {
			_ = e.p.Remove()
		}
	case err != nil:
		s.log.Error("record finished command; its output stays in memory until the execution closes", "err", err)
	default:
		s.procs.retire(e)
	}
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
	if err := operation.ValidateID(in.OperationID); err != nil {
		return invalidInput("operationId must be 1-128 bytes of UTF-8 without NUL")
	}
	n := 0
	for _, b := range []bool{in.Chars != "", in.CloseStdin, in.Interrupt} {
		if b {
			n++
		}
	}
	if n != 1 {
		return invalidInput("send exactly one of chars, closeStdin or interrupt")
	}
	if len(in.Chars) > stdinMax {
		return toolErr("stdin_too_large", catLimit, "chars is limited to 1 MiB per call.")
	}
	if strings.ContainsRune(in.Chars, '\x03') {
		return invalidInput("chars must not contain a literal Ctrl-C (\\u0003); use interrupt")
	}
	if !utf8.ValidString(in.Chars) {
		return invalidInput("chars must be valid UTF-8")
	}
	return nil
}

func (s *Server) writeStdin(ctx context.Context, c *call, in *writeStdinIn) (processOut, error) {
	entry, _, err := s.procFor(ctx, c, in.ProcessRef, false)
	if err != nil {
		return processOut{}, err
	}
	if entry.p == nil {
		te := s.procError(process.ErrNotRunning)
		te.OperationID = in.OperationID
		return processOut{}, te
	}
	hash, err := operation.HashRequest(in)
	if err != nil {
		return processOut{}, err
	}
	key := operation.Key{GrantID: c.caller.GrantID, ExecutionID: entry.execID, Tool: "write_stdin", OperationID: in.OperationID}
	before := entry.p.State().Revision
	_, replayed, err := s.opts.Operations.Do(ctx, key, hash, func(ctx context.Context) ([]byte, error) {
		var err error
		switch {
		case in.Interrupt:
			if in.ExpectedRevision != nil && *in.ExpectedRevision != entry.p.State().Revision {
				err = process.ErrRevisionConflict
			} else {
				err = entry.p.Interrupt()
			}
		case in.CloseStdin:
			if in.ExpectedRevision != nil && *in.ExpectedRevision != entry.p.State().Revision {
				err = process.ErrRevisionConflict
			} else {
				entry.p.CloseStdin()
			}
		default:
			err = entry.p.WriteStdin([]byte(in.Chars), in.ExpectedRevision)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", operation.ErrNotStarted, err)
		}
		return []byte("{}"), nil
	})
	if err != nil {
		te := s.procError(err)
		te.OperationID = in.OperationID
		return processOut{}, te
	}
	// Give the program a moment to react, then report.
	st, _ := entry.p.WaitChange(ctx, before, 500*time.Millisecond)
	if st.Status == "running" {
		st, _ = entry.p.Wait(ctx, 300*time.Millisecond)
	}
	out := render(entry, st, false)
	tail := entry.p.Tail(4000)
	out.Output = strings.ToValidUTF8(string(tail), "\uFFFD")
	out.Replayed = replayed
	return out, nil
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
	s.Properties["mode"].Enum = []any{"live", "page", "tail", "search"}
}

func (in *readOutputIn) validate() error {
	if (in.ProcessRef == "") == (in.OutputRef == "") {
		return invalidInput("pass exactly one of processRef (live) or outputRef (retained output)")
	}
	if in.Mode == "" {
		in.Mode = "page"
		if in.ProcessRef != "" {
			in.Mode = "live"
		}
	}
	switch in.Mode {
	case "live", "page", "tail":
	case "search":
		if in.Query == "" || len(in.Query) > 1024 {
			return invalidInput("search needs a query of 1-1024 bytes")
		}
	default:
		return invalidInput("mode must be live, page, tail or search")
	}
	if in.Limit < 0 || in.Limit > outputPageMax || in.WaitMs < 0 || in.WaitMs > int(liveWaitMax/time.Millisecond) {
		return invalidInput("limit must be 0-256000 and waitMs 0-10000")
	}
	if in.Limit == 0 {
		in.Limit = outputPageDefault
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
	ref, byOutput := in.ProcessRef, false
	if in.OutputRef != "" {
		ref, byOutput = in.OutputRef, true
	}
	entry, e, err := s.procFor(ctx, c, ref, byOutput)
	if err != nil {
		return readOutputOut{}, err
	}
	var off int64
	if in.Cursor != "" {
		claims, err := s.opts.Bindings.DecodeCursor(c.caller, e, in.Cursor, "output")
		if err != nil {
			return readOutputOut{}, err
		}
		if claims.Resource != entry.outputRef || claims.QueryHash != in.Mode+"\x00"+in.Query {
			return readOutputOut{}, toolErr("cursor_invalid", catInput, "That cursor belongs to another command or mode.")
		}
		off = claims.Offset
	}
	st := entry.state()
	if in.Mode == "live" && st.Status == "running" {
		wait := time.Duration(in.WaitMs) * time.Millisecond
		if in.WaitMs == 0 {
			wait = liveWaitMax
		}
		// Wait for output past the cursor, or exit.
		deadline := time.Now().Add(wait)
		for st.Status == "running" && st.RetainedBytes <= off && time.Now().Before(deadline) {
			st, _ = entry.p.WaitChange(ctx, st.Revision, time.Until(deadline))
			if ctx.Err() != nil {
				break
			}
		}
	}
	out := readOutputOut{processOut: render(entry, st, false), Offset: off}
	switch in.Mode {
	case "tail":
		tail := entry.out.Tail(in.Limit)
		if int64(len(tail)) < min(int64(in.Limit), st.RetainedBytes) {
			// Short: a retained output's file may have been retired
			// under the read (Tail does not say why it has no bytes).
			if _, err := entry.out.ReadAt(0, 0); err != nil && !errors.Is(err, io.EOF) {
				return out, outputReadError(err)
			}
		}
		out.Output = strings.ToValidUTF8(string(tail), "\uFFFD")
		out.Offset = max(st.RetainedBytes-int64(in.Limit), 0)
		return out, nil
	case "search":
		hits, next, err := searchOutput(entry.out, st.RetainedBytes, off, in.Query)
		if err != nil {
			return out, outputReadError(err)
		}
		out.Hits = hits
		if next < st.RetainedBytes && len(hits) > 0 {
			out.NextCursor, err = s.outputCursor(c, e, entry, in, next)
		}
		return out, err
	}
	// live and page: bytes from the cursor on.
	if off > st.RetainedBytes {
		off = st.RetainedBytes
	}
	n := min(int64(in.Limit), st.RetainedBytes-off)
	b, err := entry.out.ReadAt(off, int(n))
	if err != nil && !errors.Is(err, io.EOF) { // EOF: nothing past the cursor yet
		return out, outputReadError(err)
	}
	// Never split a UTF-8 sequence at the page end.
	for cut := len(b); cut > 0 && cut > len(b)-4; cut-- {
		if utf8.Valid(b[:cut]) {
			b = b[:cut]
			break
		}
	}
	out.Output = strings.ToValidUTF8(string(b), "\uFFFD")
	next := off + int64(len(b))
	if next < st.RetainedBytes || (in.Mode == "live" && st.Status == "running") {
		if out.NextCursor, err = s.outputCursor(c, e, entry, in, next); err != nil {
			return out, err
		}
	}
	return out, nil
}

// outputReadError maps a failed read of a command's output. The retention
// may retire retained output (expiry, its execution closed, the spool cap)
// between the lookup and the read of its file: a missing file is output
// that no longer exists, not a server fault.
func outputReadError(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return toolErr("process_not_found", catState, "That command's output is no longer retained (it expired or its conversation closed).")
	}
	return fmt.Errorf("read output: %w", err)
}

func (s *Server) outputCursor(c *call, e *store.Execution, entry *procEntry, in *readOutputIn, off int64) (string, error) {
	return s.opts.Bindings.EncodeCursor(c.caller, e, cursor.Claims{Kind: "output", Resource: entry.outputRef,
		QueryHash: in.Mode + "\x00" + in.Query, Offset: off})
}

// searchOutput scans retained output from off for a literal, in bounded
// chunks, returning at most 50 hits with their line text.
func searchOutput(p outputSource, size, off int64, q string) ([]searchHit, int64, error) {
	const chunk = 1 << 20
	var hits []searchHit
	for pos := off; pos < size && len(hits) < 50; {
		n := min(int64(chunk), size-pos)
		b, err := p.ReadAt(pos, int(n))
		if err != nil {
			return nil, 0, err
		}
		text := string(b)
		from := 0
		for len(hits) < 50 {
			i := strings.Index(text[from:], q)
			if i < 0 {
				break
			}
			at := from + i
			start := strings.LastIndexByte(text[:at], '\n') + 1
			end := strings.IndexByte(text[at:], '\n')
			if end < 0 {
				end = len(text)
			} else {
				end += at
			}
			line := text[start:end]
			if len(line) > 500 {
				line = line[:500]
			}
			hits = append(hits, searchHit{Offset: pos + int64(at), Text: strings.ToValidUTF8(line, "\uFFFD")})
			from = at + len(q)
		}
		if len(hits) >= 50 {
			return hits, hits[len(hits)-1].Offset + int64(len(q)), nil
		}
		if n < chunk {
			pos += n
			break
		}
		pos += n - int64(len(q)) + 1 // overlap so a match across chunks is found
	}
	return hits, size, nil
}

// procFor finds a process of the caller's current execution, which it
// returns too (resolved once, with the full re-check).
func (s *Server) procFor(ctx context.Context, c *call, ref string, byOutput bool) (*procEntry, *store.Execution, error) {
	if err := c.requireSession(); err != nil {
		return nil, nil, err
	}
	e, _, err := s.opts.Bindings.Resolve(ctx, c.caller)
	if err != nil {
		return nil, nil, err
	}
	entry, err := s.findProc(ctx, ref, byOutput, c.caller.GrantID, e.ID)
	if err != nil {
		return nil, nil, err
	}
	if entry == nil {
		return nil, nil, toolErr("process_not_found", catState, "No such command in this conversation's open Project.")
	}
	return entry, e, nil
}

// findProc looks a ref up among the commands in memory, then among the
// retained ones; nil when the caller's execution has no such command.
func (s *Server) findProc(ctx context.Context, ref string, byOutput bool, grantID, execID string) (*procEntry, error) {
	if e := s.procs.lookup(ref, byOutput, grantID, execID); e != nil {
		return e, nil
	}
	if s.opts.Outputs == nil {
		return nil, nil
	}
	rec, err := s.opts.Outputs.Lookup(ctx, ref, byOutput, grantID, execID)
	if errors.Is(err, retention.ErrNotFound) {
		// The command may have been handed over between the two lookups.
		if e := s.procs.lookup(ref, byOutput, grantID, execID); e != nil {
			return e, nil
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up retained output: %w", err)
	}
	if rec.Status == process.StatusRunning {
		// Recorded but not handed over: the entry is in memory again by
		// now unless the execution was closed.
		if e := s.procs.lookup(ref, byOutput, grantID, execID); e != nil {
			return e, nil
		}
		return nil, nil
	}
	return s.retainedEntry(rec), nil
}

// procError maps process errors (the rest go through mapError).
func (s *Server) procError(err error) *ToolError {
	var te *ToolError
	switch {
	case errors.As(err, &te):
		return te
	case errors.Is(err, process.ErrSpawn):
		e := toolErr("command_spawn_failed", catInput, "The command could not be started (is the program installed and executable?).")
		e.Phase = "not_started"
		return e
	case errors.Is(err, process.ErrSandboxUnavailable):
		e := toolErr("sandbox_unavailable", catSafety, "Commands are refused: this server's kernel offers no Landlock sandbox to confine them. The owner can enable Landlock (or, accepting the risk, set DEVSPACE_COMMAND_SANDBOX=off).")
		e.Phase = "not_started"
		return e
	case errors.Is(err, process.ErrTooMany):
		return toolErr("process_limit", catLimit, "Too many commands are running (32 in all, 8 per Project); wait for one to finish or interrupt it.", "project_control interrupt")
	case errors.Is(err, process.ErrRevisionConflict):
		return toolErr("process_revision_conflict", catConflict, "The command changed since expectedRevision; read its state and retry.", "read_process_output")
	case errors.Is(err, process.ErrStdinClosed), errors.Is(err, process.ErrNotRunning):
		return toolErr("process_not_running", catState, "The command is not accepting input (it ended or its input is closed).")
	case errors.Is(err, process.ErrStdinFull):
		e := toolErr("stdin_busy", catTransient, "The command is not reading its input fast enough; retry shortly.")
		e.Retryable = true
		return e
	case errors.Is(err, process.ErrClosed):
		e := toolErr("server_shutting_down", catTransient, "DevSpace is shutting down; retry after it restarts.")
		e.Retryable = true
		return e
	}
	return mapError(err)
}

// InterruptExecution sends an interrupt to the commands of an execution
// whose tree is alive (also when the main process already exited but
// descendants live on) and returns how many it reached. What SIGINT leaves
// alive is killed shortly after (process.Process.Interrupt).
func (s *Server) InterruptExecution(_ context.Context, execID string) (int, error) {
	n := 0
	for _, e := range s.procs.ofExec(execID) {
		if e.p != nil && e.p.State().TreeAlive {
			if err := e.p.Interrupt(); err == nil {
				n++
			}
		}
	}
	return n, nil
}

// CloseExecutions kills every command of the executions (close, revoke,
// Project removal) and discards their retained output.
func (s *Server) CloseExecutions(ctx context.Context, execIDs []string, reason string) {
	if s.opts.Processes == nil {
		return
	}
	for _, id := range execIDs {
		if s.opts.Undo != nil {
			_ = s.opts.Undo.DropExecution(id)
		}
		s.opts.Processes.KillGroup(id, reason)
		for _, e := range s.procs.dropExec(id) {
			_ = e.p.Remove()
		}
	}
	if s.opts.Outputs != nil {
		if err := s.opts.Outputs.RetireExecutions(ctx, execIDs); err != nil {
			s.log.ErrorContext(ctx, "retire output of closed executions", "err", err)
		}
	}
}

// WaitRecorded waits until every ended command's final state is recorded
// (after Processes.Shutdown), or ctx is done.
func (s *Server) WaitRecorded(ctx context.Context) {
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

// RunningProcesses counts an execution's commands whose tree is alive.
func (s *Server) RunningProcesses(execID string) int {
	n := 0
	for _, e := range s.procs.ofExec(execID) {
		if e.p.State().TreeAlive {
			n++
		}
	}
	return n
}
