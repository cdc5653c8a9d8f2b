//go:build !activity_merged

package app

import (
	"log/slog"
	"time"

	"github.com/devspace-dev/devspace/internal/console"
)

// consoleOptions are the console's options without an activity source:
// internal/activity (issue 33, branch activity) is not merged yet, and the
// Activity and Charts pages say so. console_activity.go, built with the
// tag activity_merged, wires it; once internal/activity is in main, delete
// this file and that file's build line.
func (a *App) consoleOptions(log *slog.Logger, now func() time.Time) console.Options {
	return console.Options{Admin: a, ListenAddr: a.cfg.AdminListen, Logger: log, Now: now}
}
