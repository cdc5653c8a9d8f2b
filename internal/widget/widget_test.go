package widget

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/go-cmp/cmp"

	"github.com/devspace-dev/devspace/internal/browsertest"
	"github.com/devspace-dev/devspace/internal/config"
)

func TestHTMLIsSelfContained(t *testing.T) {
	page := string(HTML())
	forbidden := []struct {
		name string
		re   *regexp.Regexp
	}{
		{"absolute URL", regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)},
		{"http URL", regexp.MustCompile(`(?i)https?://`)},
		{"external script", regexp.MustCompile(`(?i)<script[^>]*\bsrc\s*=`)},
		{"link element", regexp.MustCompile(`(?i)<link\b`)},
		{"CSS import", regexp.MustCompile(`(?i)@import`)},
		{"CSS url()", regexp.MustCompile(`(?i)\burl\s*\(`)},
		{"image, frame or media element", regexp.MustCompile(`(?i)<(img|iframe|object|embed|video|audio|source)\b`)},
		{"network API", regexp.MustCompile(`\b(fetch|XMLHttpRequest|WebSocket|EventSource|sendBeacon|importScripts)\b`)},
		// Data is rendered with textContent and setAttribute only.
		{"HTML parsing sink", regexp.MustCompile(`\b(innerHTML|outerHTML|insertAdjacentHTML|document\.write|DOMParser|createContextualFragment)\b`)},
		{"code evaluation", regexp.MustCompile(`\beval\s*\(|new Function\b|set(Timeout|Interval)\(\s*["']`)},
	}
	for _, f := range forbidden {
		if m := f.re.FindString(page); m != "" {
			t.Errorf("project-app.html contains a %s: %q", f.name, m)
		}
	}
	for _, want := range []string{"<main", "<header", "<nav", `role="alert"`, `role="status"`, ":focus-visible", "prefers-color-scheme", "openai:set_globals", "ui/notifications/tool-result", "tools/call", "project_thread_control", ThreadsMetaKey} {
		if !strings.Contains(page, want) {
			t.Errorf("project-app.html lacks %q", want)
		}
	}

	a := HTML()
	a[0] = 'X'
	if b := HTML(); b[0] == 'X' {
		t.Error("HTML returned shared storage; a caller's change leaked into the next call")
	}
}

func TestToolMeta(t *testing.T) {
	linked := map[string]any{
		"ui":                      map[string]any{"resourceUri": "ui://devspace/project-app.html"},
		"openai/outputTemplate":   "ui://devspace/project-app.html",
		"openai/widgetAccessible": true,
		"openai/widgetCSP":        map[string]any{"connect_domains": []string{}, "resource_domains": []string{}},
	}
	tests := []struct {
		mode string
		want map[string]any
	}{
		{config.WidgetsFull, linked},
		{config.WidgetsChanges, linked},
		{config.WidgetsOff, nil},
		{"", nil},
		{"FULL", nil}, // config lowercases; anything unexpected links nothing
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			got := ToolMeta(tt.mode)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ToolMeta(%q) mismatch (-want +got):\n%s", tt.mode, diff)
			}
		})
	}

	// Every call returns its own map, so callers may merge into it.
	ToolMeta(config.WidgetsFull)["ui"].(map[string]any)["visibility"] = []string{"app"}
	if _, ok := ToolMeta(config.WidgetsFull)["ui"].(map[string]any)["visibility"]; ok {
		t.Error("ToolMeta returned a shared map")
	}

	// The _meta must survive JSON as hosts read it.
	raw, err := json.Marshal(ToolMeta(config.WidgetsFull))
	if err != nil {
		t.Fatal(err)
	}
	if want := `"openai/widgetCSP":{"connect_domains":[],"resource_domains":[]}`; !strings.Contains(string(raw), want) {
		t.Errorf("ToolMeta JSON = %s, want it to contain %s", raw, want)
	}
}

