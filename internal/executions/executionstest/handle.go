// Package executionstest gives services' tests an execution handle
// without an executions.Service: a fixed caller, record and Project,
// closed when the test says so.
package executionstest

import (
	"context"
	"sync"

	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/store"
)

// Handle is an executions.Handle a test builds and closes.
type Handle struct {
	Exec  *store.Execution
	Call  executions.Caller
	Proj  project.Root
	once  sync.Once
	ctx   context.Context
	close context.CancelFunc
}

// New returns an open handle of execution id, called by grant, on proj.
func New(id, grant string, proj project.Root) *Handle {
	return &Handle{Exec: &store.Execution{ID: id, GrantID: grant, ProjectRef: proj.Ref},
		Call: executions.Caller{GrantID: grant, SessionRef: "s"}, Proj: proj}
}

func (h *Handle) init() {
	h.once.Do(func() { h.ctx, h.close = context.WithCancel(context.Background()) })
}

func (h *Handle) ID() string                  { return h.Exec.ID }
func (h *Handle) Caller() executions.Caller   { return h.Call }
func (h *Handle) Project() project.Root       { return h.Proj }
func (h *Handle) Execution() *store.Execution { return h.Exec }
func (h *Handle) Release()                    {}

func (h *Handle) Context() context.Context {
	h.init()
	return h.ctx
}

func (h *Handle) Err() error {
	if h.Context().Err() != nil {
		return executions.ErrExecutionClosed
	}
	return nil
}

// Close closes the execution, as a revocation would.
func (h *Handle) Close() {
	h.init()
	h.close()
}

var _ executions.Handle = (*Handle)(nil)
