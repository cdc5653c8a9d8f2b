package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
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

	"github.com/devspace-dev/devspace/internal/apptest"
)

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// devspaceBinary returns the binary the harnesses drive: -devspace, or
// ./cmd/devspace built once into a private temp dir (other work in the
// checkout may rebuild bin/devspace at any time).
func devspaceBinary(t testing.TB) string {
	t.Helper()
	if *flagBin != "" {
		p, err := filepath.Abs(*flagBin)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "devspace-bench-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "devspace")
		// With its command helper beside it, as make build and the image
		// install it.
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", dir+"/", "./cmd/devspace", "./cmd/devspace-exec")
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build devspace: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath
}

// serverOptions shape a real server.
type serverOptions struct {
	Projects []string          // labels of project directories to create; default {"alpha"}
	Scopes   string            // DEVSPACE_OAUTH_SCOPES; default read, write and execute
	Env      map[string]string // extra configuration
	Base     string            // directory for state and projects; default t.TempDir()
	// ExtraRoots are existing directories approved as Projects (label →
	// path), such as a generated tree shared between runs.
	ExtraRoots map[string]string
}

// server is a `devspace serve` process on loopback with its own state.
type server struct {
	t          testing.TB
	bin        string
	base       string
	StateDir   string
	Roots      map[string]string
	URL        string // public base URL
	MetricsURL string
	env        []string
	cmd        *exec.Cmd
	done       chan struct{}
	logs       *logSink
	StartedIn  time.Duration // exec to the first /readyz 200 of the last start
}

func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startServer initializes state (Owner password apptest.Password) and
// starts the server, waiting for /readyz.
func startServer(t testing.TB, opts serverOptions) *server {
	t.Helper()
	if opts.Projects == nil {
		opts.Projects = []string{"alpha"}
	}
	if opts.Scopes == "" {
		opts.Scopes = "project:read project:write process:execute"
	}
	base := opts.Base
	if base == "" {
		base = t.TempDir()
	}
	s := &server{t: t, bin: devspaceBinary(t), base: base, StateDir: filepath.Join(base, "state"), Roots: map[string]string{}}
	var specs []string
	for _, label := range opts.Projects {
		dir := filepath.Join(base, "projects", label)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		s.Roots[label] = dir
		specs = append(specs, label+"="+dir)
	}
	for label, dir := range opts.ExtraRoots {
		s.Roots[label] = dir
		specs = append(specs, label+"="+dir)
	}
	pwFile := filepath.Join(base, "owner-password")
	if err := os.WriteFile(pwFile, []byte(apptest.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	public, metrics := freePort(t), freePort(t)
	s.URL = "http://" + public
	s.MetricsURL = "http://" + metrics
	vars := map[string]string{
		"DEVSPACE_STATE_DIR":           s.StateDir,
		"DEVSPACE_PROJECTS":            strings.Join(specs, ","),
		"DEVSPACE_PUBLIC_BASE_URL":     s.URL,
		"DEVSPACE_LISTEN":              public,
		"DEVSPACE_CONTROL_LISTEN":      freePort(t),
		"DEVSPACE_METRICS_LISTEN":      metrics,
		"DEVSPACE_ADMIN_LISTEN":        freePort(t),
		"DEVSPACE_OAUTH_SCOPES":        opts.Scopes,
		"DEVSPACE_OWNER_PASSWORD_FILE": pwFile,
		"DEVSPACE_LOG_LEVEL":           "warn",
		// The mixed-load row runs 40 sessions on one grant; the default
		// per-grant cap (32) would close the least recently used ones.
		"DEVSPACE_MCP_MAX_SESSIONS_PER_GRANT": "128",
		"DEVSPACE_LOG_FORMAT":                 "json",
		"HOME":                                base,
		"PATH":                                os.Getenv("PATH"),
		"TMPDIR":                              filepath.Join(base, "tmp"),
	}
	for k, v := range opts.Env {
		vars[k] = v
	}
	_ = os.MkdirAll(vars["TMPDIR"], 0o700)
	for k, v := range vars {
		s.env = append(s.env, k+"="+v)
	}
	if _, err := os.Stat(filepath.Join(s.StateDir, "auth.json")); err != nil {
		cmd := exec.Command(s.bin, "init")
		cmd.Env = s.env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("devspace init: %v\n%s", err, out)
		}
	}
	s.logs = &logSink{}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// Start runs `devspace serve` and waits until /readyz answers 200.
func (s *server) Start() {
	s.t.Helper()
	if s.cmd != nil {
		s.t.Fatal("server already running")
	}
	cmd := exec.Command(s.bin, "serve")
	cmd.Env = s.env
	cmd.Stdout = s.logs
	cmd.Stderr = s.logs
	start := time.Now()
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.cmd = cmd
	s.done = make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(s.done)
	deadline := time.Now().Add(30 * time.Second)
	client := &http.Client{Timeout: time.Second}
	for {
		resp, err := client.Get(s.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				s.StartedIn = time.Since(start)
				return
			}
		}
		select {
		case <-s.done:
			s.cmd = nil
			s.t.Fatalf("devspace serve exited during startup:\n%s", s.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("devspace serve not ready after 30 s:\n%s", s.logs.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// PID is the server's process ID (0 when stopped).
func (s *server) PID() int {
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Stop sends SIGTERM and waits (SIGKILL after 30 s). Idempotent.
func (s *server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// Kill sends SIGKILL and waits for the exit.
func (s *server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
	s.cmd = nil
}

// OAuth drives the instance's OAuth endpoints with apptest's host-like
// flow.
func (s *server) OAuth(t testing.TB) *apptest.Env { return apptest.Attach(t, s.URL) }

// Metrics scrapes /metrics and returns the value of every sample without
// labels (name → value), plus labelled ones under their full text.
func (s *server) Metrics() (map[string]float64, error) {
	resp, err := http.Get(s.MetricsURL + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// RSS returns the server's resident set size in bytes from /proc.
func (s *server) RSS() int64 { return rssOf(s.PID()) }

func rssOf(pid int) int64 {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// logSink keeps the server's log output (bounded to its last 1 MiB).
type logSink struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Write(p)
	if l.b.Len() > 2<<20 {
		rest := append([]byte(nil), l.b.Bytes()[l.b.Len()-(1<<20):]...)
		l.b.Reset()
		l.b.Write(rest)
	}
	return len(p), nil
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var _ io.Writer = (*logSink)(nil)

func mustReq(url string) *http.Request {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		panic(err)
	}
	return req
}

// waitFor polls cond every 50 ms until it holds or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}
