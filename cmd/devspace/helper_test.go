package main

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/process"
)

// TestCommandHelper: with devspace-exec beside it, as make build and the
// image install them, the server runs its command supervisors (and so
// their launchers) from the helper; a helper from another build, or none,
// leaves the server on itself, and the log says why.
func TestCommandHelper(t *testing.T) {
	dir := t.TempDir()
	build := exec.Command("go", "build", "-trimpath", "-o", dir+"/", ".", "../devspace-exec")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	bin, helper := filepath.Join(dir, "devspace"), filepath.Join(dir, "devspace-exec")
	proj := filepath.Join(dir, "proj")
	os.Mkdir(proj, 0o755)
	port := freePort(t)
	env := append(os.Environ(), "DEVSPACE_STATE_DIR="+filepath.Join(dir, "state"), "DEVSPACE_PROJECTS="+proj,
		"DEVSPACE_LISTEN=127.0.0.1:"+port, "DEVSPACE_CONTROL_LISTEN=127.0.0.1:"+freePort(t),
		"DEVSPACE_METRICS_LISTEN=127.0.0.1:"+freePort(t), "DEVSPACE_ADMIN_LISTEN=127.0.0.1:"+freePort(t),
		"DEVSPACE_PUBLIC_BASE_URL=http://127.0.0.1:"+port,
		"DEVSPACE_LOG_LEVEL=info")
	initCmd := exec.Command(bin, "init")
	initCmd.Env = env
	if out, err := initCmd.CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	// serve starts the server, waits until it is ready with its idle
	// supervisors, stops it and returns the executables they ran and the
	// log.
	serve := func() (exes []string, log string) {
		t.Helper()
		var logs bytes.Buffer
		cmd := exec.Command(bin, "serve")
		cmd.Env = env
		cmd.Stderr = &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(15 * time.Second)
		// The helper is looked for and the supervisors start in the
		// background: wait for both idle supervisors.
		for time.Now().Before(deadline) && len(exes) < process.DefaultIdleSupervisors {
			if resp, err := http.Get("http://127.0.0.1:" + port + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					exes = supervisorExes(t, cmd.Process.Pid)
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		if len(exes) < process.DefaultIdleSupervisors {
			t.Fatalf("no ready server with supervisors:\n%s", logs.String())
		}
		return exes, logs.String()
	}

	// runs checks that every supervisor ran want and that the log says
	// why.
	runs := func(situation, want, because string) {
		t.Helper()
		exes, log := serve()
		for _, exe := range exes {
			if exe != want {
				t.Errorf("%s a supervisor runs %s, want %s\n%s", situation, exe, want, log)
			}
		}
		if !strings.Contains(log, because) {
			t.Errorf("%s the log does not say %q:\n%s", situation, because, log)
		}
	}

	runs("with the helper beside it", helper, "")
	// A helper from another build speaks another protocol: never mixed.
	if err := os.WriteFile(helper, []byte("#!/bin/sh\necho 0123456789abcdef01234567\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	runs("with a foreign helper", bin, "devspace-exec is from another build")
	if err := os.Remove(helper); err != nil {
		t.Fatal(err)
	}
	runs("without a helper", bin, "no devspace-exec beside it")
}

// supervisorExes returns the executables of pid's children that run as
// supervisors.
func supervisorExes(t *testing.T, pid int) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var exes []string
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The fields after the command name (in parentheses): state, ppid.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(pid) {
			continue
		}
		if args, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); !bytes.Contains(args, []byte(process.SupervisorCommand)) {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(child), "exe")); err == nil {
			exes = append(exes, exe)
		}
	}
	return exes
}
