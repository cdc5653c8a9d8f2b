package main

import (
	"bytes"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBinarySignals builds the real binary, initializes state, serves, and
// checks that SIGTERM shuts it down cleanly and promptly.
func TestBinarySignals(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "devspace")
	// Built as `make build` and the vet step build (static, -trimpath), so
	// the compiled packages come from the build cache.
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	proj := filepath.Join(dir, "proj")
	os.Mkdir(proj, 0o755)
	port := freePort(t)
	env := append(os.Environ(), "DEVSPACE_STATE_DIR="+filepath.Join(dir, "state"), "DEVSPACE_PROJECTS="+proj,
		"DEVSPACE_LISTEN=127.0.0.1:"+port, "DEVSPACE_CONTROL_LISTEN=127.0.0.1:"+freePort(t),
		"DEVSPACE_METRICS_LISTEN=127.0.0.1:"+freePort(t), "DEVSPACE_ADMIN_LISTEN=127.0.0.1:"+freePort(t),
		"DEVSPACE_PUBLIC_BASE_URL=http://127.0.0.1:"+port)
	initCmd := exec.Command(bin, "init")
	initCmd.Env = env
	if out, err := initCmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "Owner password") {
		t.Fatalf("init: %v\n%s", err, out)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		var logs bytes.Buffer
		serve := exec.Command(bin, "serve")
		serve.Env = env
		serve.Stderr = &logs
		if err := serve.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			resp, err := http.Get("http://127.0.0.1:" + port + "/healthz")
			if err == nil {
				resp.Body.Close()
				break
			}
			if time.Now().After(deadline) {
				serve.Process.Kill()
				t.Fatalf("server did not come up: %s", logs.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		hc := exec.Command(bin, "healthcheck")
		hc.Env = env
		if out, err := hc.CombinedOutput(); err != nil {
			t.Fatalf("healthcheck: %v %s", err, out)
		}
		start := time.Now()
		serve.Process.Signal(sig)
		done := make(chan error, 1)
		go func() { done <- serve.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%v: exit %v\n%s", sig, err, logs.String())
			}
		case <-time.After(15 * time.Second):
			serve.Process.Kill()
			t.Fatalf("%v: no exit within 15s", sig)
		}
		if !strings.Contains(logs.String(), "shutting down") {
			t.Errorf("%v: no graceful shutdown in the log:\n%s", sig, logs.String())
		}
		t.Logf("%v: stopped in %v", sig, time.Since(start))
	}
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}
