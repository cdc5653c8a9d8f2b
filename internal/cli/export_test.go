package cli

import (
	"context"

	"github.com/devspace-dev/devspace/internal/app"
)

// DiagnosticInputs returns the bundle `devspace diagnostic` builds before
// redaction, so a test can show that what redaction must remove was there.
func DiagnosticInputs(ctx context.Context, args []string, env Env) ([]byte, error) {
	cfg, err := loadConfig(args, env)
	if err != nil {
		return nil, err
	}
	return app.DiagnosticInputs(ctx, cfg)
}
