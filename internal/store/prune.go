package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// The append-only tables (audit events, Thread activity, token
// issuances) grow with every call a grant makes; these bound them
// (docs/decisions.md, "What the state keeps"). The App runs them in the
// background with PruneOperations and PruneTokens.

// PruneAudit deletes the audit events recorded before before, and all but
// the newest keep of the rest, and returns how many it deleted.
func (s *Store) PruneAudit(ctx context.Context, before time.Time, keep int) (int64, error) {
	res := s.db.WithContext(ctx).Exec(`DELETE FROM audit_events WHERE at < ?
		OR id <= (SELECT id FROM audit_events ORDER BY id DESC LIMIT 1 OFFSET ?)`, before.UTC(), keep)
	if res.Error != nil {
		return 0, fmt.Errorf("prune audit events: %w", res.Error)
	}
	return res.RowsAffected, nil
}

// PruneActivity keeps the newest keep entries of each Thread's activity
// and deletes the older ones: a resumed conversation reads what happened
// lately, and a Thread a grant drives for weeks must not grow the state
// without bound. It returns how many it deleted.
func (s *Store) PruneActivity(ctx context.Context, keep int) (int64, error) {
	return s.keepNewest(ctx, "thread_activity", "thread_ref", keep)
}

// PruneGrantTokens keeps the newest keep token issuances of each grant
// and deletes the older ones. Each refresh adds an issuance and the
// rotated ones stay until their refresh token's expiry (30 days): a grant
// refreshing in a loop would grow the table by thousands an hour. What an
// old issuance gave, the replay check of its rotated refresh token, goes
// with it; that token is refused all the same (it is no longer known).
func (s *Store) PruneGrantTokens(ctx context.Context, keep int) (int64, error) {
	return s.keepNewest(ctx, "oauth_tokens", "grant_id", keep)
}

// keepNewest deletes the rows of table beyond the newest keep (by id) of
// each value of column. table and column are the callers' constants, and
// column is indexed: the groups over keep are found by a read of that
// index, then each is cut in a statement of its own, so that no write
// holds the database for a scan of the whole table.
func (s *Store) keepNewest(ctx context.Context, table, column string, keep int) (int64, error) {
	if keep < 1 {
		return 0, fmt.Errorf("prune %s: keep %d, want at least 1", table, keep)
	}
	var over []string
	if err := s.db.WithContext(ctx).Raw(`SELECT `+column+` FROM `+table+` GROUP BY `+column+` HAVING COUNT(*) > ?`, keep).
		Scan(&over).Error; err != nil {
		return 0, fmt.Errorf("prune %s: %w", table, err)
	}
	var n int64
	for _, v := range over {
		res := s.db.WithContext(ctx).Exec(`DELETE FROM `+table+` WHERE `+column+` = ? AND id <
			(SELECT id FROM `+table+` WHERE `+column+` = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`, v, v, keep-1)
		if res.Error != nil {
			return n, fmt.Errorf("prune %s: %w", table, res.Error)
		}
		n += res.RowsAffected
	}
	return n, nil
}

// PruneClosedExecutions keeps each grant's newest keep closed executions
// and deletes the older ones with their bindings, Threads (and so their
// activity), patch journals and delivered instructions: a grant that
// opens session after session would otherwise add rows for ever. Open
// executions are never touched. It returns how many executions it
// deleted.
func (s *Store) PruneClosedExecutions(ctx context.Context, keep int) (int64, error) {
	var n int64
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		old := `SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY grant_id ORDER BY created_at DESC, id DESC) AS n
			FROM executions WHERE closed_at IS NOT NULL) WHERE n > ?`
		for _, table := range []string{"bindings", "threads"} {
			if err := tx.Exec(`DELETE FROM `+table+` WHERE execution_id IN (`+old+`)`, keep).Error; err != nil {
				return fmt.Errorf("%s: %w", table, err)
			}
		}
		res := tx.Exec(`DELETE FROM executions WHERE id IN (`+old+`)`, keep)
		n = res.RowsAffected
		return res.Error
	})
	if err != nil {
		return 0, fmt.Errorf("prune closed executions: %w", err)
	}
	return n, nil
}
