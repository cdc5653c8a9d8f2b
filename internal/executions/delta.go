package executions

import (
	"context"
	"fmt"
	"os"

	"github.com/devspace-dev/devspace/internal/instructions"
	"github.com/devspace-dev/devspace/internal/store"
)

// DeltaFile is a nested instruction file newly delivered with a tool result.
type DeltaFile struct {
	Path    string `json:"path"`
	Trust   string `json:"trust"`
	Content string `json:"content"`
}

// InstructionsDelta returns the nested instruction files that apply to the
// given Project-relative paths and were not yet delivered to the execution
// (or changed since), and records them as delivered. Paths that are not
// valid are skipped (the tool reports them itself).
func (s *Service) InstructionsDelta(ctx context.Context, e *store.Execution, r *os.Root, paths []string) ([]DeltaFile, error) {
	finder, err := instructions.New(r, instructions.Options{Fallbacks: s.opts.Fallbacks})
	if err != nil {
		return nil, fmt.Errorf("instructions: %w", err)
	}
	batch := finder.Batch() // each directory read once, whatever the number of paths
	found := map[string]instructions.File{}
	var order []string
	for _, p := range paths {
		files, err := batch.ForPath(ctx, p)
		if err != nil {
			continue
		}
		for _, f := range files {
			if _, seen := found[f.Path]; !seen {
				found[f.Path] = f
				order = append(order, f.Path)
			}
		}
	}
	if len(found) == 0 {
		return nil, nil
	}
	hashes := make(map[string]string, len(found))
	for p, f := range found {
		hashes[p] = f.Hash
	}
	fresh, err := s.opts.Store.MarkInstructionsDelivered(ctx, e.ID, hashes)
	if err != nil {
		return nil, err
	}
	var out []DeltaFile
	for _, p := range order {
		if fresh[p] {
			f := found[p]
			out = append(out, DeltaFile{Path: f.Path, Trust: string(f.Trust), Content: f.Content})
		}
	}
	return out, nil
}