func TestResourceMeta(t *testing.T) {
	raw, err := json.Marshal(ResourceMeta())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"csp":{"connectDomains":[],"resourceDomains":[]}`,
		`"openai/widgetCSP":{"connect_domains":[],"resource_domains":[]}`,
	} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("ResourceMeta JSON = %s, want it to contain %s", raw, want)
		}
	}
}

// recordedCall is a tool call as the test host saw it.
type recordedCall struct {
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

func TestProjectAppInBrowser(t *testing.T) {
	tests := []struct {
		bridge string
		// hostFailure is how the host's own failure (not a tool error) shows.
		hostFailure string
	}{
		{bridge: "openai", hostFailure: "bridge down"},
		{bridge: "mcp-apps", hostFailure: "-32603 — bridge down"},
	}
	for _, tt := range tests {
		t.Run(tt.bridge, func(t *testing.T) {
			srv := hostServer(t)
			b := browsertest.New(t)
			pageURL := srv.URL + "/" + tt.bridge
			if err := chromedp.Do(b.Ctx(), chromedp.Navigate(pageURL)); err != nil {
				t.Fatal(err)
			}
			w := &widgetPage{t: t, b: b, frame: widgetFrame(t, b)}

			// list_projects: the Projects view first, Threads from _meta.
			w.waitText("#panel-projects", "devspace-main", "2 resumable tasks", "scratch", "No resumable tasks", "3 projects · 3 resumable tasks")
			w.waitLuminance(false)
			shot(t, b, tt.bridge+"-projects")
			// The tabs follow the ARIA tabs pattern: arrow keys move between them.
			if err := chromedp.Do(w.b.Ctx(),
				chromedp.Focus(chromedp.CSS("#tab-projects"), chromedp.FromNode(w.frame)),
				chromedp.KeyEvent(kb.ArrowRight),
			); err != nil {
				t.Fatal(err)
			}
			w.waitText(`#tab-threads[aria-selected="true"][tabindex="0"]`, "Threads")
			threads := w.waitText("#panel-threads",
				"devspace-main", "Active", "Applied patch to 2 files", "go test ./... exited 0",
				"docs-site", "<img src=x onerror=alert(1)> saved",
				"scratch", "Completed", "thr_gamma")
			if strings.Contains(threads, "oldest entry") {
				t.Errorf("threads view shows more than the newest activity entries:\n%s", threads)
			}

			// show_changes arrives in the same widget; its view gets selected.
			w.host(`host.sendResult(fixtures.changes)`)
			w.waitText("#panel-changes", "Repository · 4 files · +130 −9", "internal/widget/widget.go", "+120", "−4", "docs/old.md", "docs/logo.png", "binary")
			w.waitText("#tabs", "Projects", "Threads", "Changes")
			shot(t, b, tt.bridge+"-changes")

			// Archive: busy while the host holds the call, then archived.
			w.click(`button[role=tab][data-view="threads"]`)
			w.click(`button[data-action="archive"][data-thread="thr_alpha"]`)
			w.waitText(`li[data-thread="thr_alpha"][aria-busy="true"]`, "Archiving…")
			w.waitText("#status", "Archiving the thread…")
			wantCalls := []recordedCall{{Name: "project_thread_control", Args: map[string]any{"action": "archive", "threadRef": "thr_alpha", "ifMatch": 3.0}}}
			if diff := cmp.Diff(wantCalls, w.calls()); diff != "" {
				t.Errorf("host tool calls mismatch (-want +got):\n%s", diff)
			}
			w.release()
			w.waitText(`li[data-thread="thr_alpha"][aria-busy="false"]`, "Archived", "Complete", "Close")
			w.waitText("#status", "Thread archived.")
			if n := w.count(`button[data-action="archive"][data-thread="thr_alpha"]`); n != 0 {
				t.Errorf("archived thread still offers Archive (%d buttons)", n)
			}

			// A tool error: the alert shows the code and the content text.
			w.click(`button[data-action="complete"][data-thread="thr_beta"]`)
			w.release()
			w.waitText(`[role=alert]`, "Could not complete the thread.", "project_thread_revision_conflict", "The Thread changed since you loaded it.")
			w.waitText(`li[data-thread="thr_beta"]`, "Active")
			shot(t, b, tt.bridge+"-threads-error")

			// A failure of the host itself.
			w.click(`button[data-action="close"][data-thread="thr_beta"]`)
			w.release()
			w.waitText(`[role=alert]`, "Could not close the thread.", tt.hostFailure)

			wantCalls = append(wantCalls,
				recordedCall{Name: "project_thread_control", Args: map[string]any{"action": "complete", "threadRef": "thr_beta", "ifMatch": 12.0}},
				recordedCall{Name: "project_thread_control", Args: map[string]any{"action": "close", "threadRef": "thr_beta", "ifMatch": 12.0}},
			)
			if diff := cmp.Diff(wantCalls, w.calls()); diff != "" {
				t.Errorf("host tool calls mismatch (-want +got):\n%s", diff)
			}

			// Dark theme from the host (openai:set_globals or host-context-changed).
			w.host(`host.setTheme("dark")`)
			w.waitLuminance(true)
			shot(t, b, tt.bridge+"-threads-dark")

			if tt.bridge == "mcp-apps" {
				checkHandshake(t, w)
			}

			// Data with markup stayed text: no element was created from it.
			if n := w.count("img"); n != 0 {
				t.Errorf("widget contains %d img elements", n)
			}
			checkNetwork(t, b, pageURL)
		})
	}
}

