package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/devspace-dev/devspace/internal/edits"
	"github.com/devspace-dev/devspace/internal/oauth"
)

type applyPatchIn struct {
	OperationID    string          `json:"operationId" jsonschema:"caller-chosen idempotency key (1-128 bytes); retrying with the same value replays the first result"`
	Patch          string          `json:"patch" jsonschema:"Codex-format patch: *** Begin Patch, then *** Add File: / *** Delete File: / *** Update File: (optionally *** Move to:) sections with @@ hunks, then *** End Patch"`
	IfMatch        json.RawMessage `json:"ifMatch" jsonschema:"for every path the patch touches: the version (or version.contentHash) from read_files, or null for must-not-exist; as an object keyed by path, or a single value when the patch touches one path"`
	AllowSensitive bool            `json:"allowSensitive,omitempty" jsonschema:"allow changing files that look like secrets; only when the user asked for it"`
}

// schema publishes ifMatch as what edits.ParseIfMatch reads: an object
// keyed by path, or one value (a contentHash string, a version object, or
// null).
func (applyPatchIn) schema(s *jsonschema.Schema) {
	s.Properties["ifMatch"].Types = []string{"object", "string", "null"}
	s.Properties["ifMatch"].Items = nil
}

func (in *applyPatchIn) validate() error {
	if in.Patch == "" {
		return invalidInput("patch is required")
	}
	return nil
}

type applyPatchOut struct {
	Files    []edits.File `json:"files"`
	Bytes    int64        `json:"bytes"`
	Replayed bool         `json:"replayed,omitempty"`
}

func (o applyPatchOut) summary() string {
	msg := fmt.Sprintf("Patched %d file(s).", len(o.Files))
	for _, f := range o.Files {
		if f.Fuzz != "" && f.Fuzz != "exact" {
			msg += " Some hunks matched only with " + f.Fuzz + " fuzz: check the result."
			break
		}
	}
	return msg
}

func registerPatchTools(s *Server) {
	addTool(s, spec{
		name:  "apply_patch",
		title: "Apply a patch",
		description: "Use when changing Project files: one Codex-format patch adds, deletes, updates or moves files atomically (all or nothing). " +
			"Avoid patching files you have not read in this conversation: every touched path needs ifMatch (its version from read_files, or null for a new file), so stale edits are refused. " +
			"Returns each file's action, added/removed lines, the fuzz used and the new contentHash.",
		scopes: []string{oauth.ScopeRead, oauth.ScopeWrite},
		hints:  hints{destructive: true, idempotent: true},
	}, s.applyPatch)
}

func (s *Server) applyPatch(ctx context.Context, c *call, in *applyPatchIn) (applyPatchOut, error) {
	x, err := s.execution(ctx, c)
	if err != nil {
		return applyPatchOut{}, operationError(in.OperationID, err)
	}
	defer x.Release()
	ifMatch, err := edits.ParseIfMatch(in.IfMatch)
	if err != nil {
		return applyPatchOut{}, operationError(in.OperationID, err)
	}
	a, err := s.opts.Edits.Apply(ctx, x, edits.ApplyRequest{OperationID: in.OperationID, Patch: in.Patch, IfMatch: ifMatch, AllowSensitive: in.AllowSensitive})
	if err != nil {
		return applyPatchOut{}, operationError(in.OperationID, err)
	}
	return applyPatchOut{Files: a.Files, Bytes: a.Bytes, Replayed: a.Replayed}, nil
}
