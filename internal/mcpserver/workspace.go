package mcpserver

import (
	"context"

	"github.com/devspace-dev/devspace/internal/executions"

	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/rootlock"
	"github.com/devspace-dev/devspace/internal/store"
)

// lockTimeout bounds how long a tool waits for the Project's root lock
// before answering project_busy.
const lockTimeout = rootlock.DefaultWait

// workspace is what a Project tool works on: the caller's execution, its
// Project and the Project root opened as an *os.Root.
type workspace struct {
	*rootlock.Held // Root: the Project root
	exec           *store.Execution
	proj           project.Root
	handle         executions.Handle
}

// execution hands out the caller's execution (full re-check); release it
// when the call ends.
func (s *Server) execution(ctx context.Context, c *call) (executions.Handle, error) {
	if err := c.requireSession(); err != nil {
		return nil, err
	}
	return s.opts.Bindings.Resolve(ctx, c.caller)
}

// openWorkspace resolves the caller's execution (full re-check), takes the
// root lock in mode, checks the execution once more and opens the root.
// Call close when done.
func (s *Server) openWorkspace(ctx context.Context, c *call, mode rootlock.Mode) (*workspace, error) {
	x, err := s.execution(ctx, c)
	if err != nil {
		return nil, err
	}
	proj := x.Project()
	h, err := s.opts.Locks.AcquireRoot(ctx, proj.Path, mode, lockTimeout)
	if err != nil {
		x.Release()
		return nil, err
	}
	if err := x.Err(); err != nil {
		h.Close()
		x.Release()
		return nil, err
	}
	return &workspace{Held: h, exec: x.Execution(), proj: proj, handle: x}, nil
}

func (w *workspace) close() {
	w.Close()
	w.handle.Release()
}
