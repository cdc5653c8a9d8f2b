package store

import (
	"context"
	"time"

	"gorm.io/gorm"
)

// ProcessOutput is the durable record of one command started through
// exec_command: the refs the model holds, what binds them, the command's
// final state, and the spool file (named by SpoolID) holding its output.
type ProcessOutput struct {
	OutputRef     string `gorm:"primaryKey"`
	ProcessRef    string
	SpoolID       string
	GrantID       string
	ExecutionID   string
	ProjectRef    string
	Status        string
	ExitCode      *int
	Signal        string
	KillReason    string
	Revision      int64
	OutputBytes   int64
	RetainedBytes int64
	Truncated     bool
	// Tail holds the last bytes the command wrote when its output was
	// truncated (the spool file holds only the first ones); nil otherwise.
	Tail      []byte
	StartedAt time.Time
	EndedAt   *time.Time
	// ExpiresAt is set when the command ends; nil while it runs.
	ExpiresAt *time.Time
}

// TableName maps ProcessOutput to its table.
func (ProcessOutput) TableName() string { return "process_outputs" }

// InsertProcessOutput records a command that just started.
func (s *Store) InsertProcessOutput(ctx context.Context, o *ProcessOutput) error {
	return s.db.WithContext(ctx).Session(&gorm.Session{}).Create(o).Error
}

// FinishProcessOutput records a command's final state; the row must exist.
// It reports ErrNotFound when the row is gone (its execution was closed
// meanwhile), so that the caller can drop the spool file.
func (s *Store) FinishProcessOutput(ctx context.Context, o *ProcessOutput) error {
	res := s.db.WithContext(ctx).Model(&ProcessOutput{}).Where("output_ref = ?", o.OutputRef).
		Select("status", "exit_code", "signal", "kill_reason", "revision", "output_bytes", "retained_bytes",
			"truncated", "tail", "ended_at", "expires_at").
		Updates(o)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}

// ProcessOutputByRef returns the record whose processRef (or, with
// byOutput, outputRef) is ref, only if it belongs to the grant and
// execution; anything else is ErrNotFound.
func (s *Store) ProcessOutputByRef(ctx context.Context, ref string, byOutput bool, grantID, executionID string) (*ProcessOutput, error) {
	col := "process_ref"
	if byOutput {
		col = "output_ref"
	}
	var o ProcessOutput
	err := s.db.WithContext(ctx).Where(col+" = ? AND grant_id = ? AND execution_id = ?", ref, grantID, executionID).
		Take(&o).Error
	if err != nil {
		return nil, notFound(err)
	}
	return &o, nil
}

// ProcessOutputOwner returns the record of processRef whatever its grant
// and execution (the Owner's view). Errors: ErrNotFound.
func (s *Store) ProcessOutputOwner(ctx context.Context, processRef string) (*ProcessOutput, error) {
	var o ProcessOutput
	if err := s.db.WithContext(ctx).Where("process_ref = ?", processRef).Take(&o).Error; err != nil {
		return nil, notFound(err)
	}
	return &o, nil
}

// OutputUse is what the retention's sweeps weigh of a record.
type OutputUse struct {
	OutputRef     string
	GrantID       string
	RetainedBytes int64
	Ended         bool // the command ended (only then may its output be retired)
}

// OutputUses returns every record's grant, retained byte count and
// whether its command ended: the earliest ended first, running commands
// last. The sweeps that read them run when a bound is near, up to once a
// second: four columns, ordered by SQLite, and no time to parse take
// about a third of what whole rows sorted in Go took (at the record
// bound, 10,000 records, about 85 ms against 270 ms on a 2-CPU runner;
// BenchmarkSweepNearShare measures the whole sweep).
func (s *Store) OutputUses(ctx context.Context) ([]OutputUse, error) {
	var out []OutputUse
	err := s.db.WithContext(ctx).Model(&ProcessOutput{}).
		Select("output_ref, grant_id, retained_bytes, ended_at IS NOT NULL AS ended").
		Order("ended_at IS NULL, ended_at, started_at, output_ref").Find(&out).Error
	return out, err
}

