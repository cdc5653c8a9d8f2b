// Package executions owns executions (logical contexts on one Project) and the
// bindings that tie a host session+Actor under one grant to its current
// execution. Every Project tool resolves its execution here, and the full
// re-check (grant, client, epochs, scopes, Project still approved, root
// unchanged) runs on every resolution: it fails closed, never picking an
// execution by recency or by being the only candidate.
package executions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"

	"github.com/devspace-dev/devspace/internal/cursor"
	"github.com/devspace-dev/devspace/internal/fault"
	"github.com/devspace-dev/devspace/internal/gitrepo"
	"github.com/devspace-dev/devspace/internal/idempotency"
	"github.com/devspace-dev/devspace/internal/ids"
	"github.com/devspace-dev/devspace/internal/instructions"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/store"
	"github.com/devspace-dev/devspace/internal/worktree"
)

// Errors owned by this package; each says its code (docs/errors.md),
// which the edge looks up.
var (
	// ErrExecutionRequired: no binding, or the bound execution is stale.
	ErrExecutionRequired = fault.New("project_execution_required", "project execution required")
	// ErrProjectNotAuthorized: the projectRef is unknown or not approved for
	// the grant (the two are indistinguishable on purpose).
	ErrProjectNotAuthorized = fault.New("project_not_authorized", "project not authorized")
	// ErrProjectRefRequired: open without projectRef when the grant has
	// several Projects.
	ErrProjectRefRequired = fault.New("project_ref_required", "projectRef required")
	// ErrInstructionsRequired: root instruction pages remain undelivered.
	ErrInstructionsRequired = fault.New("root_instructions_required", "root instructions required")
	// ErrProjectUnavailable: the root cannot be read right now.
	ErrProjectUnavailable = fault.New("project_unavailable", "project unavailable")
	// ErrTaskNotFound: resume of a saved Task that does not exist.
	ErrTaskNotFound = fault.New("project_task_not_found", "task not found")
	// ErrWriteScopeRequired: a worktree open by a grant without project:write.
	ErrWriteScopeRequired = fault.New("project_write_scope_required", "project:write required")
	// ErrWorktreeUnavailable: the Project cannot host managed worktrees
	// (not exactly a git top level, no commits, unsafe filters) or they
	// are not configured.
	ErrWorktreeUnavailable = fault.New("project_worktree_unavailable", "worktree unavailable")
	// ErrWorktreeDirty: closing a worktree Thread whose worktree has
	// uncommitted changes.
	ErrWorktreeDirty = fault.New("project_worktree_dirty", "worktree dirty")
)

// ValidateOperationID is the operationId rule (idempotency.ValidateID),
// for the actions that record none (hydrate, interrupt) and so meet it
// nowhere else.
func ValidateOperationID(id string) error { return idempotency.ValidateID(id) }

// Caller is who makes a call: the verified grant plus the host identity.
type Caller struct {
	GrantID     string
	ClientID    string
	Scopes      []string
	ProjectIDs  []string
	GrantEpoch  int64
	GlobalEpoch int64
	SessionRef  string // HMAC of the host session (or MCP session ID)
	ActorRef    string // HMAC of subject+organization (or the client ID)
}

// Options configure a Service.
type Options struct {
	Store      *store.Store
	Catalog    *project.Catalog
	Operations *idempotency.Service
	Cursors    *cursor.Codec
	FingerKey  []byte // key for root fingerprints
	Fallbacks  []string
	Logger     *slog.Logger
	// Resources are what executions own besides their records (the
	// commands service); required. Closing an execution closes them.
	Resources Resources
	// Activity records Thread checkpoints and wakes their long polls; nil
	// means a private one. Share one with whatever else checkpoints.
	Activity  *Activity
	PageBytes int // instruction page size; zero means the package default
	// Worktrees manages checkoutKind "worktree" executions; nil disables
	// them.
	Worktrees *worktree.Manager
}

// Resources are what executions own outside the store: their commands,
// the commands' retained output and the executions' undo snapshots. The
// commands service implements it.
type Resources interface {
	// CloseExecutions releases everything the closed executions own
	// (kills their commands' trees with reason, retires their output,
	// deletes their undo snapshots), logging failures.
	CloseExecutions(ctx context.Context, executionIDs []string, reason string)
	// Interrupt interrupts an execution's running commands and returns
	// how many it reached.
	Interrupt(ctx context.Context, executionID string) (int, error)
	// Running counts an execution's commands whose tree is alive.
	Running(executionID string) int
}

