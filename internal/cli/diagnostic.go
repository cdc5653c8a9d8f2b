package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/devspace-dev/devspace/internal/app"
)

// runDiagnostic writes a redacted support bundle (JSON) to --output or
// standard output. It only reads: the state is opened read-only, and the
// metrics come from the running server's metrics listener when that is an
// address of this host or container (a wildcard bind is asked on
// loopback) and answers.
func runDiagnostic(ctx context.Context, args []string, env Env, stdio IO) error {
	output := "-"
	var rest []string
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !strings.HasPrefix(args[i], "-") || name != "output" {
			rest = append(rest, args[i])
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return usageError("usage: devspace diagnostic [--output FILE] [flags]")
			}
			i++
			value = args[i]
		}
		output = value
	}
	cfg, err := loadConfig(rest, env)
	if err != nil {
		return err
	}
	home, _ := env("HOME")
	raw, err := app.Diagnostic(ctx, cfg, home)
	if err != nil {
		return err
	}
	if output == "-" {
		_, err = stdio.Stdout.Write(raw)
		return err
	}
	if err := os.WriteFile(output, raw, 0o600); err != nil {
		return fmt.Errorf("write the bundle: %w", err)
	}
	fmt.Fprintf(stdio.Stderr, "wrote %s (%d bytes); read it before you share it\n", output, len(raw))
	return nil
}