// OutputSpool is what reconciling the spool directory needs of a record.
type OutputSpool struct {
	OutputRef     string
	SpoolID       string
	GrantID       string // whose share of the spool the file counts in
	RetainedBytes int64
}

// OutputSpools returns every record's spool file, grant and retained byte
// count, in no particular order. A server's start reconciles them with
// the files on disk; reading four columns instead of the whole rows
// keeps that short after thousands of commands (BenchmarkOutputSpools).
func (s *Store) OutputSpools(ctx context.Context) ([]OutputSpool, error) {
	var out []OutputSpool
	err := s.db.WithContext(ctx).Model(&ProcessOutput{}).Select("output_ref", "spool_id", "grant_id", "retained_bytes").Find(&out).Error
	return out, err
}

// CountProcessOutputs returns the number of records.
func (s *Store) CountProcessOutputs(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.WithContext(ctx).Model(&ProcessOutput{}).Count(&n).Error
	return n, err
}

// CountRunningProcessOutputs returns the number of commands recorded as
// started and not ended: those running, while a server serves the state;
// after a crash, those it left (its next start ends them).
func (s *Store) CountRunningProcessOutputs(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.WithContext(ctx).Model(&ProcessOutput{}).Where("ended_at IS NULL").Count(&n).Error
	return n, err
}

// ProcessOutputTotals returns the number of records and the bytes their
// files hold.
func (s *Store) ProcessOutputTotals(ctx context.Context) (n, bytes int64, err error) {
	var row struct{ N, Bytes int64 }
	err = s.db.WithContext(ctx).Model(&ProcessOutput{}).Select("COUNT(*) AS n, COALESCE(SUM(retained_bytes), 0) AS bytes").Scan(&row).Error
	return row.N, row.Bytes, err
}

// EndRunningProcessOutputs marks records still "running" — their commands
// died with a previous server run — as killed for reason, ended at now.
func (s *Store) EndRunningProcessOutputs(ctx context.Context, reason string, ttl time.Duration) (int64, error) {
	now := s.now()
	res := s.db.WithContext(ctx).Model(&ProcessOutput{}).Where("status = ?", "running").
		Updates(map[string]any{"status": "killed", "kill_reason": reason, "ended_at": now, "expires_at": now.Add(ttl)})
	return res.RowsAffected, res.Error
}

// SetProcessOutputRetained corrects a record's retained byte count (after
// a crash the file, not the record, says how much was kept).
func (s *Store) SetProcessOutputRetained(ctx context.Context, outputRef string, retained int64) error {
	return s.db.WithContext(ctx).Model(&ProcessOutput{}).Where("output_ref = ?", outputRef).
		Update("retained_bytes", retained).Error
}

// RetireProcessOutputs deletes the records the selector matches and
// returns them (without tails) so that the caller can delete their files:
// executionIDs (their executions were closed), expiredBefore (non-zero:
// ended commands past their expiry), or outputRefs.
func (s *Store) RetireProcessOutputs(ctx context.Context, sel RetireSelector) ([]ProcessOutput, error) {
	var out []ProcessOutput
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		q := tx.Omit("tail")
		switch {
		case len(sel.ExecutionIDs) > 0:
			q = q.Where("execution_id IN ?", sel.ExecutionIDs)
		case !sel.ExpiredBefore.IsZero():
			q = q.Where("expires_at IS NOT NULL AND expires_at <= ?", sel.ExpiredBefore)
		case len(sel.OutputRefs) > 0:
			q = q.Where("output_ref IN ?", sel.OutputRefs)
		case sel.ClosedExecutions:
			q = q.Where("execution_id IN (SELECT id FROM executions WHERE closed_at IS NOT NULL)")
		default:
			return nil
		}
		if err := q.Find(&out).Error; err != nil || len(out) == 0 {
			return err
		}
		refs := make([]string, len(out))
		for i, o := range out {
			refs[i] = o.OutputRef
		}
		return tx.Where("output_ref IN ?", refs).Delete(&ProcessOutput{}).Error
	})
	return out, err
}

// RetireSelector chooses the records RetireProcessOutputs deletes; exactly
// one field is used, in declaration order.
type RetireSelector struct {
	ExecutionIDs     []string
	ExpiredBefore    time.Time
	OutputRefs       []string
	ClosedExecutions bool
}
