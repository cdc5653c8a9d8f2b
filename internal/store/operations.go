package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits on idempotency records (docs/design.md §7 "operationId", §9).
const (
	// MaxOperationIDBytes bounds an operationId in bytes.
	MaxOperationIDBytes = 128
	// MaxOperationResultBytes bounds a stored operation result (2 MiB).
	MaxOperationResultBytes = 2 << 20
)

// Errors returned by the operation methods. The store owns them; the
// operation package turns them into its own contract.
var (
	// ErrInvalidOperationKey is returned when a key has an empty grant ID or
	// tool, or an operation ID that is empty, longer than
	// MaxOperationIDBytes, not well-formed UTF-8 or contains NUL. The
	// operation ID is re-checked here even though the MCP edge already
	// validated it: every store checks it again.
	ErrInvalidOperationKey = errors.New("invalid operation key")
	// ErrOperationResultTooLarge is returned by CompleteOperation for a
	// result longer than MaxOperationResultBytes; the row is left unchanged.
	ErrOperationResultTooLarge = errors.New("operation result too large")
	// ErrOperationState is returned when a transition needs a pending row
	// and the row exists in another state.
	ErrOperationState = errors.New("operation is not pending")
)

// OperationState is the lifecycle of an idempotency record.
type OperationState string

// Operation states. A row starts pending and moves once, to committed or
// unknown, unless it is released (deleted) while still pending.
const (
	// OperationPending: reserved; the effect may be running, or a crash left
	// its outcome unknown.
	OperationPending OperationState = "pending"
	// OperationCommitted: the effect completed and Result holds its result.
	OperationCommitted OperationState = "committed"
	// OperationUnknown: the effect failed part way; it is never re-run.
	OperationUnknown OperationState = "unknown"
)

// OperationKey identifies an idempotency record. ExecutionID is "" for
// operations that create an execution. OperationID is compared as exact
// bytes: it is stored as a BLOB and never trimmed or normalized.
type OperationKey struct {
	GrantID     string
	ExecutionID string
	Tool        string
	OperationID string
}

// Operation is one idempotency record.
type Operation struct {
	Key         OperationKey
	RequestHash string
	State       OperationState
	Result      []byte // set when State is committed; may be empty
	CreatedAt   time.Time
	CompletedAt *time.Time // when the row became committed or unknown
	ExpiresAt   time.Time
}

type operationRow struct {
	GrantID     string `gorm:"primaryKey"`
	ExecutionID string `gorm:"primaryKey"`
	Tool        string `gorm:"primaryKey"`
	OperationID []byte `gorm:"primaryKey"`
	RequestHash string
	State       string
	Result      []byte
	CreatedAt   time.Time
	CompletedAt *time.Time
	ExpiresAt   time.Time
}

func (operationRow) TableName() string { return "operations" }

func (r operationRow) toOperation() *Operation {
	return &Operation{
		Key:         OperationKey{GrantID: r.GrantID, ExecutionID: r.ExecutionID, Tool: r.Tool, OperationID: string(r.OperationID)},
		RequestHash: r.RequestHash, State: OperationState(r.State), Result: r.Result,
		CreatedAt: r.CreatedAt, CompletedAt: r.CompletedAt, ExpiresAt: r.ExpiresAt,
	}
}

func (k OperationKey) validate() error {
	switch id := k.OperationID; {
	case k.GrantID == "":
		return fmt.Errorf("%w: empty grant", ErrInvalidOperationKey)
	case k.Tool == "":
		return fmt.Errorf("%w: empty tool", ErrInvalidOperationKey)
	case id == "", len(id) > MaxOperationIDBytes, !utf8.ValidString(id), strings.IndexByte(id, 0) >= 0:
		return fmt.Errorf("%w: bad operation id", ErrInvalidOperationKey)
	}
	return nil
}

