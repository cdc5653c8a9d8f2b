package app

import (
	"context"
	"time"
)

// What the state keeps of the tables that grow with every call a grant
// makes (docs/decisions.md, "What the state keeps"): the server prunes
// them at start and every pruneEvery.
const (
	pruneEvery = 10 * time.Minute
	// auditKeepAge and auditKeepRows bound the audit log: 90 days, and
	// its newest 100,000 events (a password guesser's failures are
	// audited, one at a time under the back-off).
	auditKeepAge  = 90 * 24 * time.Hour
	auditKeepRows = 100_000
	// activityKeepPerThread is what a resumed conversation can read of
	// its Thread's journal: its newest 1,000 entries.
	activityKeepPerThread = 1_000
	// tokensKeepPerGrant bounds a grant's token issuances (one more per
	// refresh): its newest 64.
	tokensKeepPerGrant = 64
	// executionsKeepPerGrant bounds a grant's closed executions (one per
	// conversation it opened, each with its Thread and journal): its
	// newest 200; open ones are never pruned.
	executionsKeepPerGrant = 200
)

// pruneStateLoop prunes the state at once and then every pruneEvery
// until ctx ends.
func (a *App) pruneStateLoop(ctx context.Context) {
	t := time.NewTicker(pruneEvery)
	defer t.Stop()
	for {
		a.pruneState(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pruneState deletes the idempotency records past their TTL, the token
// issuances whose every credential expired and those beyond a grant's
// newest tokensKeepPerGrant, a grant's closed executions beyond its
// newest executionsKeepPerGrant, each Thread's activity beyond its newest
// activityKeepPerThread, and the audit events past auditKeepAge or beyond
// the newest auditKeepRows. A failed step is logged; the next round tries
// again.
func (a *App) pruneState(ctx context.Context) {
	now := a.now()
	for _, step := range []struct {
		table string
		prune func() (int64, error)
	}{
		{"operations", func() (int64, error) { return a.store.PruneOperations(ctx, now) }},
		{"oauth_tokens", func() (int64, error) { return a.store.PruneTokens(ctx, now) }},
		{"oauth_tokens", func() (int64, error) { return a.store.PruneGrantTokens(ctx, tokensKeepPerGrant) }},
		{"executions", func() (int64, error) { return a.store.PruneClosedExecutions(ctx, executionsKeepPerGrant) }},
		{"thread_activity", func() (int64, error) { return a.store.PruneActivity(ctx, activityKeepPerThread) }},
		// Last: a round whose audit step is done is done (the tests wait
		// for it through the audit log).
		{"audit_events", func() (int64, error) { return a.store.PruneAudit(ctx, now.Add(-auditKeepAge), auditKeepRows) }},
	} {
		n, err := step.prune()
		switch {
		case err != nil && ctx.Err() == nil:
			a.log.Warn("pruning the state failed; it is tried again later", "table", step.table, "err", err)
		case n > 0:
			a.log.Info("state pruned", "table", step.table, "rows", n)
		}
	}
}