// Service is safe for concurrent use.
type Service struct {
	opts     Options
	log      *slog.Logger
	queue    *fifo
	activity *Activity
	threads  *store.Memo[[2]string, []*store.Thread] // Threads by grant and Actor
	// reg closes executions in memory first (handles, tombstones).
	reg        *registry
	afterClose []func(executionIDs []string) // AfterClose
}

// New builds a Service.
func New(opts Options) *Service {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	activity := opts.Activity
	if activity == nil {
		activity = NewActivity(opts.Store, log)
	}
	return &Service{opts: opts, log: log.With("component", "executions"), queue: newFIFO(), activity: activity,
		threads: store.NewMemo[[2]string, []*store.Thread](256), reg: newRegistry()}
}

// Lock serializes open/resume/hydrate/interrupt for one session+Actor in
// arrival order. Call the returned function when done.
func (s *Service) Lock(ctx context.Context, c Caller) (func(), error) {
	return s.queue.acquire(ctx, c.GrantID+"\x00"+c.SessionRef+"\x00"+c.ActorRef)
}

// Projects returns the grant's Projects still in the configuration, in
// configuration order.
func (s *Service) Projects(c Caller) []project.Root {
	var out []project.Root
	for _, r := range s.opts.Catalog.Roots() {
		if slices.Contains(c.ProjectIDs, r.Ref) {
			out = append(out, r)
		}
	}
	return out
}

// Instructions is one delivered page of root instructions.
type Instructions struct {
	Revision   string              `json:"revision"`
	Page       int                 `json:"page"`
	PageCount  int                 `json:"pageCount"`
	Content    string              `json:"content"`
	Files      []InstructionSource `json:"files"`
	NextCursor string              `json:"nextCursor,omitempty"`
}

// InstructionSource names a file that contributed instructions.
type InstructionSource struct {
	Path  string `json:"path"`
	Trust string `json:"trust"`
}

// Opened is the result of open, hydrate or resume.
type Opened struct {
	ProjectRef   string        `json:"projectRef"`
	Label        string        `json:"label"`
	Status       string        `json:"status"` // "open"
	Instructions *Instructions `json:"instructions,omitempty"`
	executionID  string
}

// ExecutionID is the internal ID (never shown to the model).
func (o *Opened) ExecutionID() string { return o.executionID }

type storedOpen struct {
	Opened
	ExecutionID string `json:"executionId"`
}

// Open creates a new execution on projectRef (or the grant's only
// Project) and binds the caller to it. An identical retry of the same
// operationId replays the same execution; a different request under that
// operationId is idempotency.ErrConflict.
func (s *Service) Open(ctx context.Context, c Caller, projectRef, operationID string, worktreeMode bool) (*Opened, bool, error) {
	root, err := s.pickProject(c, projectRef)
	if err != nil {
		return nil, false, idempotency.NotStarted(err)
	}
	if worktreeMode {
		if !slices.Contains(c.Scopes, "project:write") {
			return nil, false, idempotency.NotStarted(ErrWriteScopeRequired)
		}
		if s.opts.Worktrees == nil {
			return nil, false, idempotency.NotStarted(ErrWorktreeUnavailable)
		}
		if err := s.opts.Worktrees.Eligible(ctx, root.Path); err != nil {
			return nil, false, idempotency.NotStarted(worktreeUnavailable(err))
		}
	}
	hash, err := idempotency.HashRequest(map[string]any{"projectRef": projectRef, "session": c.SessionRef, "actor": c.ActorRef, "worktree": worktreeMode})
	if err != nil {
		return nil, false, idempotency.NotStarted(err)
	}
	key := idempotency.Key{GrantID: c.GrantID, Tool: "project_control.open", OperationID: operationID}
	raw, replayed, err := s.opts.Operations.Do(ctx, key, hash, func(ctx context.Context) ([]byte, error) {
		res, err := s.createExecution(ctx, c, root, worktreeMode)
		if err != nil {
			return nil, idempotency.NotStarted(err)
		}
		return json.Marshal(res)
	})
	if err != nil {
		return nil, false, err
	}
	var st storedOpen
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, false, fmt.Errorf("decode stored open: %w", err)
	}
	if replayed {
		// The same session+Actor retried: make sure it is (still) bound there.
		if err := s.opts.Store.Bind(ctx, c.GrantID, c.SessionRef, c.ActorRef, st.ExecutionID); err != nil {
			return nil, false, err
		}
	}
	st.Opened.executionID = st.ExecutionID
	return &st.Opened, replayed, nil
}

