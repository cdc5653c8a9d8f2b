package reads

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/devspace-dev/devspace/internal/cursor"
	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/review"
)

// show_changes' sources and page size (docs/design.md §9).
const (
	SourceRepository = "repository"
	SourceHistory    = "apply_patch_history"
	ChangesPageBytes = 32000
)

// ChangedFile is one file in a changes summary. Its JSON form is also the
// one the patch journal stores.
type ChangedFile struct {
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

// Changes is one page of a source's changes: the file summary, the patch
// text from Offset, and a cursor for the next page.
type Changes struct {
	Source     string
	Revision   string
	Head       string
	Files      []ChangedFile
	Patch      string
	Offset     int
	NextCursor string
	Truncated  bool
}

// Changes reviews the Git working tree (SourceRepository: staged,
// unstaged and untracked; a managed worktree against its branch point)
// or this execution's patches (SourceHistory), one page per call.
func (s *Service) Changes(ctx context.Context, h executions.Handle, source, cur string) (*Changes, error) {
	w, err := s.open(ctx, h)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	out := &Changes{Source: source, Files: []ChangedFile{}}
	var text string
	switch source {
	case SourceRepository:
		if text, err = s.repository(ctx, h, out); err != nil {
			return nil, err
		}
	case SourceHistory:
		if text, err = s.history(ctx, h, out); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("changes source %q", source)
	}
	if cur != "" {
		claims, err := s.opts.Cursors.Decode(cur, executions.CursorBinding(h), "changes")
		if err != nil {
			return nil, err
		}
		switch {
		case claims.Resource != source:
			return nil, ErrCursorOtherSource
		case claims.Revision != out.Revision:
			return nil, ErrChangesMoved
		case claims.Offset > int64(len(text)):
			return nil, ErrCursorPastEnd
		}
		out.Offset = int(claims.Offset)
	}
	page, next, done := review.Page(text, out.Offset, ChangesPageBytes)
	out.Patch = page
	if !done {
		out.NextCursor, err = s.opts.Cursors.Encode(executions.CursorBinding(h), cursor.Claims{Kind: "changes", Resource: source,
			Revision: out.Revision, Offset: int64(next)})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// repository fills out from Git and returns the patch text.
func (s *Service) repository(ctx context.Context, h executions.Handle, out *Changes) (string, error) {
	proj, e := h.Project(), h.Execution()
	var ch *review.Changes
	var err error
	if e.WorktreeBase != "" {
		// A managed worktree is reviewed against its branch point, so its
		// commits show too. Its metadata may point into the source
		// Project (its .git/worktrees/<name>) and nowhere else.
		ch, err = s.review.ChangesSince(ctx, proj.Path, e.WorktreeBase, proj.Source)
	} else {
		ch, err = s.review.Changes(ctx, proj.Path)
	}
	if err != nil {
		return "", fmt.Errorf("review: %w", project.Scrub(err))
	}
	out.Revision, out.Head, out.Truncated = ch.Revision, ch.Head, ch.Truncated
	for _, f := range ch.Files {
		out.Files = append(out.Files, ChangedFile{Path: f.Path, OldPath: f.OldPath, Status: f.Status, Staged: f.Staged,
			Unstaged: f.Unstaged, Added: f.Added, Removed: f.Removed, Binary: f.Binary, Withheld: f.Withheld})
	}
	return ch.Diff, nil
}

// history fills out from the execution's patch journal and returns the
// patch text.
func (s *Service) history(ctx context.Context, h executions.Handle, out *Changes) (string, error) {
	entries, err := s.opts.Journal.Journal(ctx, h.ID())
	if err != nil {
		return "", err
	}
	sum := sha256.New()
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(sum, "%d\x00", e.Seq)
		b.WriteString(e.Diff)
		var files []ChangedFile
		if json.Unmarshal([]byte(e.Files), &files) == nil {
			out.Files = append(out.Files, files...)
		}
	}
	out.Revision = "sha256:" + hex.EncodeToString(sum.Sum(nil))
	return b.String(), nil
}
