package mcpserver

import (
	"context"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/devspace-dev/devspace/internal/oauth"
	"github.com/devspace-dev/devspace/internal/reads"
)

type showChangesIn struct {
	Source string `json:"source" jsonschema:"repository (git: staged, unstaged and untracked) or apply_patch_history (this conversation's patches)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"nextCursor of the previous page"`
}

func (showChangesIn) schema(s *jsonschema.Schema) {
	s.Properties["source"].Enum = []any{reads.SourceRepository, reads.SourceHistory}
}

type showChangesOut struct {
	Source     string              `json:"source"`
	Revision   string              `json:"revision"`
	Head       string              `json:"head,omitempty"`
	Files      []reads.ChangedFile `json:"files"`
	Patch      string              `json:"patch"`
	Offset     int                 `json:"offset"`
	NextCursor string              `json:"nextCursor,omitempty"`
	Truncated  bool                `json:"truncated,omitempty"`
}

func (o showChangesOut) summary() string {
	if len(o.Files) == 0 {
		return "No changes."
	}
	msg := fmt.Sprintf("%d changed file(s)", len(o.Files))
	if o.NextCursor != "" {
		msg += "; more patch text follows (nextCursor)"
	}
	return msg + "."
}

func registerChangeTools(s *Server) {
	addTool(s, spec{
		name:  "show_changes",
		title: "Show changes",
		description: "Use when reviewing what changed: source repository for the Git working tree (staged, unstaged and untracked), or apply_patch_history for the patches of this conversation. " +
			"Avoid paging through very large diffs when the file summary answers the question. " +
			"Returns a file summary and the patch text in pages of 32,000 bytes (follow nextCursor).",
		scopes: []string{oauth.ScopeRead},
		hints:  hints{readOnly: true, idempotent: true},
		widget: s.opts.Widgets == "full" || s.opts.Widgets == "changes",
	}, s.showChanges)
}

func (s *Server) showChanges(ctx context.Context, c *call, in *showChangesIn) (showChangesOut, error) {
	x, err := s.execution(ctx, c)
	if err != nil {
		return showChangesOut{}, err
	}
	defer x.Release()
	ch, err := s.opts.Reads.Changes(ctx, x, in.Source, in.Cursor)
	if err != nil {
		return showChangesOut{}, err
	}
	return showChangesOut{Source: ch.Source, Revision: ch.Revision, Head: ch.Head, Files: ch.Files, Patch: ch.Patch,
		Offset: ch.Offset, NextCursor: ch.NextCursor, Truncated: ch.Truncated}, nil
}
