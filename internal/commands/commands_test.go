package commands_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/commands"
	"github.com/devspace-dev/devspace/internal/cursor"
	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/executions/executionstest"
	"github.com/devspace-dev/devspace/internal/fault"
	"github.com/devspace-dev/devspace/internal/idempotency"
	"github.com/devspace-dev/devspace/internal/patch"
	"github.com/devspace-dev/devspace/internal/process"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/rootlock"
	"github.com/devspace-dev/devspace/internal/store"
	"github.com/devspace-dev/devspace/internal/undo"
)

// TestMain doubles as the command supervisor: the process manager starts
// this test binary with the hidden supervisor subcommand.
func TestMain(m *testing.M) {
	if code, ok := process.InternalMain(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// rig is a commands service on real parts: a process manager running
// this binary as supervisor, SQLite, the retention and undo snapshots.
type rig struct {
	svc     *commands.Service
	procs   *process.Manager
	outputs *commands.OutputRecords
	locks   *rootlock.Locks
	undo    *undo.Store
	root    *os.Root
	proj    project.Root
	dir     string
	out     string // spool directory
}

// rigOptions choose how the rig's commands run; the zero value is
// unconfined, with a cgroup where one is writable.
type rigOptions struct {
	landlock bool  // confine commands (as the server does by default)
	noCgroup bool  // no per-command cgroup
	cgroup   bool  // require a per-command cgroup (the test is skipped without one)
	maxSpool int64 // the spool's total (process.Options.MaxSpoolBytes); 0 is the default
}

func newRig(t *testing.T) *rig { return newRigWith(t, rigOptions{}) }

// newRigWith is newRig with o. The process manager is a child subreaper,
// as the server's is.
func newRigWith(t *testing.T, o rigOptions) *rig {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	projDir := filepath.Join(dir, "project")
	if err := os.MkdirAll(filepath.Join(projDir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(projDir, "file"), nil, 0o644)
	st, err := store.Open(ctx, filepath.Join(dir, "state"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{dir: dir, out: filepath.Join(dir, "output"), proj: project.Root{Ref: "prj_1", Label: "p", Path: projDir}, locks: rootlock.New()}
	procs, err := process.New(process.Options{SupervisorPath: exe, SupervisorEnv: []string{"GORACE=atexit_sleep_ms=0"},
		SpoolDir: r.out, Sandbox: process.SandboxOptions{Off: !o.landlock, ScratchDir: filepath.Join(dir, "scratch")},
		Grace: 200 * time.Millisecond, DisableCgroup: o.noCgroup, Subreaper: true, MaxSpoolBytes: o.maxSpool})
	if err != nil {
		t.Fatal(err)
	}
	r.procs = procs
	outputs, err := commands.NewOutputRecords(ctx, commands.OutputRecordsOptions{Store: st, Spool: procs})
	if err != nil {
		t.Fatal(err)
	}
	r.outputs = outputs
	if r.undo, err = undo.NewStore(undo.Options{Dir: filepath.Join(dir, "snapshots")}); err != nil {
		t.Fatal(err)
	}
	if r.root, err = os.OpenRoot(projDir); err != nil {
		t.Fatal(err)
	}
	r.svc = commands.New(commands.Options{Processes: procs, Outputs: outputs, Undo: r.undo, Locks: r.locks,
		Operations: idempotency.New(st, idempotency.Options{}), Cursors: cursor.New([]byte("commands-test-key-commands-test-key"), cursor.Options{}),
		Checkpoints: executions.NewActivity(st, nil), HostEnv: os.Environ()})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = procs.Shutdown(ctx)
		r.svc.WaitRecorded(ctx)
		r.root.Close()
		r.undo.Close()
		st.Close()
	})
	if o.landlock && procs.Sandbox().Mode != process.SandboxLandlock {
		t.Skipf("no Landlock here: %s", procs.Sandbox().Status.Reason)
	}
	if o.cgroup && !procs.CgroupEnabled() {
		_, reason := process.CgroupAvailable()
		t.Skipf("no delegated cgroup v2: %s", reason)
	}
	return r
}

// handle is exec's handle on proj, of grant grt_<exec>.
func handle(exec string, proj project.Root) *executionstest.Handle {
	return executionstest.New(exec, "grt_"+exec, proj)
}

func (r *rig) start(t *testing.T, exec, opID, shell string) commands.View {
	t.Helper()
	v, err := r.svc.Start(context.Background(), handle(exec, r.proj), commands.StartRequest{Command: commands.Command{OperationID: opID, Shell: true, Command: shell}, Sandbox: commands.SandboxWorkspaceWrite})
	if err != nil {
		t.Fatalf("start %s: %v", shell, err)
	}
	return v
}

// snapshot records an undo snapshot for exec, as apply_patch does.
func (r *rig) snapshot(t *testing.T, exec string) {
	t.Helper()
	name := exec + ".txt"
	p, err := patch.Parse("*** Begin Patch\n*** Add File: " + name + "\n+x\n*** End Patch")
	if err != nil {
		t.Fatal(err)
	}
	res, err := patch.Apply(context.Background(), r.root, p, map[string]patch.Precondition{name: {Set: true, MustNotExist: true}}, patch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.undo.Record(context.Background(), exec, "op-"+exec, res, func(p string) (string, error) { return p, nil }); err != nil {
		t.Fatal(err)
	}
}

func (r *rig) spoolFiles() int {
	ents, _ := os.ReadDir(r.out)
	return len(ents)
}

// TestCloseExecutions: closing an execution kills its commands, retires
// its retained output and deletes its undo snapshots; another
// execution's commands, output and snapshots stay.
func TestCloseExecutions(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	finished := map[string]commands.View{}
	for _, exec := range []string{"exe_a", "exe_b"} {
		r.snapshot(t, exec)
		finished[exec] = r.start(t, exec, "echo", "echo out-"+exec)
		if v := r.start(t, exec, "sleep", "echo started; sleep 1000"); v.Status != process.StatusRunning {
			t.Fatalf("%s sleep: %+v", exec, v)
		}
		if n := r.svc.Running(exec); n != 1 {
			t.Fatalf("%s running: %d", exec, n)
		}
	}
	if n := r.spoolFiles(); n != 4 {
		t.Fatalf("spool files: %d, want 4", n)
	}

	r.svc.CloseExecutions(ctx, []string{"exe_a"}, "grant_revoked")

	if n := r.svc.Running("exe_a"); n != 0 {
		t.Errorf("closed execution still runs %d commands", n)
	}
	if _, err := r.undo.Latest("exe_a"); !errors.Is(err, undo.ErrNotFound) {
		t.Errorf("closed execution's snapshot: %v, want undo.ErrNotFound", err)
	}
	read := func(exec string) (*commands.Output, error) {
		return r.svc.Read(ctx, handle(exec, r.proj), commands.ReadRequest{Ref: finished[exec].OutputRef, ByOutput: true,
			Mode: commands.ModePage, Limit: commands.OutputPageDefault})
	}
	if _, err := read("exe_a"); !errors.Is(err, commands.ErrNotFound) {
		t.Errorf("closed execution's output: %v, want ErrNotFound", err)
	}
	if n := r.spoolFiles(); n != 2 {
		t.Errorf("spool files after close: %d, want the other execution's 2", n)
	}
	// The other execution is untouched.
	if n := r.svc.Running("exe_b"); n != 1 {
		t.Errorf("other execution runs %d commands, want 1", n)
	}
	if _, err := r.undo.Latest("exe_b"); err != nil {
		t.Errorf("other execution's snapshot: %v", err)
	}
	if o, err := read("exe_b"); err != nil || o.Output != "out-exe_b\n" {
		t.Errorf("other execution's output: %+v, %v", o, err)
	}
	if n, _ := r.svc.Interrupt(ctx, "exe_b"); n != 1 {
		t.Errorf("interrupt reached %d commands, want 1", n)
	}
}

// TestStartErrors: what Start refuses, with the sentinel the edge maps.
func TestStartErrors(t *testing.T) {
	r := newRig(t)
	for _, tt := range []struct {
		name, dir string
		want      error
	}{
		{"missing", "nope", commands.ErrWorkingDirMissing},
		{"not a directory", "file", commands.ErrWorkingDirNotDir},
		{"outside", "../", project.ErrPathDenied},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.svc.Start(context.Background(), handle("exe_e", r.proj), commands.StartRequest{Command: commands.Command{OperationID: tt.name, Program: "true", WorkingDirectory: tt.dir}, Sandbox: commands.SandboxReadOnly})
			if !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
	v := r.start(t, "exe_e", "pwd", "pwd")
	if !strings.HasSuffix(v.Output, "/project\n") || v.Sandbox != process.SandboxOff {
		t.Errorf("pwd: %+v", v)
	}
}

// closingHandle closes its execution right after its first Err answered
// nil: the close lands after the check that follows the lease, while the
// command starts, and after the close killed the (still empty) group.
type closingHandle struct {
	*executionstest.Handle
	n atomic.Int32
}

func (h *closingHandle) Err() error {
	err := h.Handle.Err()
	if h.n.Add(1) == 1 {
		h.Close()
	}
	return err
}

// TestStartClosedWhileStartingIsOutcomeUnknown: a command whose execution
// closes while it starts ran for a moment, so Start's error says phase
// outcome_unknown with the execution's code, and a retry with the same
// operationId answers idempotency.ErrOutcomeUnknown, as the phase said.
// The edge answered phase not_started, which it guessed for any
// exec_command failure.
func TestStartClosedWhileStartingIsOutcomeUnknown(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	h := &closingHandle{Handle: handle("exe_e", r.proj)}
	req := commands.StartRequest{Command: commands.Command{OperationID: "op", Shell: true, Command: "exec sleep 30"},
		Sandbox: commands.SandboxWorkspaceWrite}
	_, err := r.svc.Start(ctx, h, req)
	code, _ := fault.CodeOf(err)
	phase, _ := fault.PhaseOf(err)
	if code != "project_execution_required" || phase != fault.OutcomeUnknown {
		t.Fatalf("start while the execution closes: %v: code %q, phase %q; want project_execution_required, outcome_unknown", err, code, phase)
	}
	_, err = r.svc.Start(ctx, h, req)
	if retry, _ := fault.PhaseOf(err); !errors.Is(err, idempotency.ErrOutcomeUnknown) || retry != phase {
		t.Errorf("retry with the same operationId: %v (phase %q); want operation outcome unknown, as the first call said", err, retry)
	}
	if n := r.procs.Running(); n != 0 {
		t.Errorf("%d processes running", n)
	}
}

// TestStartOfAClosingExecution: a command of an execution that closed
// before it started runs nothing; one whose execution closes while it
// starts leaves no process, no slot and no scratch behind.
func TestStartOfAClosingExecution(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	closed := handle("exe_c", r.proj)
	closed.Close()
	marker := fmt.Sprintf("closing-%d", time.Now().UnixNano())
	cmd := func(op string) commands.StartRequest {
		return commands.StartRequest{Command: commands.Command{OperationID: op, Shell: true,
			Command: "echo x > \"$HOME/mark\"; exec sleep 30 # " + marker}, Sandbox: commands.SandboxWorkspaceWrite}
	}
	_, err := r.svc.Start(ctx, closed, cmd("before"))
	if !errors.Is(err, executions.ErrExecutionRequired) || !errors.Is(err, idempotency.ErrNotStarted) {
		t.Fatalf("start in a closed execution: %v; want not started, execution required", err)
	}
	_, err = r.svc.Start(ctx, &closingHandle{Handle: handle("exe_d", r.proj)}, cmd("while"))
	if !errors.Is(err, executions.ErrExecutionRequired) {
		t.Fatalf("start while the execution closes: %v; want execution required", err)
	}
	if pids := markedProcs(marker); len(pids) != 0 {
		t.Errorf("processes left: %v", describeProcs(pids))
	}
	if n := r.svc.Running("exe_d"); n != 0 {
		t.Errorf("%d commands of the closed execution in the table", n)
	}
	if n := r.procs.Running(); n != 0 {
		t.Errorf("%d processes running", n)
	}
	sum := sha256.Sum256([]byte("exe_d")) // process.Manager's scratch name
	if _, err := os.Stat(filepath.Join(r.dir, "scratch", hex.EncodeToString(sum[:12]))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("scratch of the closed execution: %v; want removed", err)
	}
}
