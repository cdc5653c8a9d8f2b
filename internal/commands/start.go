package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/fault"
	"github.com/devspace-dev/devspace/internal/idempotency"
	"github.com/devspace-dev/devspace/internal/ids"
	"github.com/devspace-dev/devspace/internal/process"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/rootlock"
	"github.com/devspace-dev/devspace/internal/secret"
)

// ErrProjectUnavailable: the Project root cannot be opened right now
// (project_unavailable).
var ErrProjectUnavailable = fault.New("project_unavailable", "project unavailable")

// Sandbox values of a command: SandboxReadOnly may read the Project,
// SandboxWorkspaceWrite may also write it; View.Sandbox is
// process.SandboxOff when the owner disabled confinement.
const (
	SandboxReadOnly       = "readOnly"
	SandboxWorkspaceWrite = "workspaceWrite"
)

// DefaultTimeout is a command's timeout when Command.TimeoutMs is 0.
const DefaultTimeout = 10 * time.Minute

// owner is whose commands a call may see: the grant and the execution the
// edge resolved for the caller, and the caller's session.
type owner struct {
	GrantID     string
	ExecutionID string
	SessionRef  string
}

func ownerOf(h executions.Handle) owner {
	c := h.Caller()
	return owner{GrantID: c.GrantID, ExecutionID: h.ID(), SessionRef: c.SessionRef}
}

// Command is what exec_command asks to run, checked by the edge. Its
// JSON encoding (field names and order) is the request hash of its
// operation record, which must not change between releases: an identical
// retry after an upgrade replays.
type Command struct {
	OperationID      string            `json:"operationId"`
	Program          string            `json:"program,omitempty"`
	Args             []string          `json:"args,omitempty"`
	Shell            bool              `json:"shell,omitempty"`
	Command          string            `json:"command,omitempty"`
	WorkingDirectory string            `json:"workingDirectory,omitempty"` // Project-relative; "" is the root
	Environment      map[string]string `json:"environment,omitempty"`
	TimeoutMs        int64             `json:"timeoutMs,omitempty"` // 0 means DefaultTimeout
	TTY              bool              `json:"tty,omitempty"`
	Stdin            string            `json:"stdin,omitempty"`
	CloseStdin       bool              `json:"closeStdin,omitempty"`
	Sandbox          string            `json:"sandbox,omitempty"` // as asked; StartRequest.Sandbox is the effective one
}

// checkSecrets returns a *secret.Error naming the first field of c that
// holds a literal credential (environment variables in name order): a
// command takes its secrets from files it reads, not from its own text.
func (c Command) checkSecrets() error {
	for _, f := range []struct{ name, text string }{{"program", c.Program}, {"command", c.Command}, {"stdin", c.Stdin}} {
		if err := secret.Check(f.name, f.text); err != nil {
			return err
		}
	}
	for _, a := range c.Args {
		if err := secret.Check("args", a); err != nil {
			return err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.Environment)) {
		if err := secret.Check("environment", k+"="+c.Environment[k]); err != nil {
			return err
		}
	}
	return nil
}

// StartRequest is one exec_command call.
type StartRequest struct {
	Command Command
	// Sandbox is the effective sandbox the edge chose: SandboxReadOnly or
	// SandboxWorkspaceWrite.
	Sandbox string
}

// storedStart is the operation record's result: the refs of the command.
type storedStart struct {
	ProcessRef string `json:"processRef"`
	OutputRef  string `json:"outputRef"`
}

// reasonClosedWhileStarting is the kill reason of a command whose
// execution closed while it started.
const reasonClosedWhileStarting = "execution_closed"

