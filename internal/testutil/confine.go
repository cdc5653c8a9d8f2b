package testutil

import (
	"os"
	"os/exec"
	"testing"

	"github.com/devspace-dev/devspace/internal/process"
	"github.com/devspace-dev/devspace/internal/sandbox"
)

// Confiner returns a process.Manager's Confine, with the test binary as
// the program that confines itself: the package's TestMain must hand
// process.InternalMain its arguments. Built with -race, that program would
// sleep a second as it exits (the race runtime's atexit_sleep_ms), once
// per confined program: the environment says not to. It skips the test
// where the kernel has no Landlock.
func Confiner(t testing.TB) func(cmd *exec.Cmd, p sandbox.Policy) error {
	t.Helper()
	if !sandbox.Probe().Available() {
		t.Skip("no Landlock on this kernel")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	m, err := process.New(process.Options{SupervisorPath: exe, IdleSupervisors: -1, DisableCgroup: true,
		SpoolDir: t.TempDir(), Sandbox: process.SandboxOptions{ScratchDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown(t.Context()) })
	if m.Sandbox().Mode != process.SandboxLandlock {
		t.Fatalf("sandbox %+v", m.Sandbox())
	}
	return func(cmd *exec.Cmd, p sandbox.Policy) error {
		cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=0")
		return m.Confine(cmd, p)
	}
}
