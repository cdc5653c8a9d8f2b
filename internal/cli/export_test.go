package cli

import (
	"context"
	"encoding/json"
)

// DiagnosticInputs returns the bundle `devspace diagnostic` builds before
// redaction, so a test can show that what redaction must remove was there.
func DiagnosticInputs(ctx context.Context, args []string, env Env) ([]byte, error) {
	cfg, err := loadConfig(args, env)
	if err != nil {
		return nil, err
	}
	return json.Marshal(collectDiagnostic(ctx, cfg, args, env))
}