// Start runs a command in the execution's Project, once per operationId:
// an identical retry replays the first call's command (View.Replayed), a
// different request under the same operationId is idempotency.ErrConflict.
// It waits up to about 2 s for the command to end, then reports its state
// with its output inline (head and tail when long).
//
// Errors: project.ErrPathDenied (a *project.PathError),
// ErrWorkingDirMissing or ErrWorkingDirNotDir for the working directory;
// ErrProjectUnavailable; ErrGrantShare past the caller's grant's share of
// the slots, ErrSlotsBusy when the Project's are taken by several grants,
// process.ErrTooMany and process.ErrAllBusy past the manager's bounds;
// rootlock.ErrBusy; process.ErrSpawn,
// process.ErrSandboxUnavailable, process.ErrClosed from the manager;
// operation errors; a *secret.Error when the command holds a literal
// credential (nothing is recorded then). Errors of a command that did not
// start wrap idempotency.ErrNotStarted; those of one that ran, however
// briefly, wrap idempotency.ErrOutcomeUnknown (Do adds it).
func (s *Service) Start(ctx context.Context, h executions.Handle, req StartRequest) (View, error) {
	if err := req.Command.Validate(); err != nil {
		return View{}, idempotency.NotStarted(err)
	}
	if err := req.Command.checkSecrets(); err != nil {
		return View{}, idempotency.NotStarted(err)
	}
	proj := h.Project() // Path is a managed worktree's, Source its repository
	dir, err := workingDir(proj, req.Command.WorkingDirectory)
	if err != nil {
		return View{}, idempotency.NotStarted(err)
	}
	hash, err := idempotency.HashRequest(req.Command)
	if err != nil {
		return View{}, idempotency.NotStarted(err)
	}
	// Before the operation's record, which the low disk may refuse too.
	if s.opts.Disk != nil {
		if err := s.opts.Disk.CheckCommand(ctx, proj.Path, req.Sandbox != SandboxReadOnly); err != nil {
			return View{}, idempotency.NotStarted(err)
		}
	}
	o := ownerOf(h)
	key := idempotency.Key{GrantID: o.GrantID, ExecutionID: o.ExecutionID, Tool: "exec_command", OperationID: req.Command.OperationID}
	var started *entry
	raw, replayed, err := s.opts.Operations.Do(ctx, key, hash, func(ctx context.Context) ([]byte, error) {
		e, err := s.start(ctx, h, req, dir)
		if err != nil {
			return nil, err
		}
		started = e
		return json.Marshal(storedStart{ProcessRef: e.ref, OutputRef: e.outputRef})
	})
	if err != nil {
		return View{}, err
	}
	if started == nil {
		// Replayed: the first call's command, in memory or retained.
		var st storedStart
		if err := json.Unmarshal(raw, &st); err != nil {
			return View{}, fmt.Errorf("decode stored exec_command: %w", err)
		}
		started, err = s.find(ctx, o, st.ProcessRef, false)
		if errors.Is(err, ErrNotFound) {
			// Its output was retired since.
			return View{ProcessRef: st.ProcessRef, OutputRef: st.OutputRef, Status: "gone", Replayed: true}, nil
		}
		if err != nil {
			return View{}, err
		}
	}
	state, err := started.wait(ctx, startWait)
	if err != nil && !errors.Is(err, context.Canceled) {
		return View{}, err
	}
	v := view(started, state)
	v.Output, v.Truncated, v.OmittedBytes = inline(started.out, state)
	v.Replayed = replayed
	v.Sandbox = req.Sandbox
	if s.opts.Processes.Sandbox().Mode == process.SandboxOff {
		v.Sandbox = process.SandboxOff
	}
	return v, nil
}

