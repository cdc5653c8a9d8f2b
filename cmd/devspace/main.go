// Command devspace is the DevSpace server and its owner CLI.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/devspace-dev/devspace/internal/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app.Main(ctx, os.Args[1:], os.LookupEnv, app.IO{Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}