// worktreeUnavailable is err, why the Project cannot host a managed
// worktree, as ErrWorktreeUnavailable; a repository whose metadata is
// unsafe keeps its own code (repository_unsafe), which tells the client
// more.
func worktreeUnavailable(err error) error {
	if errors.Is(err, gitrepo.ErrRepositoryUnsafe) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrWorktreeUnavailable, err)
}

func (s *Service) pickProject(c Caller, ref string) (project.Root, error) {
	if ref == "" {
		roots := s.Projects(c)
		if len(roots) != 1 {
			return project.Root{}, ErrProjectRefRequired
		}
		return roots[0], nil
	}
	root, ok := s.opts.Catalog.Lookup(ref)
	if !ok || !slices.Contains(c.ProjectIDs, ref) {
		return project.Root{}, ErrProjectNotAuthorized
	}
	return root, nil
}

func (s *Service) createExecution(ctx context.Context, c Caller, root project.Root, worktreeMode bool) (*storedOpen, error) {
	fp, err := root.Fingerprint(s.opts.FingerKey)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProjectUnavailable, err)
	}
	id := ids.New("exe_", 16)
	var wt *worktree.Worktree
	if worktreeMode {
		// The worktree is keyed by the execution, so an identical retry of
		// the open (replayed by its operationId) never makes a second one.
		if wt, err = s.opts.Worktrees.Create(ctx, root.Path, id); err != nil {
			return nil, worktreeUnavailable(err)
		}
		root.Path = wt.Path
	}
	set, err := s.rootInstructions(ctx, root)
	if err != nil {
		return nil, err
	}
	e := &store.Execution{ID: id, GrantID: c.GrantID, ClientID: c.ClientID, ProjectRef: root.Ref,
		RootFingerprint: fp, GrantEpoch: c.GrantEpoch, GlobalEpoch: c.GlobalEpoch, Scopes: c.Scopes,
		SessionRef: c.SessionRef, ActorRef: c.ActorRef, InstructionsRevision: set.Revision,
		InstructionsPending: len(set.Pages) > 1}
	if wt != nil {
		e.WorktreePath, e.WorktreeBase = wt.Path, wt.BaseCommit
	}
	if err := s.opts.Store.CreateExecution(ctx, e); err != nil {
		return nil, err
	}
	if err := s.createThread(ctx, e, map[string]any{"projectLabel": root.Label}); err != nil {
		return nil, err
	}
	res := &storedOpen{Opened: Opened{ProjectRef: root.Ref, Label: root.Label, Status: "open"}, ExecutionID: e.ID}
	res.Instructions, err = s.page(c, e, set, 0)
	return res, err
}

func (s *Service) rootInstructions(ctx context.Context, root project.Root) (*instructions.Set, error) {
	r, err := os.OpenRoot(root.Path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProjectUnavailable, err)
	}
	defer r.Close()
	finder, err := instructions.New(r, instructions.Options{Fallbacks: s.opts.Fallbacks, PageBytes: s.opts.PageBytes})
	if err != nil {
		return nil, fmt.Errorf("read instructions: %w", err)
	}
	set, err := finder.Root(ctx)
	if err != nil {
		return nil, fmt.Errorf("read instructions: %w", err)
	}
	return set, nil
}

