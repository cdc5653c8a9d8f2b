package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/sandbox"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// execScopes lets grants run commands.
var execScopes = map[string]string{"DEVSPACE_OAUTH_SCOPES": "project:read project:write process:execute"}

// grantSession is a real grant's MCP session with an open execution on
// its first Project, as ChatGPT would hold one.
type grantSession struct {
	t     *testing.T
	cs    *mcp.ClientSession
	meta  map[string]any
	token string
	n     int
}

func openGrant(t *testing.T, env *apptest.Env, name string) *grantSession {
	t.Helper()
	c := env.Register(name, "http://127.0.0.1:9/callback", "client_secret_basic")
	tok := env.GrantFor(c, apptest.Approval{Scopes: []string{"project:read", "project:write", "process:execute"}})
	client := mcp.NewClient(&mcp.Implementation{Name: "console-test", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: env.URL + "/mcp",
		HTTPClient: &http.Client{Transport: testutil.Bearer(tok.AccessToken, http.DefaultTransport)}, DisableStandaloneSSE: true}
	cs, err := client.Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	g := &grantSession{t: t, cs: cs, meta: map[string]any{"openai/session": "s-" + name}, token: tok.AccessToken}
	if sc, res := g.call("project_control", map[string]any{"action": "open", "operationId": "open"}); res.IsError {
		t.Fatalf("open: %v", sc)
	}
	return g
}

func (g *grantSession) call(tool string, args map[string]any) (map[string]any, *mcp.CallToolResult) {
	g.t.Helper()
	res, err := g.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args, Meta: g.meta})
	if err != nil {
		g.t.Fatalf("call %s: %v", tool, err)
	}
	var sc map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &sc)
	return sc, res
}

// shell runs command in the grant's execution.
func (g *grantSession) shell(command string) map[string]any {
	g.t.Helper()
	g.n++
	sc, _ := g.call("exec_command", map[string]any{"operationId": "op" + strings.Repeat("x", g.n), "shell": true, "command": command})
	return sc
}

func needLandlock(t *testing.T) {
	t.Helper()
	if !sandbox.Probe().Available() {
		t.Skip("no Landlock on this kernel")
	}
}

// TestAttackCommandReachesConsole: a grant's command that reaches the
// console listener over loopback, as any local process can, gets no page,
// no stream and no action without a session, and cannot read the state
// that would mint a sign-in link.
func TestAttackCommandReachesConsole(t *testing.T) {
	needLandlock(t)
	env := apptest.Start(t, apptest.Options{Env: execScopes})
	g := openGrant(t, env, "Curious")
	// The Owner is signed in; the command knows the console's address but
	// not the session's place, so it guesses one, and tries the console's
	// own paths too.
	owner := &http.Client{Jar: newJar(t), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if resp, err := owner.Get(link(t, env)); err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the Owner's sign-in: %v", err)
	} else {
		resp.Body.Close()
	}
	console := env.ConsoleURL + "/s/guessed-place"
	for _, tc := range []struct{ cmd, want string }{
		{"curl -s -o /dev/null -w '%{http_code}' " + env.ConsoleURL + "/", "303"},
		{"curl -s -o /dev/null -w '%{http_code}' " + env.ConsoleURL + "/grants", "404"},
		{"curl -s -o /dev/null -w '%{http_code}' " + console + "/grants", "303"},
		{"curl -s -o /dev/null -w '%{http_code}' " + console + "/activity/stream", "401"},
		{"curl -s -o /dev/null -w '%{http_code}' " + console + "/health/diagnostic", "303"},
		{"curl -s -o /dev/null -w '%{http_code}' -d confirm=yes " + console + "/grants/revoke-all", "401"},
		{"curl -s -o /dev/null -w '%{http_code}' -H 'Host: localhost' -d confirm=yes -d password=x -d again=x " + console + "/owner/password", "401"},
		{"curl -s -o /dev/null -w '%{http_code}' -H 'Cookie: devspace_console=forged' " + console + "/grants", "303"},
		{"cat " + env.StateDir + "/auth.json >/dev/null 2>&1 && echo readable || echo refused", "refused"},
	} {
		sc := g.shell(tc.cmd)
		if out, _ := sc["output"].(string); strings.TrimSpace(out) != tc.want {
			t.Errorf("%s: %v, want %s", tc.cmd, sc, tc.want)
		}
	}
	if s := mcpStatus(t, env, g.token); s != http.StatusOK {
		t.Fatalf("the grant was hurt: %d", s)
	}
}
