package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/devspace-dev/devspace/internal/app"
)

// runDoctor checks the configuration and the state (app.Doctor) and prints
// one line per finding (✓ fine, ! warning, ✗ problem); it fails when any
// is a problem. It only reads: nothing is created, migrated or changed.
func runDoctor(ctx context.Context, args []string, env Env, stdio IO) error {
	out := stdio.Stdout
	cfg, err := loadConfig(args, env)
	if err != nil {
		fmt.Fprintln(out, "✗ configuration:")
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintln(out, "    "+line)
		}
		return errors.New("configuration is invalid")
	}
	problems := 0
	for _, f := range app.Doctor(ctx, cfg) {
		if f.Level == app.FindingProblem {
			problems++
		}
		fmt.Fprintln(out, f)
	}
	if problems > 0 {
		return fmt.Errorf("%d problem(s) found", problems)
	}
	return nil
}
