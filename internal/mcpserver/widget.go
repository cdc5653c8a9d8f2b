package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/widget"
)

// skybridgeURI serves the same page under ChatGPT's legacy Apps SDK MIME
// type; MCP Apps hosts use widget.URI.
const skybridgeURI = "ui://devspace/project-app.skybridge.html"

// widgetMeta is the _meta linking a tool to the Project App (nil when
// DEVSPACE_WIDGETS is off).
func (s *Server) widgetMeta() map[string]any {
	m := widget.ToolMeta(s.opts.Widgets)
	if m != nil {
		m["openai/outputTemplate"] = skybridgeURI
	}
	return m
}

// registerWidget adds the Project App resources.
func registerWidget(s *Server) {
	if widget.ToolMeta(s.opts.Widgets) == nil {
		return
	}
	for _, r := range []struct{ uri, mime string }{{widget.URI, widget.MIMEMCPApp}, {skybridgeURI, widget.MIMESkybridge}} {
		uri, mime := r.uri, r.mime
		s.mcp.AddResource(&mcp.Resource{URI: uri, Name: "project-app", Title: "DevSpace Project App", MIMEType: mime,
			Meta: mcp.Meta(widget.ResourceMeta())},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: mime, Text: string(widget.HTML()),
					Meta: mcp.Meta(widget.ResourceMeta())}}}, nil
			})
	}
}
