// Package retention keeps the output of finished commands for a while:
// one SQLite record per command (refs, binding, final state) beside its
// spool file, which the process package wrote. Records and files go
// together — when the command's execution closes, when the output
// expires (24 h after the command ended), or when the spool nears its
// total cap (oldest ended output first) — and a restart reconciles them:
// commands that were running are recorded as killed, files without a
// record are deleted, and what is kept counts against the spool budget
// again.
package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/devspace-dev/devspace/internal/process"
	"github.com/devspace-dev/devspace/internal/store"
)

// Defaults of Options.
const (
	DefaultTTL        = 24 * time.Hour
	DefaultSweepEvery = time.Minute
	// DefaultMaxRecords bounds the records kept (each holds up to 64 KiB
	// of tail when its output was truncated); past it the earliest ended
	// go first.
	DefaultMaxRecords = 10000
)

// ReasonServerRestart is the kill reason recorded for commands that were
// running when a previous server run ended.
const ReasonServerRestart = "server_restart"

// Spool is the process manager's side: the files and their budget.
type Spool interface {
	SpoolFiles() ([]process.SpoolFile, error)
	AdoptOutput(id string, size int64)
	RemoveOutput(id string) error
	RetainedBytes() int64
	MaxRetainedBytes() int64
	Retained(id string, size int64, tail []byte) *process.Retained
}

var _ Spool = (*process.Manager)(nil)

// Options configures a Retention.
type Options struct {
	Store *store.Store
	Spool Spool
	// TTL is how long output is kept after its command ended; default
	// DefaultTTL.
	TTL time.Duration
	// SweepEvery is the period of Run's sweeps; default DefaultSweepEvery.
	SweepEvery time.Duration
	// MaxRecords bounds the records kept; default DefaultMaxRecords.
	MaxRecords int
	Logger     *slog.Logger
}

// Retention owns the records of retained output. It is safe for
// concurrent use.
type Retention struct {
	st    *store.Store
	spool Spool
	ttl   time.Duration
	every time.Duration
	max   int
	log   *slog.Logger
}

// Record is one command's retained-output record.
type Record = store.ProcessOutput

// ErrNotFound: no record for that ref in the caller's execution.
var ErrNotFound = errors.New("no retained output")