// checkHandshake asserts the MCP Apps messages the widget sent the host.
func checkHandshake(t *testing.T, w *widgetPage) {
	t.Helper()
	var msgs []map[string]any
	if err := json.Unmarshal([]byte(w.hostString(`JSON.stringify(host.messages)`)), &msgs); err != nil {
		t.Fatal(err)
	}
	var methods []string
	ids := map[any]bool{}
	for _, m := range msgs {
		if m["jsonrpc"] != "2.0" {
			t.Errorf("message without jsonrpc 2.0: %v", m)
		}
		method, _ := m["method"].(string)
		if method == "ui/notifications/size-changed" {
			continue
		}
		methods = append(methods, method)
		if id, ok := m["id"]; ok {
			if ids[id] {
				t.Errorf("request id %v reused", id)
			}
			ids[id] = true
		}
		if method == "ui/initialize" {
			p, _ := m["params"].(map[string]any)
			if p["protocolVersion"] == "" || p["appInfo"] == nil {
				t.Errorf("ui/initialize params = %v, want protocolVersion and appInfo", p)
			}
		}
	}
	want := []string{"ui/initialize", "ui/notifications/initialized", "tools/call", "tools/call", "tools/call"}
	if diff := cmp.Diff(want, methods); diff != "" {
		t.Errorf("widget messages mismatch (-want +got):\n%s", diff)
	}
}

// checkNetwork asserts the tab loaded the host page and nothing else.
func checkNetwork(t *testing.T, b *browsertest.Browser, pageURL string) {
	t.Helper()
	for _, r := range b.Requests() {
		if r != pageURL {
			t.Errorf("unexpected request %q; the widget must load nothing", r)
		}
	}
	if blocked := b.Blocked(); len(blocked) > 0 {
		t.Errorf("Blocked() = %q, want none", blocked)
	}
}

// shot saves a screenshot of the host page to the test's temporary directory
// and, when DEVSPACE_SCREENSHOT_DIR is set, there too.
func shot(t *testing.T, b *browsertest.Browser, name string) {
	t.Helper()
	dirs := []string{t.TempDir()}
	if d := os.Getenv("DEVSPACE_SCREENSHOT_DIR"); d != "" {
		dirs = append(dirs, d)
	}
	for _, dir := range dirs {
		path := filepath.Join(dir, "project-app-"+name+".png")
		if err := b.Screenshot(path); err != nil {
			t.Fatal(err)
		}
		png, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 1000 {
			t.Errorf("screenshot %s is not a plausible PNG (%d bytes)", path, len(png))
		}
	}
}

