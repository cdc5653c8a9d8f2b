// Package reads is the read tools' service: read_files, inspect, skills
// and show_changes. Each call takes the caller's execution handle, holds
// its Project's Read lock (shared with other reads, excluded by a
// patch), checks the handle once after the lock, and answers plain
// values the edge renders. Skills a conversation loaded are kept per
// execution and forgotten when it closes.
package reads

import (
	"context"
	"os"
	"time"

	"github.com/devspace-dev/devspace/internal/cursor"
	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/fault"
	"github.com/devspace-dev/devspace/internal/files"
	"github.com/devspace-dev/devspace/internal/gitrepo"
	"github.com/devspace-dev/devspace/internal/metrics"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/review"
	"github.com/devspace-dev/devspace/internal/rootlock"
	"github.com/devspace-dev/devspace/internal/search"
	"github.com/devspace-dev/devspace/internal/skills"
	"github.com/devspace-dev/devspace/internal/store"
)

// The most files one read_files reads and operations one inspect runs:
// the published schema's maxItems, the same bounds the readers apply.
const (
	MaxFiles      = files.DefaultMaxItems
	MaxOperations = search.DefaultMaxOps
)

// The types a read answers with, as the domain packages define them.
type (
	FileRequest = files.Request
	FileItem    = files.Item
	Op          = search.Op
	OpResult    = search.Result
	Skill       = skills.Skill
	LoadedSkill = skills.Loaded
	DeltaFile   = executions.DeltaFile
)

// InputError is a request a read refuses: inspect operations the
// searcher refuses, a skills query the catalog refuses. Its text says
// which and why, and names no host path.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Code is invalid_tool_input; the text is what the client is told.
func (e *InputError) Code() string { return "invalid_tool_input" }

// Errors of the read tools, each with its code.
var (
	// ErrSkillNotFound: no loadable skill with that ID.
	ErrSkillNotFound = fault.New("skill_not_found", "skill not found")
	// ErrCursorOtherQuery, ErrCursorOtherSource, ErrCursorPastEnd: a valid
	// cursor of another query, of the other show_changes source, or past
	// the end of the changes.
	ErrCursorOtherQuery  = fault.New("cursor_invalid", "cursor of another query")
	ErrCursorOtherSource = fault.New("cursor_invalid", "cursor of the other source")
	ErrCursorPastEnd     = fault.New("cursor_invalid", "cursor past the end")
	// ErrChangesMoved: the changes moved since the cursor's page.
	ErrChangesMoved = fault.New("diff_cursor_stale", "changes moved since the cursor")
)

// Locks serializes the tools that use one Project (rootlock.Locks).
type Locks interface {
	AcquireRoot(ctx context.Context, dir string, mode rootlock.Mode, timeout time.Duration) (*rootlock.Held, error)
}

// Instructions delivers the nested instruction files that apply to paths
// and the execution has not seen yet (executions.Service).
type Instructions interface {
	InstructionsDelta(ctx context.Context, e *store.Execution, r *os.Root, paths []string) ([]executions.DeltaFile, error)
}

// Journal is the per-execution patch journal (store.Store).
type Journal interface {
	Journal(ctx context.Context, executionID string) ([]store.JournalEntry, error)
}

// Closes tells the service when executions close (executions.Service).
type Closes interface {
	AfterClose(func(executionIDs []string))
}

var (
	_ Locks        = (*rootlock.Locks)(nil)
	_ Instructions = (*executions.Service)(nil)
	_ Journal      = (*store.Store)(nil)
	_ Closes       = (*executions.Service)(nil)
)

// Options configure a Service. Fields are required unless noted.
type Options struct {
	Locks        Locks
	Instructions Instructions
	Journal      Journal
	Closes       Closes
	Cursors      *cursor.Codec
	Skills       *skills.Catalog
	// GitConfine confines the Git show_changes runs; nil runs it
	// unconfined.
	GitConfine gitrepo.Confiner
	// Metrics counts path denials; nil counts nothing.
	Metrics *metrics.Metrics
}

// Service is safe for concurrent use.
type Service struct {
	opts   Options
	files  *files.Reader
	search *search.Searcher
	review *review.Reviewer
	loaded loadedSkills
}

// New builds a Service.
func New(opts Options) *Service {
	s := &Service{opts: opts, files: files.NewReader(files.DefaultLimits()), search: search.New(search.DefaultLimits()),
		review: review.New(review.Options{Withhold: project.IsSensitive, Confine: opts.GitConfine})}
	if opts.Closes != nil {
		opts.Closes.AfterClose(s.loaded.forget)
	}
	return s
}

// workspace is a handle with its Project's Read lock held and its root
// open.
type workspace struct {
	*rootlock.Held // Root: the Project root
	h              executions.Handle
}

// open takes h's Read lock and checks h once after it.
func (s *Service) open(ctx context.Context, h executions.Handle) (*workspace, error) {
	held, err := s.opts.Locks.AcquireRoot(ctx, h.Project().Path, rootlock.Read, rootlock.DefaultWait)
	if err != nil {
		return nil, err
	}
	if err := h.Err(); err != nil {
		held.Close()
		return nil, err
	}
	return &workspace{Held: held, h: h}, nil
}

func (s *Service) denied(reason string) {
	if s.opts.Metrics != nil {
		s.opts.Metrics.PathDenials.WithLabelValues(reason).Inc()
	}
}
