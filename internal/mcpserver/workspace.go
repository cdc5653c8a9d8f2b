package mcpserver

import (
	"context"

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
}

// openWorkspace resolves the caller's execution (full re-check), takes the
// root lock in mode and opens the root. Call close when done.
func (s *Server) openWorkspace(ctx context.Context, c *call, mode rootlock.Mode) (*workspace, error) {
	if err := c.requireSession(); err != nil {
		return nil, err
	}
	e, proj, err := s.opts.Bindings.Resolve(ctx, c.caller)
	if err != nil {
		return nil, err
	}
	h, err := s.opts.Locks.AcquireRoot(ctx, proj.Path, mode, lockTimeout)
	if err != nil {
		return nil, err
	}
	return &workspace{Held: h, exec: e, proj: proj}, nil
}

func (w *workspace) close() { w.Close() }