// keyWhere matches exactly one key. operation_id is bound as []byte so
// SQLite compares BLOB to BLOB; a TEXT parameter would never match.
const keyWhere = `grant_id = ? AND execution_id = ? AND tool = ? AND operation_id = ?`

func (k OperationKey) args() []any {
	return []any{k.GrantID, k.ExecutionID, k.Tool, []byte(k.OperationID)}
}

// ReserveOperation inserts a pending row for key expiring ttl from now, in
// one statement, and reports created=true. When an unexpired row already
// exists it is returned unchanged with created=false, whatever its request
// hash and state: the caller decides between replay, conflict and unknown
// outcome. An expired row that was not pruned yet is replaced as if it did
// not exist, so a record never outlives its TTL.
func (s *Store) ReserveOperation(ctx context.Context, key OperationKey, requestHash string, ttl time.Duration) (*Operation, bool, error) {
	if err := key.validate(); err != nil {
		return nil, false, err
	}
	if requestHash == "" {
		return nil, false, errors.New("reserve operation: empty request hash")
	}
	if ttl <= 0 {
		return nil, false, errors.New("reserve operation: ttl must be positive")
	}
	// A row deleted between the upsert and the read (released or pruned by
	// a concurrent caller) sends us round again; twice is already unlikely.
	for range 3 {
		now := s.now()
		row := operationRow{GrantID: key.GrantID, ExecutionID: key.ExecutionID, Tool: key.Tool,
			OperationID: []byte(key.OperationID), RequestHash: requestHash, State: string(OperationPending),
			CreatedAt: now, ExpiresAt: now.Add(ttl)}
		res := s.db.WithContext(ctx).Exec(`INSERT INTO operations
			(grant_id, execution_id, tool, operation_id, request_hash, state, result, created_at, completed_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, NULL, ?, NULL, ?)
			ON CONFLICT (grant_id, execution_id, tool, operation_id) DO UPDATE SET
				request_hash = excluded.request_hash, state = excluded.state, result = NULL,
				created_at = excluded.created_at, completed_at = NULL, expires_at = excluded.expires_at
			WHERE operations.expires_at <= excluded.created_at`,
			row.GrantID, row.ExecutionID, row.Tool, row.OperationID, row.RequestHash, row.State, row.CreatedAt, row.ExpiresAt)
		if res.Error != nil {
			return nil, false, fmt.Errorf("reserve operation: %w", res.Error)
		}
		if res.RowsAffected == 1 {
			return row.toOperation(), true, nil
		}
		op, err := s.Operation(ctx, key)
		if err == nil {
			return op, false, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return nil, false, fmt.Errorf("reserve operation: %w", err)
		}
	}
	return nil, false, errors.New("reserve operation: row keeps disappearing")
}

// Operation returns the record for key, expired or not, or ErrNotFound.
func (s *Store) Operation(ctx context.Context, key OperationKey) (*Operation, error) {
	if err := key.validate(); err != nil {
		return nil, err
	}
	var row operationRow
	if err := s.db.WithContext(ctx).Where(keyWhere, key.args()...).Take(&row).Error; err != nil {
		return nil, notFound(err)
	}
	return row.toOperation(), nil
}

// CompleteOperation moves the pending row for key to committed with result.
// It returns ErrOperationResultTooLarge (row unchanged) for a result over
// MaxOperationResultBytes, ErrNotFound when there is no row and
// ErrOperationState when the row is not pending.
func (s *Store) CompleteOperation(ctx context.Context, key OperationKey, result []byte) error {
	if err := key.validate(); err != nil {
		return err
	}
	if len(result) > MaxOperationResultBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrOperationResultTooLarge, len(result), MaxOperationResultBytes)
	}
	if result == nil {
		result = []byte{} // committed rows always have a result, possibly empty
	}
	return s.emergency(func() error {
		return s.leavePending(ctx, key, "complete operation",
			`UPDATE operations SET state = ?, result = ?, completed_at = ? WHERE `+keyWhere+` AND state = ?`,
			append([]any{string(OperationCommitted), result, s.now()}, append(key.args(), string(OperationPending))...)...)
	})
}

