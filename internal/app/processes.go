package app

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/devspace-dev/devspace/internal/config"
	"github.com/devspace-dev/devspace/internal/metrics"
	"github.com/devspace-dev/devspace/internal/process"
)

// processMetrics adapts the metrics registry to process.Metrics.
type processMetrics struct{ m *metrics.Metrics }

func (p processMetrics) ProcessKilled(reason string) { p.m.ProcessKilled(reason) }
func (p processMetrics) OrphansKilled(n int)         { p.m.OrphansKilledAdd(n) }
func (p processMetrics) RunningChanged(n int)        { p.m.RunningChanged(n) }

// outputDir holds retained command output. Commands do not survive a
// restart, so whatever a previous run left there is removed at start.
func outputDir(cfg *config.Config) string { return filepath.Join(cfg.StateDir, "output") }

func newProcessManager(cfg *config.Config, opts Options, log *slog.Logger, m *metrics.Metrics) (*process.Manager, error) {
	dir := outputDir(cfg)
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("clear old command output: %w", err)
	}
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