// widgetFrame returns the iframe node of the widget once its document is
// available to queries.
func widgetFrame(t *testing.T, b *browsertest.Browser) *chromedp.Node {
	t.Helper()
	deadline := time.Now().Add(browsertest.ActionTimeout)
	for {
		nodes, err := chromedp.Run(b.Ctx(), chromedp.Nodes(chromedp.CSS("iframe")))
		if err == nil && len(nodes) == 1 && nodes[0].ContentDocument != nil {
			return nodes[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("widget iframe has no document (err %v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// widgetPage drives the widget inside the host page.
type widgetPage struct {
	t     *testing.T
	b     *browsertest.Browser
	frame *chromedp.Node
}

// text returns the visible text of the first element in the widget matching
// sel, or "" when there is none.
func (w *widgetPage) text(sel string) string {
	ctx, cancel := context.WithTimeout(w.b.Ctx(), 500*time.Millisecond)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible, chromedp.FromNode(w.frame)))
	if err != nil {
		return ""
	}
	return s
}

// waitText waits until the element matching sel is visible and its text
// contains every string in want, and returns the text.
func (w *widgetPage) waitText(sel string, want ...string) string {
	w.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := w.text(sel)
		missing := ""
		for _, s := range want {
			if !strings.Contains(got, s) {
				missing = s
				break
			}
		}
		if got != "" && missing == "" {
			return got
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("widget %s: text lacks %q; got:\n%s", sel, missing, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// click clicks the element matching sel in the widget with the mouse.
func (w *widgetPage) click(sel string) {
	w.t.Helper()
	if err := chromedp.Do(w.b.Ctx(), chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible, chromedp.FromNode(w.frame))); err != nil {
		w.t.Fatalf("clicking %s: %v", sel, err)
	}
}

// host evaluates expr in the host page.
func (w *widgetPage) host(expr string) any {
	w.t.Helper()
	v, err := chromedp.Run(w.b.Ctx(), chromedp.Evaluate[any](expr))
	if err != nil && err != chromedp.ErrJSUndefined {
		w.t.Fatalf("host %s: %v", expr, err)
	}
	return v
}

// release answers the tool call the host holds, once the host has it (the
// MCP Apps bridge delivers the call asynchronously).
func (w *widgetPage) release() {
	w.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for w.host(`host.held.length`) == 0.0 {
		if time.Now().After(deadline) {
			w.t.Fatal("the host never received the widget's tool call")
		}
		time.Sleep(20 * time.Millisecond)
	}
	w.host(`host.release()`)
}

func (w *widgetPage) hostString(expr string) string {
	s, _ := w.host(expr).(string)
	return s
}

func (w *widgetPage) calls() []recordedCall {
	w.t.Helper()
	var calls []recordedCall
	if err := json.Unmarshal([]byte(w.hostString(`JSON.stringify(host.calls)`)), &calls); err != nil {
		w.t.Fatal(err)
	}
	return calls
}

// luminance returns the relative luminance (0 black, 1 white) of the widget's
// body background, read through the DevTools protocol.
func (w *widgetPage) luminance() float64 {
	w.t.Helper()
	styles, err := chromedp.Run(w.b.Ctx(), chromedp.ComputedStyle(chromedp.CSS("body"), chromedp.FromNode(w.frame)))
	if err != nil {
		w.t.Fatal(err)
	}
	for _, s := range styles {
		if s.Name != "background-color" {
			continue
		}
		var r, g, b float64
		if _, err := fmt.Sscanf(s.Value, "rgb(%f, %f, %f)", &r, &g, &b); err != nil {
			w.t.Fatalf("background-color %q: %v", s.Value, err)
		}
		return (0.2126*r + 0.7152*g + 0.0722*b) / 255
	}
	w.t.Fatal("body has no background-color")
	return 0
}

// waitLuminance waits until the body background is dark (below 0.2) or
// light (above 0.8).
func (w *widgetPage) waitLuminance(dark bool) {
	w.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l := w.luminance()
		if dark && l < 0.2 || !dark && l > 0.8 {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("body background luminance %.2f, want dark=%v", l, dark)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// count returns how many elements in the widget match sel.
func (w *widgetPage) count(sel string) int {
	w.t.Helper()
	nodes, err := chromedp.Run(w.b.Ctx(), chromedp.Nodes(chromedp.CSS(sel), chromedp.AtLeast(0), chromedp.FromNode(w.frame)))
	if err != nil {
		w.t.Fatalf("querying %s: %v", sel, err)
	}
	return len(nodes)
}

// hostServer serves the test host page at /openai (the Apps SDK bridge:
// window.openai injected before the widget's script) and /mcp-apps (the MCP
// Apps postMessage bridge). Both embed the widget with srcdoc, so the tab
// loads nothing but the host page. The frame is not sandboxed: Chromium runs
// a sandboxed frame as a separate target, out of reach of browsertest's
// network guard and request log; the widget's bridge code does not depend on
// it (it talks to window.parent only through postMessage).
func hostServer(t *testing.T) *httptest.Server {
	t.Helper()
	widgetJSON, err := json.Marshal(string(HTML()))
	if err != nil {
		t.Fatal(err)
	}
	fixturesJSON, err := json.Marshal(fixtures(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	page := fmt.Sprintf(hostPage, widgetJSON, fixturesJSON)
	mux := http.NewServeMux()
	serve := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	}
	mux.HandleFunc("GET /openai", serve)
	mux.HandleFunc("GET /mcp-apps", serve)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// fixtures returns the tool results the host hands the widget and the
// replies it gives to the widget's tool calls, in order.
func fixtures(now time.Time) map[string]any {
	ago := func(d time.Duration) string { return now.Add(-d).UTC().Format(time.RFC3339) }
	return map[string]any{
		"projects": map[string]any{
			"content": []any{map[string]any{"type": "text", "text": "3 Projects."}},
			"structuredContent": map[string]any{"projects": []any{
				map[string]any{"projectRef": "prj_main", "label": "devspace-main", "resumableTaskCount": 2},
				map[string]any{"projectRef": "prj_docs", "label": "docs-site", "resumableTaskCount": 1},
				map[string]any{"projectRef": "prj_scratch", "label": "scratch", "resumableTaskCount": 0},
			}},
			"_meta": map[string]any{ThreadsMetaKey: []any{
				map[string]any{
					"threadRef": "thr_alpha", "projectLabel": "devspace-main", "status": "active", "revision": 3,
					"updatedAt": ago(5 * time.Minute),
					"activity": []any{
						map[string]any{"seq": 1, "kind": "note", "summary": "oldest entry", "at": ago(3 * time.Hour)},
						map[string]any{"seq": 2, "kind": "command", "summary": "make lint exited 0", "at": ago(2 * time.Hour)},
						map[string]any{"seq": 3, "kind": "command", "summary": "make build exited 0", "at": ago(100 * time.Minute)},
						map[string]any{"seq": 4, "kind": "patch", "summary": "Applied patch to 1 file", "at": ago(80 * time.Minute)},
						map[string]any{"seq": 5, "kind": "command", "summary": "go vet exited 0", "at": ago(60 * time.Minute)},
						map[string]any{"seq": 7, "kind": "patch", "summary": "Applied patch to 2 files", "at": ago(6 * time.Minute)},
						map[string]any{"seq": 6, "kind": "command", "summary": "go test ./... exited 0", "at": ago(20 * time.Minute)},
					},
				},
				map[string]any{
					"threadRef": "thr_beta", "projectLabel": "docs-site", "status": "active", "revision": 12,
					"updatedAt": ago(26 * time.Hour),
					"activity": []any{
						map[string]any{"seq": 2, "kind": "checkpoint", "summary": "<img src=x onerror=alert(1)> saved", "at": ago(26 * time.Hour)},
					},
				},
				map[string]any{
					"threadRef": "thr_gamma", "projectLabel": "scratch", "status": "completed", "revision": 1,
					"updatedAt": ago(9 * 24 * time.Hour), "activity": []any{},
				},
			}},
		},
		"changes": map[string]any{
			"content": []any{map[string]any{"type": "text", "text": "4 files changed."}},
			"structuredContent": map[string]any{
				"source": "repository",
				"files": []any{
					map[string]any{"path": "internal/widget/widget.go", "status": "modified", "added": 120, "removed": 4},
					map[string]any{"path": "internal/widget/project-app.html", "status": "added", "added": 10, "removed": 0},
					map[string]any{"path": "docs/old.md", "status": "deleted", "added": 0, "removed": 5},
					map[string]any{"path": "docs/logo.png", "status": "added", "binary": true, "added": nil, "removed": nil},
				},
			},
			"_meta": map[string]any{},
		},
		"replies": []any{
			map[string]any{"result": map[string]any{
				"content": []any{map[string]any{"type": "text", "text": "Thread archived."}},
				"structuredContent": map[string]any{"thread": map[string]any{
					"threadRef": "thr_alpha", "projectLabel": "devspace-main", "status": "archived", "revision": 4,
					"updatedAt": ago(0), "activity": []any{map[string]any{"seq": 8, "kind": "lifecycle", "summary": "Archived", "at": ago(0)}},
				}},
			}},
			map[string]any{"result": map[string]any{
				"isError": true,
				"content": []any{map[string]any{"type": "text", "text": "The Thread changed since you loaded it. Reload and try again."}},
				"structuredContent": map[string]any{"error": map[string]any{
					"code": "project_thread_revision_conflict", "category": "conflict", "retryable": true, "nextActions": []any{"reload"},
				}},
			}},
			map[string]any{"fail": "bridge down"},
		},
	}
}

// hostPage is the test host: %[1]s is the widget HTML and %[2]s the fixtures,
// both as JSON (json.Marshal escapes "<", so neither can end the script).
// host.release() answers the tool calls the host holds, so a test can look
// at the busy state first.
const hostPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Widget host</title>
<link rel="icon" href="data:,">
<style>
body { margin: 0; padding: 16px; background: #8a9099; font: 14px sans-serif; }
iframe { display: block; width: 640px; height: 720px; border: 0; border-radius: 12px; }
</style></head>
<body>
<script id="widget" type="application/json">%[1]s</script>
<script id="fixtures" type="application/json">%[2]s</script>
<script>
"use strict";
const widgetHTML = JSON.parse(document.getElementById("widget").textContent);
const fixtures = JSON.parse(document.getElementById("fixtures").textContent);
const frame = document.createElement("iframe");
frame.title = "DevSpace Project App";
const host = window.host = { calls: [], messages: [], held: [], replies: fixtures.replies.slice() };
host.release = () => { const h = host.held.splice(0); h.forEach(f => f()); };

if (location.pathname === "/openai") {
  host.initial = JSON.stringify({ theme: "light", toolOutput: fixtures.projects.structuredContent, toolResponseMetadata: fixtures.projects._meta });
  // Values cross into the frame as JSON so they belong to its realm.
  host.callTool = (name, argsJSON) => new Promise((resolve, reject) => {
    host.calls.push({ name, args: JSON.parse(argsJSON) });
    const r = host.replies.shift() || { fail: "no reply queued" };
    host.held.push(() => r.fail ? reject(new Error(r.fail)) : resolve(JSON.stringify(r.result)));
  });
  const boot = "<script>(function () { var H = parent.host, g = JSON.parse(H.initial);" +
    " window.openai = { theme: g.theme, locale: 'en-US', displayMode: 'inline', toolOutput: g.toolOutput, toolResponseMetadata: g.toolResponseMetadata," +
    " callTool: function (n, a) { return H.callTool(n, JSON.stringify(a)).then(function (s) { return JSON.parse(s); }); } }; })();<\/script>";
  frame.srcdoc = widgetHTML.replace("<head>", "<head>" + boot);
  host.setGlobals = (json) => {
    const w = frame.contentWindow, g = w.JSON.parse(json);
    Object.assign(w.openai, g);
    w.dispatchEvent(new w.CustomEvent("openai:set_globals", { detail: { globals: g } }));
  };
  host.setTheme = (theme) => host.setGlobals(JSON.stringify({ theme }));
  host.sendResult = (r) => host.setGlobals(JSON.stringify({ toolOutput: r.structuredContent, toolResponseMetadata: r._meta }));
} else {
  frame.srcdoc = widgetHTML;
  const send = (m) => frame.contentWindow.postMessage(Object.assign({ jsonrpc: "2.0" }, m), "*");
  window.addEventListener("message", (ev) => {
    if (ev.source !== frame.contentWindow) return;
    const m = ev.data;
    host.messages.push(m);
    if (m.method === "ui/initialize") {
      send({ id: m.id, result: { protocolVersion: m.params.protocolVersion, hostInfo: { name: "test-host", version: "1.0.0" },
        hostCapabilities: { serverTools: {} }, hostContext: { theme: "light", locale: "en-US", displayMode: "inline" } } });
    } else if (m.method === "ui/notifications/initialized") {
      send({ method: "ui/notifications/tool-result", params: fixtures.projects });
    } else if (m.method === "tools/call") {
      host.calls.push({ name: m.params.name, args: m.params.arguments });
      const r = host.replies.shift() || { fail: "no reply queued" };
      host.held.push(() => send(r.fail ? { id: m.id, error: { code: -32603, message: r.fail } } : { id: m.id, result: r.result }));
    }
  });
  host.setTheme = (theme) => send({ method: "ui/notifications/host-context-changed", params: { theme } });
  host.sendResult = (r) => send({ method: "ui/notifications/tool-result", params: r });
}
document.body.appendChild(frame);
</script>
</body></html>
`