// MarkOperationUnknown moves the pending row for key to unknown: the effect
// may have started, so it must never run again under this key. It returns
// ErrNotFound when there is no row and ErrOperationState when the row is not
// pending.
func (s *Store) MarkOperationUnknown(ctx context.Context, key OperationKey) error {
	if err := key.validate(); err != nil {
		return err
	}
	return s.leavePending(ctx, key, "mark operation unknown",
		`UPDATE operations SET state = ?, completed_at = ? WHERE `+keyWhere+` AND state = ?`,
		append([]any{string(OperationUnknown), s.now()}, append(key.args(), string(OperationPending))...)...)
}

// ReleaseOperation deletes the pending row for key, for an effect that
// provably did not start, so a retry may run it. It returns ErrNotFound when
// there is no row and ErrOperationState when the row is not pending.
func (s *Store) ReleaseOperation(ctx context.Context, key OperationKey) error {
	if err := key.validate(); err != nil {
		return err
	}
	return s.leavePending(ctx, key, "release operation",
		`DELETE FROM operations WHERE `+keyWhere+` AND state = ?`,
		append(key.args(), string(OperationPending))...)
}

// leavePending runs a statement conditioned on the row being pending and
// explains a miss.
func (s *Store) leavePending(ctx context.Context, key OperationKey, what, sql string, args ...any) error {
	res := s.db.WithContext(ctx).Exec(sql, args...)
	if res.Error != nil {
		return fmt.Errorf("%s: %w", what, res.Error)
	}
	if res.RowsAffected == 1 {
		return nil
	}
	if _, err := s.Operation(ctx, key); err != nil {
		return err
	}
	return ErrOperationState
}

// PruneOperations deletes every record that expired at or before now, in
// any state, and returns how many were deleted.
func (s *Store) PruneOperations(ctx context.Context, now time.Time) (int64, error) {
	res := s.db.WithContext(ctx).Exec(`DELETE FROM operations WHERE expires_at <= ?`, now.UTC())
	if res.Error != nil {
		return 0, fmt.Errorf("prune operations: %w", res.Error)
	}
	return res.RowsAffected, nil
}

// OperationResultBytes returns the bytes of stored results grantID's
// records hold.
func (s *Store) OperationResultBytes(ctx context.Context, grantID string) (int64, error) {
	var n int64
	if err := s.db.WithContext(ctx).Raw(`SELECT COALESCE(SUM(LENGTH(result)), 0) FROM operations WHERE grant_id = ?`, grantID).
		Scan(&n).Error; err != nil {
		return 0, fmt.Errorf("operation result bytes: %w", err)
	}
	return n, nil
}

// DropOldestResults keeps the newest committed results of grantID that
// fit in keep bytes and drops the others' results: their records become
// unknown (a retry with their operationId is answered "outcome unknown",
// never run again). It returns the bytes grantID's records hold after.
func (s *Store) DropOldestResults(ctx context.Context, grantID string, keep int64) (int64, error) {
	res := s.db.WithContext(ctx).Exec(`UPDATE operations SET state = ?, result = NULL
		WHERE (grant_id, execution_id, tool, operation_id) IN (
			SELECT grant_id, execution_id, tool, operation_id FROM (
				SELECT grant_id, execution_id, tool, operation_id,
					SUM(LENGTH(result)) OVER (ORDER BY completed_at DESC, operation_id DESC ROWS UNBOUNDED PRECEDING) AS upto
				FROM operations WHERE grant_id = ? AND state = ?)
			WHERE upto > ?)`, string(OperationUnknown), grantID, string(OperationCommitted), keep)
	if res.Error != nil {
		return 0, fmt.Errorf("drop oldest results: %w", res.Error)
	}
	return s.OperationResultBytes(ctx, grantID)
}