// start is the effect of Start: the command started, recorded and in the
// table. Its errors wrap idempotency.ErrNotStarted unless the command ran
// (then Do marks its operation unknown and says so).
func (s *Service) start(ctx context.Context, h executions.Handle, req StartRequest, dir string) (*entry, error) {
	proj, cmd, o := h.Project(), req.Command, ownerOf(h)
	sl, err := s.table.reserve(o.GrantID, proj.Ref)
	if err != nil {
		return nil, idempotency.NotStarted(err)
	}
	defer sl.release()
	// A command that cannot write the Project holds no patch back.
	leaseMode := rootlock.Command
	if req.Sandbox == SandboxReadOnly {
		leaseMode = rootlock.ReadOnlyCommand
	}
	lease, err := s.opts.Locks.Acquire(ctx, proj.Path, leaseMode, lockWait)
	if err != nil {
		return nil, idempotency.NotStarted(err)
	}
	if err := h.Err(); err != nil {
		lease.Release()
		return nil, idempotency.NotStarted(err)
	}
	spec := process.Spec{Program: cmd.Program, Args: cmd.Args, Shell: cmd.Shell, Command: cmd.Command,
		Dir: filepath.Join(proj.Path, filepath.FromSlash(dir)), Root: proj.Path, ReadOnly: req.Sandbox == SandboxReadOnly,
		Tenant: o.GrantID, // a grant's commands share its bounds (processes, memory, CPU, output spool): one grant never crowds out another
		// The Project's tool home, keyed like the execution's binding by
		// the root's fingerprint: a worktree execution shares its source
		// Project's, and a directory put in the Project's place gets its own.
		Tools: h.Execution().RootFingerprint,
		Env:   process.MergeEnv(s.baseEnv, cmd.Environment),
		TTY:   cmd.TTY, Stdin: []byte(cmd.Stdin), CloseStdin: cmd.CloseStdin,
		Timeout: time.Duration(cmd.TimeoutMs) * time.Millisecond, MaxOutputBytes: process.DefaultMaxOutputBytes}
	if spec.Timeout == 0 {
		spec.Timeout = DefaultTimeout
	}
	if proj.Source != "" {
		// A managed worktree's Git metadata lives in the source
		// repository: readable, so Git works (status, diff, log), never
		// writable (its hooks and config run on the owner's host).
		spec.ReadPaths = []string{filepath.Join(proj.Source, ".git")}
	}
	p, err := s.opts.Processes.Start(ctx, o.ExecutionID, spec)
	if err != nil {
		lease.Release()
		return nil, idempotency.NotStarted(err)
	}
	mode := "direct"
	if cmd.Shell {
		mode = "shell"
	}
	e := &entry{p: p, out: p, ref: ids.New("prc_", 16), outputRef: ids.New("out_", 16), grantID: o.GrantID, execID: o.ExecutionID,
		sessionRef: o.SessionRef, mode: mode, dir: dir, projectRef: proj.Ref, commandLine: commandLine(cmd)}
	// The record exists before the operation completes, so that after a
	// crash every ref the model was given reads back (as killed).
	recorded := false
	if s.opts.Outputs != nil {
		if err := s.opts.Outputs.Started(context.WithoutCancel(ctx), &OutputRecord{OutputRef: e.outputRef, ProcessRef: e.ref,
			SpoolID: p.SpoolID(), GrantID: e.grantID, ExecutionID: e.execID, ProjectRef: e.projectRef,
			StartedAt: p.State().StartedAt.UTC()}); err != nil {
			_ = p.Remove() // kills the tree
			<-p.Done()
			lease.Release()
			return nil, err // it ran for a moment: outcome unknown, not "not started"
		}
		recorded = true
	}
	if err := s.table.add(e, h, sl); err != nil {
		// The execution closed while this command started, and its close
		// may have killed the group before the command was there:
		// nothing may stay, its scratch included.
		_ = p.Remove()
		<-p.Done()
		s.opts.Processes.KillGroup(e.execID, reasonClosedWhileStarting)
		if recorded {
			_ = s.opts.Outputs.RetireExecutions(context.WithoutCancel(ctx), []string{e.execID})
		}
		lease.Release()
		return nil, err // it ran for a moment: outcome unknown
	}
	s.recording.Add(1)
	go s.afterExit(e, lease, recorded)
	return e, nil
}

// workingDir checks a model-supplied working directory: contained, an
// existing directory inside the root (symlinks only while they stay in).
func workingDir(proj project.Root, rel string) (string, error) {
	clean, err := project.CleanRel(rel)
	if err != nil {
		return "", err
	}
	r, err := os.OpenRoot(proj.Path)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrProjectUnavailable, project.Scrub(err))
	}
	defer r.Close()
	fi, err := r.Stat(clean)
	if err != nil {
		if err := project.Classify(err); errors.Is(err, project.ErrPathDenied) {
			return "", err
		}
		return "", ErrWorkingDirMissing
	}
	if !fi.IsDir() {
		return "", ErrWorkingDirNotDir
	}
	return clean, nil
}

// afterExit releases the Command lease when the whole tree is gone,
// records a sanitized checkpoint on the execution's Thread, and (when the
// command was recorded) hands the finished output over to the retention:
// the entry leaves memory.
func (s *Service) afterExit(e *entry, lease *rootlock.Lease, recorded bool) {
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
	s.opts.Checkpoints.Checkpoint(ctx, e.execID, "command_finished", data)
}

// handOver records a finished command's final state; from then on its
// output is read from the retention and the entry leaves memory. If the
// execution was closed meanwhile the record (and file) are gone already.
func (s *Service) handOver(ctx context.Context, e *entry, st process.State) {
	err := s.opts.Outputs.Finished(ctx, e.outputRef, e.p.SpoolID(), st, e.p.TruncatedTail())
	switch {
	case errors.Is(err, ErrNoOutputRecord):
		if s.table.retire(e) {
			_ = e.p.Remove()
		}
	case err != nil:
		s.log.Error("record finished command; its output stays in memory until the execution closes", "err", err)
	default:
		s.table.retire(e)
	}
}
