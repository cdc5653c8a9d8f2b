//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"testing"

	tclog "github.com/testcontainers/testcontainers-go/log"
)

// Settings from the environment (set by `make e2e`).
var (
	// image is the image under test (DEVSPACE_E2E_IMAGE).
	image string
	// composeBin is a docker compose binary (DEVSPACE_E2E_COMPOSE), built
	// from the Go module proxy.
	composeBin string
	// repoRoot holds compose.yaml (DEVSPACE_E2E_ROOT, default "..").
	repoRoot string
)

func TestMain(m *testing.M) {
	// testcontainers-go must target the daemon on this machine: in a
	// container (/.dockerenv) it would otherwise use the default gateway,
	// and its reaper image cannot be pulled here.
	for _, want := range []struct{ name, value string }{
		{"TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1"},
		{"TESTCONTAINERS_RYUK_DISABLED", "true"},
	} {
		if got := os.Getenv(want.name); got != want.value {
			fmt.Fprintf(os.Stderr, "e2e: %s=%q, want %q; run the e2e tests with `make e2e`\n", want.name, got, want.value)
			os.Exit(2)
		}
	}
	if os.Geteuid() != 0 {
		// The Projects bind-mounted into the containers must belong to the
		// image's user (UID 10001).
		fmt.Fprintln(os.Stderr, "e2e: run as root: the tests chown the bind-mounted Projects to the image's UID 10001")
		os.Exit(2)
	}
	image = os.Getenv("DEVSPACE_E2E_IMAGE")
	composeBin = os.Getenv("DEVSPACE_E2E_COMPOSE")
	repoRoot = os.Getenv("DEVSPACE_E2E_ROOT")
	if repoRoot == "" {
		repoRoot = ".."
	}
	if image == "" || composeBin == "" {
		fmt.Fprintln(os.Stderr, "e2e: DEVSPACE_E2E_IMAGE and DEVSPACE_E2E_COMPOSE are not set; run the e2e tests with `make e2e`")
		os.Exit(2)
	}
	// Container start/stop chatter; failures are reported by the tests,
	// with the server's log.
	tclog.SetDefault(tclog.NewNoopLogger())
	os.Exit(m.Run())
}
