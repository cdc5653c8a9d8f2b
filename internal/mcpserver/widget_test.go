package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/apptest"
)

func TestWidgetResources(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	_, tok := env.Grant(apptest.Approval{})
	cs := connect(t, env, tok.AccessToken, "2025-11-25")
	ctx := context.Background()
	for uri, mime := range map[string]string{
		"ui://devspace/project-app.html":           "text/html;profile=mcp-app",
		"ui://devspace/project-app.skybridge.html": "text/html+skybridge",
	} {
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("%s: %v", uri, err)
		}
		c := res.Contents[0]
		if c.MIMEType != mime || !strings.Contains(c.Text, "<html") || strings.Contains(c.Text, "https://") {
			t.Fatalf("%s: mime %q, %d bytes", uri, c.MIMEType, len(c.Text))
		}
	}
	// list_projects hands the widget the caller's Threads in result _meta.
	me := session("w")
	callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, me)
	_, res := callTool(t, cs, "list_projects", nil, me)
	if threads, _ := res.Meta["devspace/threads"].([]any); len(threads) != 1 {
		t.Fatalf("widget threads meta: %v", res.Meta)
	}
	if txt, ok := res.Content[0].(*mcp.TextContent); !ok || !strings.Contains(txt.Text, "Project") {
		t.Fatalf("content: %v", res.Content)
	}
}

func TestWidgetsOff(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Env: map[string]string{"DEVSPACE_WIDGETS": "off"}})
	_, tok := env.Grant(apptest.Approval{})
	cs := connect(t, env, tok.AccessToken, "2025-11-25")
	if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "ui://devspace/project-app.html"}); err == nil {
		t.Fatal("widget served with DEVSPACE_WIDGETS=off")
	}
	res, _ := cs.ListTools(context.Background(), nil)
	for _, tl := range res.Tools {
		if tl.Meta["openai/outputTemplate"] != nil {
			t.Fatalf("%s links the widget with DEVSPACE_WIDGETS=off", tl.Name)
		}
	}
}
