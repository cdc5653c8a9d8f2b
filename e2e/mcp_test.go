//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds an access token to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// conn is an MCP client session for one grant and one host conversation
// (the openai/session metadata the host sends on every tool call).
type conn struct {
	t       testing.TB
	cs      *mcp.ClientSession
	session string
}

// connect opens a go-sdk client session with the Streamable HTTP
// transport; the client picks the protocol revision.
func (e *endpoint) connect(t testing.TB, token, session string) *conn {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "devspace-e2e", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: e.base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token, e.client.Transport}}, DisableStandaloneSSE: true}
	cs, err := client.Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatalf("MCP connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return &conn{t: t, cs: cs, session: session}
}

// result is a tool result: its structured content and error code.
type result struct {
	sc      map[string]any
	isError bool
	code    string
	err     error // a protocol or HTTP error (no tool result at all)
}

// call calls a tool as the conn's host conversation.
func (c *conn) call(name string, args map[string]any) result {
	c.t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args,
		Meta: mcp.Meta{"openai/session": c.session}})
	if err != nil {
		return result{err: err}
	}
	var sc map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &sc)
	r := result{sc: sc, isError: res.IsError}
	if e, ok := sc["error"].(map[string]any); ok {
		r.code, _ = e["code"].(string)
	}
	return r
}

// must calls a tool and fails the test on any error.
func (c *conn) must(name string, args map[string]any) map[string]any {
	c.t.Helper()
	r := c.call(name, args)
	if r.err != nil || r.isError {
		c.t.Fatalf("%s(%v): err=%v result=%v", name, args, r.err, r.sc)
	}
	return r.sc
}

// wantCode calls a tool and checks it fails with code.
func (c *conn) wantCode(code, name string, args map[string]any) map[string]any {
	c.t.Helper()
	r := c.call(name, args)
	if r.err != nil || !r.isError || r.code != code {
		c.t.Errorf("%s(%v) = err %v, code %q, %v; want code %q", name, args, r.err, r.code, r.sc, code)
	}
	return r.sc
}

// projects returns label → projectRef from list_projects.
func (c *conn) projects() map[string]string {
	c.t.Helper()
	out := map[string]string{}
	for _, p := range c.must("list_projects", nil)["projects"].([]any) {
		m := p.(map[string]any)
		out[m["label"].(string)] = m["projectRef"].(string)
	}
	return out
}

// open opens a Project (new execution) for the conn's conversation.
func (c *conn) open(op, projectRef string) map[string]any {
	c.t.Helper()
	args := map[string]any{"action": "open", "operationId": op}
	if projectRef != "" {
		args["projectRef"] = projectRef
	}
	return c.must("project_control", args)
}

// shell runs a shell command and returns the exec_command result.
func (c *conn) shell(op, command string, extra map[string]any) map[string]any {
	c.t.Helper()
	args := map[string]any{"operationId": op, "shell": true, "command": command}
	for k, v := range extra {
		args[k] = v
	}
	return c.must("exec_command", args)
}
