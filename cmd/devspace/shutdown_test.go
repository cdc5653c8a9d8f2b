package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/apptest"
)

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// TestShutdownWithOpenStream: SIGTERM while a client holds the GET event
// stream open and a command tree (with a setsid daemon) runs. The server
// must end the stream at once, kill the tree first, and exit 0 within 2 s.
func TestShutdownWithOpenStream(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "devspace")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	proj := filepath.Join(dir, "proj")
	os.Mkdir(proj, 0o755)
	pw := filepath.Join(dir, "password")
	os.WriteFile(pw, []byte(apptest.Password), 0o600)
	port := freePort(t)
	url := "http://127.0.0.1:" + port
	env := append(os.Environ(), "DEVSPACE_STATE_DIR="+filepath.Join(dir, "state"), "DEVSPACE_PROJECTS="+proj,
		"DEVSPACE_LISTEN=127.0.0.1:"+port, "DEVSPACE_CONTROL_LISTEN=127.0.0.1:"+freePort(t),
		"DEVSPACE_METRICS_LISTEN=127.0.0.1:"+freePort(t), "DEVSPACE_PUBLIC_BASE_URL="+url,
		"DEVSPACE_OWNER_PASSWORD_FILE="+pw, "DEVSPACE_OAUTH_SCOPES=project:read project:write process:execute")
	initCmd := exec.Command(bin, "init")
	initCmd.Env = env
	if out, err := initCmd.CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	var logs bytes.Buffer
	serve := exec.Command(bin, "serve")
	serve.Env = env
	serve.Stderr = &logs
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer serve.Process.Kill()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(url + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not come up: %s", logs.String())
		}
	}
	_, tok := apptest.Attach(t, url).Grant(apptest.Approval{Projects: []string{"proj"},
		Scopes: []string{"project:read", "project:write", "process:execute"}})
	if tok.AccessToken == "" {
		t.Fatalf("no token: %+v", tok)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "shutdown-test", Version: "1"}, nil)
	// The standalone SSE stream (GET /mcp) stays open until the server
	// ends it.
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{tok.AccessToken, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	meta := map[string]any{"openai/session": "s"}
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		return res
	}
	call("project_control", map[string]any{"action": "open", "operationId": "o"})
	mark := "devspace-shutdown-" + freePort(t)
	call("exec_command", map[string]any{"operationId": "e", "shell": true,
		"command": "setsid sh -c 'sleep 1000; : " + mark + "' & trap '' TERM; sh -c 'sleep 1000; : " + mark + "'"})
	if len(marked(mark)) != 2 {
		t.Fatalf("the command tree is not running: %v", marked(mark))
	}

	start := time.Now()
	serve.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- serve.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, logs.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("no exit within 15 s\n%s", logs.String())
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("shutdown took %s, want at most 2 s", d)
	}
	if left := marked(mark); len(left) > 0 {
		t.Errorf("processes survive the server: %v", left)
	}
}

// marked returns the PIDs whose command line contains mark.
func marked(mark string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), mark) && !strings.Contains(string(b), "go test") {
			out = append(out, e.Name())
		}
	}
	return out
}
