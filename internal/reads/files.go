package reads

import (
	"context"
	"errors"
	"strings"

	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/files"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/skills"
)

// Files is what read_files read: an item per request, in order (a file
// that could not be read has its Error), and the nested instructions that
// apply to the files read and were not delivered yet.
type Files struct {
	Files             []FileItem  `json:"files"`
	InstructionsDelta []DeltaFile `json:"instructionsDelta,omitempty"`
}

// ReadFiles reads Project files and the support files (skill://) of
// skills this execution loaded.
func (s *Service) ReadFiles(ctx context.Context, h executions.Handle, reqs []FileRequest, allowSensitive bool) (*Files, error) {
	w, err := s.open(ctx, h)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	out := &Files{Files: make([]FileItem, len(reqs))}
	var projectReqs []files.Request
	var projectIdx []int
	for i, req := range reqs {
		if strings.HasPrefix(req.Path, skills.URIScheme) {
			out.Files[i] = s.readSkillFile(ctx, w, req, allowSensitive)
			continue
		}
		projectReqs = append(projectReqs, req)
		projectIdx = append(projectIdx, i)
	}
	if len(projectReqs) == 0 {
		return out, nil
	}
	items, err := s.files.Read(ctx, w.Root, projectReqs, allowSensitive)
	if err != nil {
		return nil, err
	}
	var paths []string
	for j, it := range items {
		out.Files[projectIdx[j]] = it
		if it.Error == nil {
			paths = append(paths, it.Path)
		} else if it.Error.DenyReason != "" {
			s.denied(it.Error.DenyReason)
		}
	}
	if out.InstructionsDelta, err = s.opts.Instructions.InstructionsDelta(ctx, h.Execution(), w.Root, paths); err != nil {
		return nil, err
	}
	return out, nil
}

// readSkillFile reads a skill:// support file of a skill loaded in this
// execution, through the skill directory's own root.
func (s *Service) readSkillFile(ctx context.Context, w *workspace, req files.Request, allowSensitive bool) files.Item {
	sr, rel, err := s.opts.Skills.OpenSupport(ctx, w.Root, req.Path, s.loaded.get(w.h.ID()))
	if err != nil {
		code, msg := files.CodeNotFound, "no such skill file"
		switch {
		case errors.Is(err, skills.ErrNotLoaded):
			code, msg = files.CodeSkillNotLoaded, "load the skill with the skills tool first"
		case errors.Is(err, project.ErrPathDenied):
			code, msg = files.CodePathDenied, "that path is outside the skill"
		}
		return files.Item{Path: req.Path, Error: &files.ItemError{Code: code, Message: msg}}
	}
	defer sr.Close()
	items, err := s.files.Read(ctx, sr, []files.Request{{Path: rel, Offset: req.Offset, Limit: req.Limit}}, allowSensitive)
	if err != nil || len(items) != 1 {
		return files.Item{Path: req.Path, Error: &files.ItemError{Code: files.CodeUnreadable, Message: "the skill file could not be read"}}
	}
	items[0].Path = req.Path
	return items[0]
}