// New reconciles records and spool files left by a previous run and
// returns the Retention. Call it before any command starts.
func New(ctx context.Context, opts Options) (*Retention, error) {
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.SweepEvery <= 0 {
		opts.SweepEvery = DefaultSweepEvery
	}
	if opts.MaxRecords <= 0 {
		opts.MaxRecords = DefaultMaxRecords
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Retention{st: opts.Store, spool: opts.Spool, ttl: opts.TTL, every: opts.SweepEvery, max: opts.MaxRecords,
		log: opts.Logger.With("component", "retention")}
	if err := r.reconcile(ctx); err != nil {
		return nil, fmt.Errorf("reconcile retained output: %w", err)
	}
	if err := r.Sweep(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Retention) reconcile(ctx context.Context) error {
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
			r.spool.AdoptOutput(rec.SpoolID, n)
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
func (r *Retention) Started(ctx context.Context, rec *Record) error {
	rec.Status = process.StatusRunning
	if err := r.st.InsertProcessOutput(ctx, rec); err != nil {
		return fmt.Errorf("record started command: %w", err)
	}
	return nil
}

// Finished records the final state of a command whose tree is gone and
// whose output is complete; tail is Process.TruncatedTail. When the record
// is gone (its execution closed meanwhile) the file is removed and
// ErrNotFound returned.
func (r *Retention) Finished(ctx context.Context, outputRef, spoolID string, st process.State, tail []byte) error {
	end := st.EndedAt.UTC() // stored times compare as text: keep one zone
	if st.EndedAt.IsZero() {
		end = r.st.Now()
	}
	exp := end.Add(r.ttl)
	rec := &Record{OutputRef: outputRef, Status: st.Status, ExitCode: st.ExitCode, Signal: st.Signal,
		KillReason: st.KillReason, Revision: st.Revision, OutputBytes: st.OutputBytes, RetainedBytes: st.RetainedBytes,
		Truncated: st.Truncated, Tail: tail, EndedAt: &end, ExpiresAt: &exp}
	err := r.st.FinishProcessOutput(ctx, rec)
	if errors.Is(err, store.ErrNotFound) {
		_ = r.spool.RemoveOutput(spoolID)
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("record finished command: %w", err)
	}
	return nil
}

// Lookup returns the record of ref (a processRef, or with byOutput an
// outputRef) when it belongs to the grant and execution; ErrNotFound
// otherwise — another execution's ref looks like an unknown one.
func (r *Retention) Lookup(ctx context.Context, ref string, byOutput bool, grantID, executionID string) (*Record, error) {
	rec, err := r.st.ProcessOutputByRef(ctx, ref, byOutput, grantID, executionID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotFound
	}
	return rec, err
}

// Output returns the reader of a record's retained output.
func (r *Retention) Output(rec *Record) *process.Retained {
	return r.spool.Retained(rec.SpoolID, rec.RetainedBytes, rec.Tail)
}

// State renders a record as the process state it ended in.
func State(rec *Record) process.State {
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
func (r *Retention) RetireExecutions(ctx context.Context, executionIDs []string) error {
	if len(executionIDs) == 0 {
		return nil
	}
	return r.retire(ctx, store.RetireSelector{ExecutionIDs: executionIDs})
}

func (r *Retention) retire(ctx context.Context, sel store.RetireSelector) error {
	recs, err := r.st.RetireProcessOutputs(ctx, sel)
	if err != nil {
		return fmt.Errorf("retire retained output: %w", err)
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
// server was not there to do it, the earliest ended records past
// MaxRecords (down to 90% of it), and — while the spool holds more than
// 90% of its cap — the oldest output until it holds 75%, so that running
// commands keep room to write.
func (r *Retention) Sweep(ctx context.Context) error {
	if err := r.retire(ctx, store.RetireSelector{ExpiredBefore: r.st.Now()}); err != nil {
		return err
	}
	if err := r.retire(ctx, store.RetireSelector{ClosedExecutions: true}); err != nil {
		return err
	}
	if n, err := r.st.CountProcessOutputs(ctx); err != nil {
		return err
	} else if n > int64(r.max) {
		// Down to 90% of the bound, so that this does not run every time.
		refs, err := r.st.OldestEndedProcessOutputs(ctx, int(n)-r.max*9/10)
		if err != nil {
			return err
		}
		if err := r.retire(ctx, store.RetireSelector{OutputRefs: refs}); err != nil {
			return err
		}
	}
	limit := r.spool.MaxRetainedBytes()
	if r.spool.RetainedBytes() <= limit/10*9 {
		return nil
	}
	recs, err := r.st.ProcessOutputs(ctx)
	if err != nil {
		return err
	}
	used := r.spool.RetainedBytes()
	var refs []string
	for _, rec := range recs {
		if used <= limit/4*3 {
			break
		}
		if rec.EndedAt != nil && rec.RetainedBytes > 0 {
			refs = append(refs, rec.OutputRef)
			used -= rec.RetainedBytes
		}
	}
	if len(refs) > 0 {
		r.log.WarnContext(ctx, "output spool near its cap; retiring the oldest ended output", "outputs", len(refs))
	}
	if len(refs) == 0 {
		return nil
	}
	return r.retire(ctx, store.RetireSelector{OutputRefs: refs})
}

// Run sweeps every SweepEvery until ctx is done.
func (r *Retention) Run(ctx context.Context) {
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := r.Sweep(ctx); err != nil && ctx.Err() == nil {
				r.log.ErrorContext(ctx, "sweep retained output", "err", err)
			}
		}
	}
}
