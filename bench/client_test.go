package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// transport is shared by every client of a harness: enough idle
// connections per host that 200 concurrent sessions do not churn sockets.
var transport = &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second}

// connect opens a stateful (2025-11-25) go-sdk session to endpoint, with a
// bearer token unless token is "".
func connect(ctx context.Context, endpoint, token string) (*mcp.ClientSession, error) {
	return connectVersion(ctx, endpoint, token, "2025-11-25")
}

// connectVersion opens a go-sdk session of protocol version: 2025-11-25
// is a stateful session, 2026-07-28 sends every call as its own request.
func connectVersion(ctx context.Context, endpoint, token, version string) (*mcp.ClientSession, error) {
	var rt http.RoundTripper = transport
	if token != "" {
		rt = testutil.Bearer(token, transport)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "devspace-bench", Version: "1"}, nil)
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, DisableStandaloneSSE: true, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: rt, Timeout: 60 * time.Second}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
}

// session is one simulated conversation: an MCP session with a host
// session identity (_meta["openai/session"]).
type session struct {
	cs   *mcp.ClientSession
	meta map[string]any
}

func newSession(ctx context.Context, endpoint, token, hostSession string) (*session, error) {
	cs, err := connect(ctx, endpoint, token)
	if err != nil {
		return nil, err
	}
	return &session{cs: cs, meta: map[string]any{"openai/session": hostSession}}, nil
}

// result is a decoded tool result.
type result struct {
	SC      map[string]any
	IsError bool
}

// Code is the tool error code, or "".
func (r result) Code() string {
	e, _ := r.SC["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (s *session) call(ctx context.Context, name string, args map[string]any) (result, error) {
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: s.meta})
	if err != nil {
		return result{}, fmt.Errorf("%s: %w", name, err)
	}
	var r result
	r.IsError = res.IsError
	switch sc := res.StructuredContent.(type) {
	case map[string]any:
		r.SC = sc
	case nil:
	default:
		b, _ := json.Marshal(sc)
		_ = json.Unmarshal(b, &r.SC)
	}
	return r, nil
}

// must calls a tool and fails the test on a transport or tool error.
func (s *session) must(t testing.TB, name string, args map[string]any) map[string]any {
	t.Helper()
	r, err := s.call(context.Background(), name, args)
	if err != nil {
		t.Fatal(err)
	}
	if r.IsError {
		t.Fatalf("%s: %v", name, r.SC)
	}
	return r.SC
}

func (s *session) Close() { _ = s.cs.Close() }

// grant runs the OAuth flow for the given Project labels and scopes.
func grant(t testing.TB, srv *server, labels []string, scopes []string) (apptest.Client, apptest.TokenResponse) {
	t.Helper()
	return srv.OAuth(t).Grant(apptest.Approval{Projects: labels, Scopes: scopes})
}

var allScopes = []string{"project:read", "project:write", "process:execute"}

// openSession connects and opens an execution on the grant's only (or the
// labelled) Project.
func openSession(t testing.TB, srv *server, token, hostSession, projectRef string) *session {
	t.Helper()
	s, err := newSession(context.Background(), srv.URL+"/mcp", token, hostSession)
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"action": "open", "operationId": "open-" + hostSession}
	if projectRef != "" {
		args["projectRef"] = projectRef
	}
	s.must(t, "project_control", args)
	return s
}

// durations summarizes latencies.
type durations []time.Duration

func (d durations) pct(p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p)
	return s[i]
}

func (d durations) p50() time.Duration { return d.pct(0.50) }
func (d durations) p99() time.Duration { return d.pct(0.99) }

// timeIt runs f n times and returns each run's wall time; setup runs
// before each, outside the clock.
func timeIt(n int, setup func(), f func()) durations {
	out := make(durations, 0, n)
	for range n {
		if setup != nil {
			setup()
		}
		start := time.Now()
		f()
		out = append(out, time.Since(start))
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
