// Command devspace is the DevSpace server and its owner CLI.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/devspace-dev/devspace/internal/cli"
	"github.com/devspace-dev/devspace/internal/process"
)

func main() {
	// A command supervisor or launcher is this binary started by the
	// server; it must run before any configuration or signal handling.
	if code, ok := process.InternalMain(os.Args[1:]); ok {
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.LookupEnv, cli.IO{Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}
