package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/devspace-dev/devspace/internal/config"
	"github.com/devspace-dev/devspace/internal/metrics"
	"github.com/devspace-dev/devspace/internal/process"
	"github.com/devspace-dev/devspace/internal/retention"
	"github.com/devspace-dev/devspace/internal/store"
)

// processMetrics adapts the metrics registry to process.Metrics.
type processMetrics struct{ m *metrics.Metrics }

func (p processMetrics) ProcessKilled(reason string) { p.m.ProcessKilled(reason) }
func (p processMetrics) OrphansKilled(n int)         { p.m.OrphansKilledAdd(n) }
func (p processMetrics) RunningChanged(n int)        { p.m.RunningChanged(n) }

// outputDir holds retained command output (spool files; their records
// are in SQLite). Commands do not survive a restart, but their output
// does, for its 24 hours (see internal/retention).
func outputDir(cfg *config.Config) string { return filepath.Join(cfg.StateDir, "output") }

func newProcessManager(cfg *config.Config, opts Options, log *slog.Logger, m *metrics.Metrics) (*process.Manager, error) {
	dir := outputDir(cfg)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create command output dir: %w", err)
	}
	path := opts.SupervisorPath
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find own executable for command supervisors: %w", err)
		}
		path = exe
	}
	return process.New(process.Options{SupervisorPath: path, SpoolDir: dir, LogCommands: cfg.LogShellCommands,
		Logger: log.With("component", "process"), Metrics: processMetrics{m}})
}

// newRetention reconciles the output a previous run left and exports
// output_bytes_retained.
func newRetention(ctx context.Context, st *store.Store, procs *process.Manager, log *slog.Logger, m *metrics.Metrics) (*retention.Retention, error) {
	r, err := retention.New(ctx, retention.Options{Store: st, Spool: procs, Logger: log})
	if err != nil {
		return nil, err
	}
	m.GaugeFunc("output_bytes_retained", "Bytes of command output kept in spool files.", func() float64 {
		return float64(procs.RetainedBytes())
	})
	return r, nil
}
