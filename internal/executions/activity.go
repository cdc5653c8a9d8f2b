package executions

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/devspace-dev/devspace/internal/store"
)

// Activity appends checkpoints to Threads and wakes the activity long
// polls waiting on them. The binding Service and whatever else records
// checkpoints (the commands service) share one. It is safe for concurrent
// use.
type Activity struct {
	st     *store.Store
	log    *slog.Logger
	notify notifier
}

// NewActivity returns an Activity writing to st; a nil log discards.
func NewActivity(st *store.Store, log *slog.Logger) *Activity {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Activity{st: st, log: log.With("component", "executions")}
}

// Checkpoint appends a server-observed, already sanitized entry to the
// Thread of an execution (a patch applied, a command finished, progress
// saved). data must never hold command text, output, internal references
// or host paths. Failures are logged, not returned: a checkpoint never
// fails the tool call that produced it.
func (a *Activity) Checkpoint(ctx context.Context, executionID, kind string, data map[string]any) {
	t, err := a.st.ThreadOfExecution(ctx, executionID)
	if err != nil {
		a.log.WarnContext(ctx, "checkpoint without thread", "kind", kind, "err", err)
		return
	}
	b, _ := json.Marshal(data)
	if _, err := a.st.AppendActivity(ctx, t.Ref, kind, string(b)); err != nil {
		a.log.ErrorContext(ctx, "append checkpoint", "kind", kind, "err", err)
		return
	}
	a.notify.wake(t.Ref)
}

// notifier wakes activity long polls.
type notifier struct {
	mu sync.Mutex
	ch map[string]chan struct{}
}

func (n *notifier) wait(ref string) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = map[string]chan struct{}{}
	}
	c, ok := n.ch[ref]
	if !ok {
		c = make(chan struct{})
		n.ch[ref] = c
	}
	return c
}

func (n *notifier) wake(ref string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c, ok := n.ch[ref]; ok {
		close(c)
		delete(n.ch, ref)
	}
}
