package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// streamWatch sees the client's standalone event stream (GET /mcp): opened
// is closed when the server answered it with an event stream, ended when
// that stream's body ended (EOF or error) or was closed.
type streamWatch struct {
	base              http.RoundTripper
	opened, ended     chan struct{}
	openOnce, endOnce sync.Once
}

func newStreamWatch(base http.RoundTripper) *streamWatch {
	return &streamWatch{base: base, opened: make(chan struct{}), ended: make(chan struct{})}
}

func (w *streamWatch) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := w.base.RoundTrip(r)
	if err != nil || r.Method != http.MethodGet || resp.StatusCode != http.StatusOK ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, err
	}
	first := false
	w.openOnce.Do(func() { first = true; close(w.opened) })
	if first {
		resp.Body = &watchedBody{ReadCloser: resp.Body, end: func() { w.endOnce.Do(func() { close(w.ended) }) }}
	}
	return resp, nil
}

type watchedBody struct {
	io.ReadCloser
	end func()
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.end()
	}
	return n, err
}

func (b *watchedBody) Close() error {
	b.end()
	return b.ReadCloser.Close()
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
		"DEVSPACE_METRICS_LISTEN=127.0.0.1:"+freePort(t), "DEVSPACE_ADMIN_LISTEN=127.0.0.1:"+freePort(t), "DEVSPACE_PUBLIC_BASE_URL="+url,
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
	// ends it. Only the stateful revisions have it (2026-07-28 removed
	// it, and the client would pick that one).
	stream := newStreamWatch(testutil.Bearer(tok.AccessToken, http.DefaultTransport))
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url + "/mcp",
		HTTPClient: &http.Client{Transport: stream}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
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
	// Every process of the tree carries the marker in its environment
	// (the sleeps' command lines do not name it).
	mark := "devspace-shutdown-" + freePort(t) + "-" + strconv.Itoa(os.Getpid())
	call("exec_command", map[string]any{"operationId": "e", "shell": true,
		"command":     "setsid sh -c 'sleep 1000; :' & trap '' TERM; sh -c 'sleep 1000; :'",
		"environment": map[string]any{"DSMARK": mark}})
	// The setsid sh and its sleep, the inner sh (the shell execs it, with
	// SIGTERM ignored) and its sleep.
	for deadline := time.Now().Add(10 * time.Second); len(marked(mark)) < 4; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the command tree is not running: %v", marked(mark))
		}
	}
	select {
	case <-stream.opened:
	case <-time.After(10 * time.Second):
		t.Fatal("the client never opened the GET event stream")
	}
	select {
	case <-stream.ended:
		t.Fatal("the GET event stream ended before SIGTERM")
	default:
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
		t.Errorf("shutdown took %s, want at most 2 s; the server logged:\n%s", d, logs.String())
	}
	if left := marked(mark); len(left) > 0 {
		t.Errorf("processes survive the server: %v", left)
	}
	select {
	case <-stream.ended:
	default:
		t.Error("the GET event stream is still open after the server exited")
	}
}

// marked returns the processes whose environment or command line contains
// mark, with their command lines.
func marked(mark string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		for _, f := range []string{"environ", "cmdline"} {
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), f))
			if err == nil && bytes.Contains(b, []byte(mark)) {
				c, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
				out = append(out, e.Name()+" "+string(bytes.ReplaceAll(c, []byte{0}, []byte{' '})))
				break
			}
		}
	}
	return out
}
