package executions

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/devspace-dev/devspace/internal/fault"
	"github.com/devspace-dev/devspace/internal/ids"
	"github.com/devspace-dev/devspace/internal/store"
	"github.com/devspace-dev/devspace/internal/worktree"
)

// Thread errors owned by this package; each says its code.
var (
	// ErrThreadNotFound: no such Thread for this grant and Actor (another
	// grant's or Actor's Thread gets exactly the same answer).
	ErrThreadNotFound = fault.New("project_thread_not_found", "thread not found")
	// ErrThreadRevision: ifMatch does not match the Thread's revision.
	ErrThreadRevision = fault.New("thread_revision_conflict", "thread revision conflict")
	// ErrProcessesRunning: close refused while the execution's commands run.
	ErrProcessesRunning = fault.New("project_busy", "processes running")
)

// MaxActivityWait bounds activity long polls.
const MaxActivityWait = 20 * time.Second

// ThreadView is a Thread as the app sees it (no internal IDs).
type ThreadView struct {
	ThreadRef  string `json:"threadRef"`
	ProjectRef string `json:"projectRef"`
	Label      string `json:"projectLabel"`
	Status     string `json:"status"`
	Revision   int64  `json:"revision"`
	UpdatedAt  string `json:"updatedAt"`
}

// ActivityView is one sanitized journal entry.
type ActivityView struct {
	Seq  int64          `json:"seq"`
	Kind string         `json:"kind"`
	Data map[string]any `json:"data,omitempty"`
	At   string         `json:"at"`
}

func (s *Service) createThread(ctx context.Context, e *store.Execution, data map[string]any) error {
	b, _ := json.Marshal(data)
	t := &store.Thread{Ref: ids.New("thr_", 12), ExecutionID: e.ID, GrantID: e.GrantID, ActorRef: e.ActorRef, ProjectRef: e.ProjectRef}
	return s.opts.Store.CreateThread(ctx, t, "opened", string(b))
}

// Checkpoint records a sanitized entry on an execution's Thread
// (Activity.Checkpoint).
func (s *Service) Checkpoint(ctx context.Context, executionID, kind string, data map[string]any) {
	s.activity.Checkpoint(ctx, executionID, kind, data)
}

func (s *Service) view(t *store.Thread) ThreadView {
	label := ""
	if r, ok := s.opts.Catalog.Lookup(t.ProjectRef); ok {
		label = r.Label
	}
	return ThreadView{ThreadRef: t.Ref, ProjectRef: t.ProjectRef, Label: label, Status: t.Status, Revision: t.Revision,
		UpdatedAt: t.UpdatedAt.UTC().Format(time.RFC3339)}
}

// Threads lists the caller's Threads (this grant, this Actor), newest
// first. list_projects asks on every call (the widget), so the rows are
// remembered until the next write.
func (s *Service) Threads(ctx context.Context, c Caller) ([]ThreadView, error) {
	ts, err := s.threads.Get(s.opts.Store, [2]string{c.GrantID, c.ActorRef}, func() ([]*store.Thread, error) {
		return s.opts.Store.Threads(ctx, c.GrantID, c.ActorRef, 50)
	})
	if err != nil {
		return nil, err
	}
	out := make([]ThreadView, 0, len(ts))
	for _, t := range ts {
		out = append(out, s.view(t))
	}
	return out, nil
}

func (s *Service) thread(ctx context.Context, c Caller, ref string) (*store.Thread, error) {
	t, err := s.opts.Store.ThreadFor(ctx, ref, c.GrantID, c.ActorRef)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrThreadNotFound
	}
	return t, err
}

// ThreadStatus returns one of the caller's Threads.
func (s *Service) ThreadStatus(ctx context.Context, c Caller, ref string) (*ThreadView, error) {
	t, err := s.thread(ctx, c, ref)
	if err != nil {
		return nil, err
	}
	v := s.view(t)
	return &v, nil
}

// Activity returns entries after since; with wait > 0 it long-polls (at
// most MaxActivityWait) until something new arrives.
func (s *Service) Activity(ctx context.Context, c Caller, ref string, since int64, wait time.Duration) ([]ActivityView, error) {
	if _, err := s.thread(ctx, c, ref); err != nil {
		return nil, err
	}
	wait = min(wait, MaxActivityWait)
	deadline := time.Now().Add(wait)
	for {
		woken := s.activity.notify.wait(ref)
		acts, err := s.opts.Store.ActivitySince(ctx, ref, since, 100)
		if err != nil {
			return nil, err
		}
		if len(acts) > 0 || wait <= 0 || !time.Now().Before(deadline) {
			out := make([]ActivityView, 0, len(acts))
			for _, a := range acts {
				v := ActivityView{Seq: a.Seq, Kind: a.Kind, At: a.At.UTC().Format(time.RFC3339)}
				_ = json.Unmarshal([]byte(a.Data), &v.Data)
				out = append(out, v)
			}
			return out, nil
		}
		timer := time.NewTimer(time.Until(deadline))
		select {
		case <-woken:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		}
		timer.Stop()
	}
}

// The statuses SetThreadStatus sets.
const (
	ThreadArchived  = store.ThreadArchived
	ThreadCompleted = store.ThreadCompleted
	ThreadClosed    = store.ThreadClosed
)

// SetThreadStatus archives, completes or closes one of the caller's
// Threads if ifMatch is its current revision. Close refuses while the
// execution's commands run, and closes the execution. None of these touch
// a shared saved Task.
func (s *Service) SetThreadStatus(ctx context.Context, c Caller, ref, status string, ifMatch int64) (*ThreadView, error) {
	t, err := s.thread(ctx, c, ref)
	if err != nil {
		return nil, err
	}
	if t.Revision != ifMatch {
		return nil, ErrThreadRevision
	}
	if status == store.ThreadClosed {
		if s.opts.Resources.Running(t.ExecutionID) > 0 {
			return nil, ErrProcessesRunning
		}
		if err := s.removeWorktree(ctx, t.ExecutionID); err != nil {
			return nil, err
		}
		closing := []string{t.ExecutionID}
		s.closeInMemory(closing)
		s.opts.Resources.CloseExecutions(ctx, closing, "thread_closed")
		if err := s.opts.Store.CloseExecution(ctx, t.ExecutionID, "thread_closed"); err != nil {
			return nil, err
		}
		s.reg.recorded(closing)
	}
	updated, err := s.opts.Store.SetThreadStatus(ctx, ref, ifMatch, status)
	if errors.Is(err, store.ErrThreadRevision) {
		return nil, ErrThreadRevision
	}
	if err != nil {
		return nil, err
	}
	s.activity.notify.wake(ref)
	v := s.view(updated)
	return &v, nil
}

// removeWorktree removes the clean managed worktree (and its branch) of a
// worktree execution whose Thread is being closed; a dirty one refuses the
// close. This is the only place a worktree is ever deleted.
func (s *Service) removeWorktree(ctx context.Context, executionID string) error {
	e, err := s.opts.Store.ExecutionByID(ctx, executionID)
	if err != nil || e.WorktreePath == "" || s.opts.Worktrees == nil {
		return err
	}
	root, ok := s.opts.Catalog.Lookup(e.ProjectRef)
	if !ok {
		return nil // Project no longer configured: keep the files
	}
	wt, err := s.opts.Worktrees.Get(ctx, root.Path, e.ID)
	if errors.Is(err, worktree.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := s.opts.Worktrees.Remove(ctx, root.Path, wt); err != nil {
		if errors.Is(err, worktree.ErrDirty) {
			return ErrWorktreeDirty
		}
		return err
	}
	return nil
}