// page renders instruction page i of set, with a cursor for the next one.
func (s *Service) page(c Caller, e *store.Execution, set *instructions.Set, i int) (*Instructions, error) {
	if len(set.Pages) == 0 {
		return nil, nil
	}
	in := &Instructions{Revision: set.Revision, Page: i + 1, PageCount: len(set.Pages), Content: set.Pages[i]}
	for _, f := range set.Files {
		in.Files = append(in.Files, InstructionSource{Path: f.Path, Trust: string(f.Trust)})
	}
	if i+1 < len(set.Pages) {
		cur, err := s.opts.Cursors.Encode(s.cursorBinding(c, e),
			cursor.Claims{Kind: "instructions", Resource: e.ProjectRef, Revision: set.Revision, Offset: int64(i + 1)})
		if err != nil {
			return nil, err
		}
		in.NextCursor = cur
	}
	return in, nil
}

func (s *Service) cursorBinding(c Caller, e *store.Execution) cursor.Binding {
	return cursor.Binding{GrantID: c.GrantID, Epoch: c.GlobalEpoch<<32 | c.GrantEpoch, ExecutionID: e.ID, SessionRef: c.SessionRef}
}

// Hydrate re-attaches the caller to its bound execution (after a reconnect
// or a restart) and returns its root instructions: the first page, or the
// page a cursor names. Delivering the last page clears the
// root_instructions_required gate.
func (s *Service) Hydrate(ctx context.Context, c Caller, cur string) (*Opened, error) {
	e, root, err := s.resolve(ctx, c)
	if err != nil {
		return nil, err
	}
	set, err := s.rootInstructions(ctx, root)
	if err != nil {
		return nil, err
	}
	idx := 0
	if cur != "" {
		claims, err := s.opts.Cursors.Decode(cur, s.cursorBinding(c, e), "instructions")
		if err != nil {
			return nil, err
		}
		if claims.Revision != set.Revision || claims.Offset < 0 || claims.Offset >= int64(len(set.Pages)) {
			return nil, cursor.ErrExpired // the instructions changed; start again
		}
		idx = int(claims.Offset)
	}
	if set.Revision != e.InstructionsRevision {
		// Instructions changed since open: deliver from the start again.
		idx = 0
	}
	in, err := s.page(c, e, set, idx)
	if err != nil {
		return nil, err
	}
	if idx+1 >= len(set.Pages) && e.InstructionsPending && set.Revision == e.InstructionsRevision {
		if err := s.opts.Store.SetInstructionsDelivered(ctx, e.ID, set.Revision); err != nil {
			return nil, err
		}
	}
	return &Opened{ProjectRef: root.Ref, Label: root.Label, Status: "open", Instructions: in, executionID: e.ID}, nil
}

// Resolve hands out the caller's bound execution after the full
// re-check, for Project tools; release the handle when the call ends. It
// refuses with ErrInstructionsRequired while root instruction pages are
// undelivered, and with ErrExecutionRequired once the execution closed
// (also in memory only, before the store records it).
func (s *Service) Resolve(ctx context.Context, c Caller) (Handle, error) {
	e, root, err := s.resolve(ctx, c)
	if err != nil {
		return nil, err
	}
	if e.InstructionsPending {
		return nil, ErrInstructionsRequired
	}
	l, ok := s.reg.acquire(e.ID)
	if !ok {
		return nil, ErrExecutionRequired
	}
	return &handle{exec: e, caller: c, proj: root, live: l}, nil
}

func (s *Service) resolve(ctx context.Context, c Caller) (*store.Execution, project.Root, error) {
	e, err := s.opts.Store.BoundExecution(ctx, c.GrantID, c.SessionRef, c.ActorRef)
	if errors.Is(err, store.ErrNotFound) {
		return nil, project.Root{}, ErrExecutionRequired
	}
	if err != nil {
		return nil, project.Root{}, err
	}
	if reason := s.stale(c, e); reason != "" {
		s.log.DebugContext(ctx, "stale binding", "reason", reason)
		return nil, project.Root{}, ErrExecutionRequired
	}
	root, _ := s.opts.Catalog.Lookup(e.ProjectRef)
	fp, err := root.Fingerprint(s.opts.FingerKey)
	if err != nil || fp != e.RootFingerprint {
		s.log.DebugContext(ctx, "stale binding", "reason", "root_changed")
		return nil, project.Root{}, ErrExecutionRequired
	}
	if e.WorktreePath != "" {
		// Authorization stays anchored to the source Project (checked
		// above); the tools work in the managed worktree.
		if fi, err := os.Stat(e.WorktreePath); err != nil || !fi.IsDir() {
			return nil, project.Root{}, ErrProjectUnavailable
		}
		root.Source, root.Path = root.Path, e.WorktreePath
	}
	return e, root, nil
}

