package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/devspace-dev/devspace/internal/app"
	"github.com/devspace-dev/devspace/internal/authstate"
	"github.com/devspace-dev/devspace/internal/config"
	"github.com/devspace-dev/devspace/internal/control"
)

// runAdmin asks the running server for a one-time sign-in link of the
// Owner's console and prints it on standard output (the note on standard
// error). The link lives in the server's memory, so there is nothing to do
// without one.
func runAdmin(ctx context.Context, args []string, env Env, stdio IO) error {
	cfg, err := loadConfig(args, env)
	if err != nil {
		return err
	}
	auth, err := authstate.Load(cfg.StateDir, cfg.MasterKeyFile)
	if errors.Is(err, authstate.ErrNotInitialized) {
		return app.NotInitialized(ctx, cfg)
	}
	if err != nil {
		return err
	}
	link, err := control.NewClient(cfg.ControlListen, auth.Derive(control.KeyPurpose)).ConsoleLink(ctx)
	switch {
	case control.IsUnavailable(err):
		return fmt.Errorf("no DevSpace server answers on %s; the console is part of the running server: start it (`devspace serve`), "+
			"or set DEVSPACE_CONTROL_LISTEN to its control address (in a container: run `devspace admin` in the server's container)", cfg.ControlListen)
	case errors.Is(err, control.ErrConsoleOff):
		return fmt.Errorf("%w; set DEVSPACE_ADMIN_LISTEN (default %s) and restart the server", err, config.DefaultAdminListen)
	case err != nil:
		return err
	}
	fmt.Fprintln(stdio.Stderr, "Open this link in a browser on this machine within 2 minutes; it works once:")
	fmt.Fprintln(stdio.Stdout, link)
	return nil
}
