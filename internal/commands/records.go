// Package retention keeps the output of finished commands for a while:
// one SQLite record per command (refs, binding, final state) beside its
// spool file, which the process package wrote. Records and files go
// together — when the command's execution closes, when the output
// expires (24 h after the command ended), when its grant nears its share
// of the spool (that grant's earliest ended output first), or when the
// spool nears its total cap or the records their bound (from the grant
// holding the most first) — and a restart reconciles them: commands that
// were running are recorded as killed, files without a record are
// deleted, and what is kept counts against the spool budget and its
// grant's share again.
package commands

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/devspace-dev/devspace/internal/process"
	"github.com/devspace-dev/devspace/internal/store"
)

// Defaults of OutputRecordsOptions.
const (
	DefaultOutputTTL        = 24 * time.Hour
	DefaultOutputSweepEvery = time.Minute
	// DefaultMaxOutputRecords bounds the records kept (each holds up to 64 KiB
	// of tail when its output was truncated); past it the earliest ended
	// go first.
	DefaultMaxOutputRecords = 10000
)

// ReasonServerRestart is the kill reason recorded for commands that were
// running when a previous server run ended.
const ReasonServerRestart = "server_restart"

// pressureGap is the least time between two sweeps the spool's pressure
// asks for: a flood signals it at every command.
const pressureGap = time.Second

// Reasons output is retired, for Metrics.OutputsRetired.
const (
	RetiredExpired         = "expired"
	RetiredExecutionClosed = "execution_closed"
	// RetiredRecordBound: past MaxRecords, from the grant holding the
	// most records.
	RetiredRecordBound = "record_bound"
	// RetiredGrantShare: its grant neared its share of the spool.
	RetiredGrantShare = "grant_share"
	// RetiredSpoolFull: the spool neared its total, from the grant
	// holding the most (never while a grant is over its share).
	RetiredSpoolFull = "spool_full"
)

// Spool is the process manager's side: the files and their budget, in
// all and per owner (the grant whose ID the commands service passed as
// process.Spec.Tenant).
type Spool interface {
	SpoolFiles() ([]process.SpoolFile, error)
	AdoptOutput(id, owner string, size int64)
	RemoveOutput(id string) error
	RetainedBytes() int64
	MaxRetainedBytes() int64
	OwnerRetainedBytes() map[string]int64
	MaxOwnerRetainedBytes() int64
	SpoolPressure() <-chan struct{}
	Retained(id string, size int64, tail []byte) *process.Retained
}

var _ Spool = (*process.Manager)(nil)

// Metrics receives the retention's measurements; the app adapts it to
// Prometheus (output_retired_total{reason}). Implementations must be safe
// for concurrent use.
type OutputMetrics interface {
	// OutputsRetired counts n outputs retired for reason (one of the
	// Retired* reasons).
	OutputsRetired(reason string, n int)
}

type nopMetrics struct{}

func (nopMetrics) OutputsRetired(string, int) {}

// OutputRecordsOptions configures a OutputRecords.
type OutputRecordsOptions struct {
	Store *store.Store
	Spool Spool
	// TTL is how long output is kept after its command ended; default
	// DefaultOutputTTL.
	TTL time.Duration
	// SweepEvery is the period of Run's sweeps; default DefaultOutputSweepEvery.
	SweepEvery time.Duration
	// MaxRecords bounds the records kept; default DefaultMaxOutputRecords.
	MaxRecords int
	Logger     *slog.Logger
	// Metrics defaults to a no-op.
	Metrics OutputMetrics
}

// OutputRecords owns the records of retained output. It is safe for
// concurrent use.
type OutputRecords struct {
	st      *store.Store
	spool   Spool
	ttl     time.Duration
	every   time.Duration
	max     int
	log     *slog.Logger
	metrics OutputMetrics
}

// Record is one command's retained-output record.
type OutputRecord = store.ProcessOutput

// ErrNoOutputRecord: no record for that ref in the caller's execution.
var ErrNoOutputRecord = errors.New("no retained output")

