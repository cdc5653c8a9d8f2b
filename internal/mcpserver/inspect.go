package mcpserver

import (
	"context"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/devspace-dev/devspace/internal/oauth"
	"github.com/devspace-dev/devspace/internal/reads"
)

type inspectIn struct {
	Operations     []reads.Op `json:"operations" jsonschema:"1-8 operations: ls (path, depth), glob (pattern like **/*.go), grep (pattern, regex, ignoreCase, include, context, limit); .gitignore is honoured and .git skipped"`
	AllowSensitive bool       `json:"allowSensitive,omitempty" jsonschema:"include files that look like secrets; only when the user asked for it"`
}

func (inspectIn) schema(s *jsonschema.Schema) {
	s.Properties["operations"].MinItems = jsonschema.Ptr(1)
	s.Properties["operations"].MaxItems = jsonschema.Ptr(reads.MaxOperations)
	s.Properties["operations"].Items.Properties["op"].Enum = []any{"ls", "glob", "grep"}
}

type inspectOut reads.Inspection

func (o inspectOut) summary() string {
	entries, matches := 0, 0
	for _, r := range o.Results {
		entries += len(r.Entries)
		matches += len(r.Matches)
	}
	msg := fmt.Sprintf("%d operation(s): %d entries, %d matches", len(o.Results), entries, matches)
	if len(o.InstructionsDelta) > 0 {
		msg += "; new instructions apply to these paths (see instructionsDelta, untrusted repository text)"
	}
	return msg + "."
}

func registerInspectTools(s *Server) {
	addTool(s, spec{
		name:  "inspect",
		title: "List, find and search files",
		description: "Use when exploring a Project: ls a directory, glob for file names, or grep contents (literal or RE2 regex, ignoreCase, include glob, context lines), up to 8 operations per call. " +
			"Avoid grepping for very common words without include or limit. " +
			"Returns entries or matches with line numbers, bounded, with truncation flags.",
		scopes: []string{oauth.ScopeRead},
		hints:  hints{readOnly: true, idempotent: true},
	}, s.inspect)
}

func (s *Server) inspect(ctx context.Context, c *call, in *inspectIn) (inspectOut, error) {
	x, err := s.execution(ctx, c)
	if err != nil {
		return inspectOut{}, err
	}
	defer x.Release()
	out, err := s.opts.Reads.Inspect(ctx, x, in.Operations, in.AllowSensitive)
	if err != nil {
		return inspectOut{}, err
	}
	return inspectOut(*out), nil
}
