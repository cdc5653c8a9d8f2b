package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/devspace-dev/devspace/internal/cursor"
	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/oauth"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/review"
	"github.com/devspace-dev/devspace/internal/rootlock"
)

// changesPageBytes is show_changes' page size (docs/design.md §9).
const changesPageBytes = 32000

type showChangesIn struct {
	Source string `json:"source" jsonschema:"repository (git: staged, unstaged and untracked) or apply_patch_history (this conversation's patches)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"nextCursor of the previous page"`
}

func (showChangesIn) schema(s *jsonschema.Schema) {
	s.Properties["source"].Enum = []any{"repository", "apply_patch_history"}
}

// changedFile is one file in the summary.
type changedFile struct {
	Path     string `json:"path"`
	OldPath  string `json:"oldPath,omitempty"`
	Status   string `json:"status"`
	Staged   bool   `json:"staged,omitempty"`
	Unstaged bool   `json:"unstaged,omitempty"`
	Added    int    `json:"added"`
	Removed  int    `json:"removed"`
	Binary   bool   `json:"binary,omitempty"`
	Withheld bool   `json:"withheld,omitempty"`
}

type showChangesOut struct {
	Source     string        `json:"source"`
	Revision   string        `json:"revision"`
	Head       string        `json:"head,omitempty"`
	Files      []changedFile `json:"files"`
	Patch      string        `json:"patch"`
	Offset     int           `json:"offset"`
	NextCursor string        `json:"nextCursor,omitempty"`
	Truncated  bool          `json:"truncated,omitempty"`
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
	w, err := s.openWorkspace(ctx, c, rootlock.Read)
	if err != nil {
		return showChangesOut{}, err
	}
	defer w.close()
	out := showChangesOut{Source: in.Source, Files: []changedFile{}}
	var text string
	switch in.Source {
	case "repository":
		var ch *review.Changes
		if w.exec.WorktreeBase != "" {
			// A managed worktree is reviewed against its branch point, so
			// its commits show too. Its metadata may point into the source
			// Project (its .git/worktrees/<name>) and nowhere else.
			source, ok := s.sourceRoot(c, w.exec.ProjectRef)
			if !ok {
				return out, executions.ErrExecutionRequired
			}
			ch, err = s.review.ChangesSince(ctx, w.proj.Path, w.exec.WorktreeBase, source)
		} else {
			ch, err = s.review.Changes(ctx, w.proj.Path)
		}
		if err != nil {
			return out, fmt.Errorf("review: %w", project.Scrub(err))
		}
		out.Revision, out.Head, out.Truncated, text = ch.Revision, ch.Head, ch.Truncated, ch.Diff
		for _, f := range ch.Files {
			out.Files = append(out.Files, changedFile{Path: f.Path, OldPath: f.OldPath, Status: f.Status, Staged: f.Staged,
				Unstaged: f.Unstaged, Added: f.Added, Removed: f.Removed, Binary: f.Binary, Withheld: f.Withheld})
		}
	case "apply_patch_history":
		entries, err := s.opts.Store.Journal(ctx, w.exec.ID)
		if err != nil {
			return out, err
		}
		h := sha256.New()
		var b strings.Builder
		for _, e := range entries {
			fmt.Fprintf(h, "%d\x00", e.Seq)
			b.WriteString(e.Diff)
			var files []changedFile
			if json.Unmarshal([]byte(e.Files), &files) == nil {
				out.Files = append(out.Files, files...)
			}
		}
		out.Revision = "sha256:" + hex.EncodeToString(h.Sum(nil))
		text = b.String()
	}
	if in.Cursor != "" {
		claims, err := s.opts.Bindings.DecodeCursor(w.handle, in.Cursor, "changes")
		if err != nil {
			return out, err
		}
		if claims.Resource != in.Source {
			return out, toolErr("cursor_invalid", "That cursor belongs to the other source.")
		}
		if claims.Revision != out.Revision {
			return out, toolErr("diff_cursor_stale", "The changes moved since that page; start again without a cursor.", "show_changes")
		}
		out.Offset = int(claims.Offset)
		if out.Offset > len(text) {
			return out, toolErr("cursor_invalid", "That cursor is past the end of the changes.")
		}
	}
	page, next, done := review.Page(text, out.Offset, changesPageBytes)
	out.Patch = page
	if !done {
		out.NextCursor, err = s.opts.Bindings.EncodeCursor(w.handle, cursor.Claims{Kind: "changes", Resource: in.Source,
			Revision: out.Revision, Offset: int64(next)})
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// sourceRoot returns the root of the caller's Project ref: for a worktree
// execution, the source Project its worktree belongs to.
func (s *Server) sourceRoot(c *call, ref string) (string, bool) {
	for _, r := range s.opts.Bindings.Projects(c.caller) {
		if r.Ref == ref {
			return r.Path, true
		}
	}
	return "", false
}
