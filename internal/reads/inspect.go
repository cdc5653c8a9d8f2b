package reads

import (
	"context"

	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/search"
)

// Inspection is what inspect found: a result per operation, in order, and
// the nested instructions that apply to the paths it touched.
type Inspection struct {
	Results           []OpResult  `json:"results"`
	InstructionsDelta []DeltaFile `json:"instructionsDelta,omitempty"`
}

// Inspect runs ls, glob and grep operations over the Project.
func (s *Service) Inspect(ctx context.Context, h executions.Handle, ops []Op, allowSensitive bool) (*Inspection, error) {
	w, err := s.open(ctx, h)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	results, err := s.search.Run(ctx, w.Root, ops, allowSensitive)
	if err != nil {
		return nil, &InputError{Err: err}
	}
	for _, r := range results {
		if r.Error != nil && r.Error.Code == search.CodePathDenied {
			s.denied("inspect")
		}
	}
	out := &Inspection{Results: results}
	if out.InstructionsDelta, err = s.opts.Instructions.InstructionsDelta(ctx, h.Execution(), w.Root, search.TouchedPaths(results)); err != nil {
		return nil, err
	}
	return out, nil
}