// New reconciles records and spool files left by a previous run and
// returns the OutputRecords. Call it before any command starts.
func NewOutputRecords(ctx context.Context, opts OutputRecordsOptions) (*OutputRecords, error) {
	if opts.TTL <= 0 {
		opts.TTL = DefaultOutputTTL
	}
	if opts.SweepEvery <= 0 {
		opts.SweepEvery = DefaultOutputSweepEvery
	}
	if opts.MaxRecords <= 0 {
		opts.MaxRecords = DefaultMaxOutputRecords
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Metrics == nil {
		opts.Metrics = nopMetrics{}
	}
	r := &OutputRecords{st: opts.Store, spool: opts.Spool, ttl: opts.TTL, every: opts.SweepEvery, max: opts.MaxRecords,
		log: opts.Logger.With("component", "retention"), metrics: opts.Metrics}
	if err := r.reconcile(ctx); err != nil {
		return nil, fmt.Errorf("reconcile retained output: %w", err)
	}
	if err := r.Sweep(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *OutputRecords) reconcile(ctx context.Context) error {
	ended, err := r.st.EndRunningProcessOutputs(ctx, ReasonServerRestart, r.ttl)
	if err != nil {
		return err
	}
	recs, err := r.st.OutputSpools(ctx)
	if err != nil {
		return err
	}
	files, err := r.spool.SpoolFiles()
	if err != nil {
		return err
	}
	size := make(map[string]int64, len(files))
	for _, f := range files {
		size[f.ID] = f.Size
	}
	kept := make(map[string]bool, len(recs))
	for _, rec := range recs {
		n, ok := size[rec.SpoolID]
		// A command killed by a crash may have written past the last
		// recorded count; a lost file retains nothing. The file decides.
		if n != rec.RetainedBytes {
			if err := r.st.SetProcessOutputRetained(ctx, rec.OutputRef, n); err != nil {
				return err
			}
		}
		if ok {
			kept[rec.SpoolID] = true
			r.spool.AdoptOutput(rec.SpoolID, rec.GrantID, n)
		}
	}
	removed := 0
	for _, f := range files {
		if !kept[f.ID] {
			if err := r.spool.RemoveOutput(f.ID); err != nil {
				return err
			}
			removed++
		}
	}
	r.log.InfoContext(ctx, "retained output reconciled", "records", len(recs), "ended_by_restart", ended,
		"orphan_files_removed", removed, "bytes", r.spool.RetainedBytes())
	return nil
}

// Started records a command that just started.
func (r *OutputRecords) Started(ctx context.Context, rec *OutputRecord) error {
	rec.Status = process.StatusRunning
	if err := r.st.InsertProcessOutput(ctx, rec); err != nil {
		return fmt.Errorf("record started command: %w", err)
	}
	return nil
}

// Finished records the final state of a command whose tree is gone and
// whose output is complete; tail is Process.TruncatedTail. When the record
// is gone (its execution closed meanwhile) the file is removed and
// ErrNoOutputRecord returned.
func (r *OutputRecords) Finished(ctx context.Context, outputRef, spoolID string, st process.State, tail []byte) error {
	end := st.EndedAt.UTC() // stored times compare as text: keep one zone
	if st.EndedAt.IsZero() {
		end = r.st.Now()
	}
	exp := end.Add(r.ttl)
	rec := &OutputRecord{OutputRef: outputRef, Status: st.Status, ExitCode: st.ExitCode, Signal: st.Signal,
		KillReason: st.KillReason, Revision: st.Revision, OutputBytes: st.OutputBytes, RetainedBytes: st.RetainedBytes,
		Truncated: st.Truncated, Tail: tail, EndedAt: &end, ExpiresAt: &exp}
	err := r.st.FinishProcessOutput(ctx, rec)
	if errors.Is(err, store.ErrNotFound) {
		_ = r.spool.RemoveOutput(spoolID)
		return ErrNoOutputRecord
	}
	if err != nil {
		return fmt.Errorf("record finished command: %w", err)
	}
	return nil
}

// Lookup returns the record of ref (a processRef, or with byOutput an
// outputRef) when it belongs to the grant and execution; ErrNoOutputRecord
// otherwise — another execution's ref looks like an unknown one.
func (r *OutputRecords) Lookup(ctx context.Context, ref string, byOutput bool, grantID, executionID string) (*OutputRecord, error) {
	rec, err := r.st.ProcessOutputByRef(ctx, ref, byOutput, grantID, executionID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNoOutputRecord
	}
	return rec, err
}

// Output returns the reader of a record's retained output.
func (r *OutputRecords) Output(rec *OutputRecord) *process.Retained {
	return r.spool.Retained(rec.SpoolID, rec.RetainedBytes, rec.Tail)
}

// State renders a record as the process state it ended in.
func RecordState(rec *OutputRecord) process.State {
	st := process.State{Status: rec.Status, ExitCode: rec.ExitCode, Signal: rec.Signal, StartedAt: rec.StartedAt,
		Revision: rec.Revision, OutputBytes: rec.OutputBytes, RetainedBytes: rec.RetainedBytes, Truncated: rec.Truncated,
		KillReason: rec.KillReason, StdinClosed: true}
	if rec.EndedAt != nil {
		st.EndedAt = *rec.EndedAt
	}
	if st.OutputBytes < st.RetainedBytes { // reconciled after a crash
		st.OutputBytes = st.RetainedBytes
	}
	return st
}

// RetireExecutions deletes the records and files of closed executions.
func (r *OutputRecords) RetireExecutions(ctx context.Context, executionIDs []string) error {
	if len(executionIDs) == 0 {
		return nil
	}
	return r.retire(ctx, store.RetireSelector{ExecutionIDs: executionIDs}, RetiredExecutionClosed)
}

func (r *OutputRecords) retire(ctx context.Context, sel store.RetireSelector, reason string) error {
	recs, err := r.st.RetireProcessOutputs(ctx, sel)
	if err != nil {
		return fmt.Errorf("retire retained output: %w", err)
	}
	if len(recs) > 0 {
		r.metrics.OutputsRetired(reason, len(recs))
	}
	var errs []error
	for _, rec := range recs {
		if err := r.spool.RemoveOutput(rec.SpoolID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Sweep retires expired output, output of executions closed while the
// server was not there to do it, and then what the bounds ask for (see
// plan): past MaxRecords, the earliest ended records of the grant holding
// the most, down to 90% of the bound; a grant above 90% of its share of
// the spool, its own earliest ended output until it holds 75% of it; and
// while the spool holds more than 90% of its cap, until it holds 75%,
// the earliest ended output of the grant holding the most — but never
// while a grant is still over its share (plan.heaviest) — so that
// running commands keep room to write. A running command's output is
// never retired.
func (r *OutputRecords) Sweep(ctx context.Context) error {
	if err := r.retire(ctx, store.RetireSelector{ExpiredBefore: r.st.Now()}, RetiredExpired); err != nil {
		return err
	}
	if err := r.retire(ctx, store.RetireSelector{ClosedExecutions: true}, RetiredExecutionClosed); err != nil {
		return err
	}
	n, err := r.st.CountProcessOutputs(ctx)
	if err != nil {
		return err
	}
	limit, share := r.spool.MaxRetainedBytes(), r.spool.MaxOwnerRetainedBytes()
	held, total := r.spool.OwnerRetainedBytes(), r.spool.RetainedBytes()
	near := n > int64(r.max) || total > limit/10*9
	for _, b := range held {
		near = near || b > share/10*9
	}
	if !near {
		return nil
	}
	recs, err := r.st.OutputUses(ctx)
	if err != nil {
		return err
	}
	p := newPlan(recs, held, total)
	if n > int64(r.max) {
		for range int(n) - r.max*9/10 {
			if !p.take(p.mostRecords(), RetiredRecordBound, false) {
				break
			}
		}
	}
	for _, g := range p.byID() {
		if g.bytes > share/10*9 {
			for g.bytes > share/4*3 && p.take(g, RetiredGrantShare, true) {
			}
		}
	}
	if p.total > limit/10*9 {
		for p.total > limit/4*3 && p.take(p.heaviest(share), RetiredSpoolFull, true) {
		}
	}
	for _, reason := range []string{RetiredRecordBound, RetiredGrantShare, RetiredSpoolFull} {
		refs := p.refs[reason]
		if len(refs) == 0 {
			continue
		}
		r.log.WarnContext(ctx, "retiring retained output for a bound", "reason", reason, "outputs", len(refs))
		if err := r.retire(ctx, store.RetireSelector{OutputRefs: refs}, reason); err != nil {
			return err
		}
	}
	return nil
}

// Run sweeps every SweepEvery, and when the spool signals pressure (at
// most every pressureGap), until ctx is done.
func (r *OutputRecords) Run(ctx context.Context) {
	t := time.NewTicker(r.every)
	defer t.Stop()
	pressure := r.spool.SpoolPressure()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-pressure:
		}
		if err := r.Sweep(ctx); err != nil && ctx.Err() == nil {
			r.log.ErrorContext(ctx, "sweep retained output", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pressureGap):
		}
	}
}

// LookupOwner returns the record of processRef whatever its grant and
// execution: the Owner's view (Service.OwnerTail). Errors:
// ErrNoOutputRecord when there is none.
func (r *OutputRecords) LookupOwner(ctx context.Context, processRef string) (*OutputRecord, error) {
	rec, err := r.st.ProcessOutputOwner(ctx, processRef)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNoOutputRecord
	}
	return rec, err
}
