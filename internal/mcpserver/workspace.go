package mcpserver

import (
	"context"

	"github.com/devspace-dev/devspace/internal/executions"
)

// execution hands out the caller's execution (full re-check); release it
// when the call ends.
func (s *Server) execution(ctx context.Context, c *call) (executions.Handle, error) {
	if err := c.requireSession(); err != nil {
		return nil, err
	}
	h, err := s.opts.Bindings.Resolve(ctx, c.caller)
	if err != nil {
		return nil, err
	}
	c.project = h.Project().Ref
	return h, nil
}
