// Package widget holds the Project App: the one self-contained HTML page that
// ChatGPT (and any other MCP Apps host) renders next to list_projects and
// show_changes results, and the tool metadata that links a tool to it.
//
// The page shows the grant's Projects with resumable Task counts (the
// structuredContent of list_projects), the caller's private Threads with
// status and recent activity (result _meta["devspace/threads"], which only the
// widget sees), and the change summary (the structuredContent of
// show_changes). Its Thread buttons call the app-only tool
// project_thread_control through the host: window.openai.callTool when the
// Apps SDK bridge is present, else MCP Apps "tools/call" over postMessage.
//
// The page loads nothing: its CSS and JavaScript are inline and it makes no
// network requests, so it works under the host's default connect-src 'none'.
package widget

import (
	_ "embed"
	"slices"

	"github.com/devspace-dev/devspace/internal/config"
)

// URI is the resource URI of the Project App. The same URI serves both MIME
// types; hosts pick the variant they understand.
const URI = "ui://devspace/project-app.html"

// MIMEMCPApp is the MCP Apps MIME type of the resource.
const MIMEMCPApp = "text/html;profile=mcp-app"

// MIMESkybridge is the MIME type ChatGPT's Apps SDK uses for the
// openai/outputTemplate variant of the resource.
const MIMESkybridge = "text/html+skybridge"

// ThreadsMetaKey is the result _meta key under which a tool hands the widget
// the caller's Threads: [{threadRef, projectLabel, status, updatedAt,
// revision, activity:[{seq, kind, summary, at}]}]. _meta reaches the widget
// only, never the model.
const ThreadsMetaKey = "devspace/threads"

//go:embed project-app.html
var html []byte

// HTML returns the Project App page. Each call returns a new copy, so callers
// may keep or modify it.
func HTML() []byte { return slices.Clone(html) }

// ToolMeta returns the _meta entries that link a tool's results to the
// Project App, for mode, a DEVSPACE_WIDGETS value (config.Widgets*): the MCP Apps
// ui.resourceUri, ChatGPT's openai/outputTemplate alias,
// openai/widgetAccessible (the widget may call tools, which
// project_thread_control needs) and an openai/widgetCSP that allows no
// connect or resource domains. It returns nil for config.WidgetsOff and for any value
// it does not know, so an unexpected mode links nothing.
//
// ToolMeta does not decide which tools link the widget: in config.WidgetsFull that is
// list_projects and show_changes, in config.WidgetsChanges only show_changes. The
// returned map is new on every call; merge it into the tool's _meta (its "ui"
// entry into an existing "ui" map, such as one carrying visibility).
func ToolMeta(mode string) map[string]any {
	switch mode {
	case config.WidgetsFull, config.WidgetsChanges:
	default:
		return nil
	}
	return map[string]any{
		"ui":                      map[string]any{"resourceUri": URI},
		"openai/outputTemplate":   URI,
		"openai/widgetAccessible": true,
		"openai/widgetCSP":        widgetCSP(),
	}
}

// ResourceMeta returns the _meta for the resource contents of the Project App
// (resources/read): the MCP Apps ui.csp and ChatGPT's openai/widgetCSP, both
// with no connect or resource domains, and a border preference. The returned
// map is new on every call.
func ResourceMeta() map[string]any {
	return map[string]any{
		"ui": map[string]any{
			"csp":           map[string]any{"connectDomains": []string{}, "resourceDomains": []string{}},
			"prefersBorder": true,
		},
		"openai/widgetCSP":           widgetCSP(),
		"openai/widgetPrefersBorder": true,
		"openai/widgetDescription":   "Shows the Projects of this connection, your Threads with their recent activity, and change summaries.",
	}
}

func widgetCSP() map[string]any {
	return map[string]any{"connect_domains": []string{}, "resource_domains": []string{}}
}
