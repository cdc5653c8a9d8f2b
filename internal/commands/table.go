package commands

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/process"
)

// outputSource reads a command's retained output: the live Process, or
// the spool file of a finished one (process.Retained).
type outputSource interface {
	ReadAt(off int64, n int) ([]byte, error)
	Head(n int) []byte
	Tail(n int) []byte
}

// entry is a command the server started, with what binds it. While the
// command runs (and until its final state is recorded) p is its live
// Process; a finished command read back from its retention record has p
// nil, its final state in final and its output in out.
type entry struct {
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
	// commandLine is the command as the Owner is shown it, credentials
	// redacted (commandLine); "" for a retained command.
	commandLine string
}

func (e *entry) state() process.State {
	if e.p != nil {
		return e.p.State()
	}
	return e.final
}

// wait is Process.Wait; a retained command has ended already.
func (e *entry) wait(ctx context.Context, d time.Duration) (process.State, error) {
	if e.p != nil {
		return e.p.Wait(ctx, d)
	}
	return e.final, nil
}

// table maps refs to the commands in memory: running ones, and finished
// ones until their final state is recorded with the retention (without a
// retention, until their execution is closed).
type table struct {
	mu     sync.Mutex
	byRef  map[string]*entry
	byOut  map[string]*entry
	byExec map[string][]*entry
	// pending counts slots reserved (reserve) and not yet in byRef, by
	// Project ref, grant ID and grant ID + NUL + Project ref.
	pending map[string]int
}

// add records e, or returns h.Err() when its execution closed
// meanwhile. The check is under the table's lock, and a close cancels the
// handle before it drops the execution's commands (dropExec): so either
// add sees the close, or dropExec finds e.
func (t *table) add(e *entry, h executions.Handle, sl *slot) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := h.Err(); err != nil {
		return err
	}
	sl.freeLocked() // the entry counts from now on
	if t.byRef == nil {
		t.byRef, t.byOut, t.byExec = map[string]*entry{}, map[string]*entry{}, map[string][]*entry{}
	}
	t.byRef[e.ref] = e
	t.byOut[e.outputRef] = e
	t.byExec[e.execID] = append(t.byExec[e.execID], e)
	return nil
}

// reserve takes a command slot for grant on project, or says which
// bound stops it: ErrGrantShare when the grant already runs its share of
// the Project's slots (MaxPerGrantPerProject) or of the server's
// (MaxPerGrant), ErrSlotsBusy when the Project's slots (MaxPerProject)
// are taken by several grants' commands. Counting and reserving happen
// under one lock, so commands started at once cannot pass a bound
// together. add consumes the slot under that lock as the command enters
// the table (it never counts twice); the caller calls release when done,
// which frees the slot of a command that never entered.
func (t *table) reserve(grant, project string) (*slot, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	inProject, ofGrant, ofGrantInProject := t.pending[project], t.pending[grant], t.pending[grant+"\x00"+project]
	for _, e := range t.byRef {
		if !e.state().TreeAlive {
			continue
		}
		if e.projectRef == project {
			inProject++
		}
		if e.grantID == grant {
			ofGrant++
			if e.projectRef == project {
				ofGrantInProject++
			}
		}
	}
	switch {
	case ofGrantInProject >= MaxPerGrantPerProject:
		return nil, fmt.Errorf("%w: %d of the Project's %d slots (at most %d per grant)", ErrGrantShare, ofGrantInProject, MaxPerProject, MaxPerGrantPerProject)
	case ofGrant >= MaxPerGrant:
		return nil, fmt.Errorf("%w: %d of the server's slots (at most %d per grant)", ErrGrantShare, ofGrant, MaxPerGrant)
	case inProject >= MaxPerProject:
		return nil, fmt.Errorf("%w: the Project's %d slots are in use", ErrSlotsBusy, MaxPerProject)
	}
	if t.pending == nil {
		t.pending = map[string]int{}
	}
	sl := &slot{t: t, keys: []string{project, grant, grant + "\x00" + project}}
	for _, k := range sl.keys {
		t.pending[k]++
	}
	return sl, nil
}

// slot is a command slot reserve took: pending until the command enters
// the table (add) or is released.
type slot struct {
	t    *table
	keys []string
	done bool // under t.mu
}

// freeLocked gives the slot's pending count back; t.mu is held.
func (sl *slot) freeLocked() {
	if sl.done {
		return
	}
	sl.done = true
	for _, k := range sl.keys {
		if sl.t.pending[k]--; sl.t.pending[k] == 0 {
			delete(sl.t.pending, k)
		}
	}
}

// release frees the slot unless its command entered the table.
func (sl *slot) release() {
	sl.t.mu.Lock()
	defer sl.t.mu.Unlock()
	sl.freeLocked()
}

// grantMax is the most command slots one grant's live commands hold.
func (t *table) grantMax() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	held := map[string]int{}
	for _, e := range t.byRef {
		if e.state().TreeAlive {
			held[e.grantID]++
		}
	}
	most := 0
	for _, n := range held {
		most = max(most, n)
	}
	return most
}

// lookup returns the entry for a ref only if it belongs to the caller's
// execution (and grant): another execution's, session's or grant's ref is
// indistinguishable from an unknown one.
func (t *table) lookup(ref string, byOutput bool, grantID, execID string) *entry {
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

func (t *table) ofExec(execID string) []*entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*entry(nil), t.byExec[execID]...)
}

// retire forgets a finished entry whose record now holds its output,
// unless dropExec got it first. It reports whether it did.
func (t *table) retire(e *entry) bool {
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

// dropExec forgets an execution's commands and returns them.
func (t *table) dropExec(execID string) []*entry {
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

// find looks a ref up among the caller's commands in memory, then among
// the retained ones. Errors: ErrNotFound when the caller's execution has
// no such command; a failed retention lookup.
func (s *Service) find(ctx context.Context, o owner, ref string, byOutput bool) (*entry, error) {
	if e := s.table.lookup(ref, byOutput, o.GrantID, o.ExecutionID); e != nil {
		return e, nil
	}
	if s.opts.Outputs == nil {
		return nil, ErrNotFound
	}
	rec, err := s.opts.Outputs.Lookup(ctx, ref, byOutput, o.GrantID, o.ExecutionID)
	if errors.Is(err, ErrNoOutputRecord) || (err == nil && rec.Status == process.StatusRunning) {
		// Not recorded: the command may have been handed over between the
		// two lookups. Recorded but not handed over: the entry is in
		// memory again by now unless the execution was closed.
		if e := s.table.lookup(ref, byOutput, o.GrantID, o.ExecutionID); e != nil {
			return e, nil
		}
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("look up retained output: %w", err)
	}
	return &entry{out: s.opts.Outputs.Output(rec), final: RecordState(rec), ref: rec.ProcessRef,
		outputRef: rec.OutputRef, grantID: rec.GrantID, execID: rec.ExecutionID, projectRef: rec.ProjectRef}, nil
}