// stale names why an execution no longer serves the caller, or "".
func (s *Service) stale(c Caller, e *store.Execution) string {
	switch {
	case e.ClosedAt != nil, s.reg.isClosed(e.ID):
		return "closed"
	case e.GrantID != c.GrantID, e.ClientID != c.ClientID:
		return "grant"
	case e.SessionRef != c.SessionRef, e.ActorRef != c.ActorRef:
		return "identity"
	case e.GrantEpoch != c.GrantEpoch, e.GlobalEpoch != c.GlobalEpoch:
		return "epoch"
	case !slices.Equal(e.Scopes, c.Scopes):
		return "scopes"
	case !slices.Contains(c.ProjectIDs, e.ProjectRef):
		return "project_not_granted"
	}
	if _, ok := s.opts.Catalog.Lookup(e.ProjectRef); !ok {
		return "project_removed"
	}
	return ""
}

// CloseGrants closes what every open execution of the grants owns
// (Resources.CloseExecutions: their commands are killed, their scratch
// removed, their output retired, their undo snapshots deleted), then
// records the executions closed. Revocation comes first in memory, so
// this order holds on a full disk: killing the commands and removing
// their scratch needs no write, and may be what frees the space the
// record then takes.
func (s *Service) CloseGrants(ctx context.Context, grantIDs []string, reason string) error {
	ids, err := s.opts.Store.OpenExecutionsOf(ctx, grantIDs)
	if err != nil {
		return err
	}
	s.closeInMemory(ids)
	if len(ids) > 0 {
		s.opts.Resources.CloseExecutions(ctx, ids, reason)
	}
	closed, err := s.opts.Store.CloseExecutions(ctx, grantIDs, reason)
	if err == nil {
		s.reg.recorded(ids)
	}
	// An execution opened by a call already past verification when the
	// grant was revoked: close what it owns too.
	var late []string
	for _, id := range closed {
		if !slices.Contains(ids, id) {
			late = append(late, id)
		}
	}
	if len(late) > 0 {
		s.closeInMemory(late)
		s.opts.Resources.CloseExecutions(ctx, late, reason)
		s.reg.recorded(late)
	}
	return err
}

// CloseRemovedProjects closes executions on Projects that left the
// configuration (run at startup).
func (s *Service) CloseRemovedProjects(ctx context.Context) error {
	var keep []string
	for _, r := range s.opts.Catalog.Roots() {
		keep = append(keep, r.Ref)
	}
	ids, err := s.opts.Store.CloseExecutionsOfProjects(ctx, keep, "project_removed")
	if err != nil {
		return err
	}
	if len(ids) > 0 {
		s.closeInMemory(ids)
		s.opts.Resources.CloseExecutions(ctx, ids, "project_removed")
		s.reg.recorded(ids)
	}
	return nil
}

// Interrupt sends an interrupt to the running commands of the caller's
// bound execution (Resources.Interrupt) and reports how many it reached.
func (s *Service) Interrupt(ctx context.Context, c Caller) (int, error) {
	e, _, err := s.resolve(ctx, c)
	if err != nil {
		return 0, err
	}
	return s.opts.Resources.Interrupt(ctx, e.ID)
}

// EncodeCursor signs a continuation cursor bound to the caller's grant,
// epochs, session and execution.
func (s *Service) EncodeCursor(h Handle, claims cursor.Claims) (string, error) {
	return s.opts.Cursors.Encode(CursorBinding(h), claims)
}

// DecodeCursor verifies a cursor for the caller's execution and kind.
func (s *Service) DecodeCursor(h Handle, cur, kind string) (cursor.Claims, error) {
	return s.opts.Cursors.Decode(cur, CursorBinding(h), kind)
}

// CursorBinding is what a continuation cursor of h's execution is signed
// for (its grant, epochs, session and execution).
func CursorBinding(h Handle) cursor.Binding {
	c := h.Caller()
	return cursor.Binding{GrantID: c.GrantID, Epoch: c.GlobalEpoch<<32 | c.GrantEpoch, ExecutionID: h.ID(), SessionRef: c.SessionRef}
}
