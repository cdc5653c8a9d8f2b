package console_test

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/console"
	"github.com/devspace-dev/devspace/internal/control"
	"github.com/devspace-dev/devspace/internal/oauth"
	"github.com/devspace-dev/devspace/internal/store"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// fakeAdmin is the console's Admin over plain values; it records the
// actions it was asked for.
type fakeAdmin struct {
	mu       sync.Mutex
	grants   []oauth.GrantSummary
	revoked  []string
	allDone  int
	rotated  []string
	password string
	wait     time.Duration
	events   []store.AuditEvent
	clients  []*store.Client
	projects []console.ProjectDetail
}

func (f *fakeAdmin) ListGrants(context.Context, bool) ([]oauth.GrantSummary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]oauth.GrantSummary(nil), f.grants...), nil
}

func (f *fakeAdmin) RevokeGrant(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, g := range f.grants {
		if g.ID == id {
			f.grants = append(f.grants[:i], f.grants[i+1:]...)
			f.revoked = append(f.revoked, id)
			return nil
		}
	}
	return oauth.ErrGrantNotFound
}

func (f *fakeAdmin) RevokeAll(context.Context) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.grants)
	f.grants = nil
	f.allDone++
	return n, nil
}

func (f *fakeAdmin) RotatePassword(_ context.Context, pw []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rotated = append(f.rotated, string(pw))
	return 0, nil
}

func (f *fakeAdmin) CheckOwnerPassword(_ context.Context, pw []byte) (bool, time.Duration, error) {
	if f.wait > 0 {
		return false, f.wait, nil
	}
	return string(pw) == f.password, 0, nil
}

func (f *fakeAdmin) SessionsByGrant() map[string]int { return map[string]int{"grt_1": 2} }

func (f *fakeAdmin) AuditEvents(context.Context, int) ([]store.AuditEvent, error) {
	return f.events, nil
}

func (f *fakeAdmin) Connection() console.Connection {
	return console.Connection{MCPURL: "https://abc.trycloudflare.com/mcp", PublicURL: "https://abc.trycloudflare.com", QuickTunnel: true}
}

func (f *fakeAdmin) Health(context.Context) console.Health {
	return console.Health{Checks: []console.Check{{Name: "database", OK: true}, {Name: "command_sandbox", Info: true}},
		Facts: []console.Fact{{Label: "Version", Value: "dev"}}}
}

func (f *fakeAdmin) Doctor(context.Context) []console.Finding {
	return []console.Finding{{Level: "ok", Text: "configuration is valid"}, {Level: "warn", Text: "<b>not bold</b>"}}
}

func (f *fakeAdmin) Diagnostic(context.Context) ([]byte, error) { return []byte(`{"version":{}}`), nil }

func (f *fakeAdmin) ProjectDetails(context.Context) ([]console.ProjectDetail, error) {
	return f.projects, nil
}

// fakeActivity is an activity source over plain values.
type fakeActivity struct {
	mu          sync.Mutex
	calls       []console.Call
	commands    []console.Command
	tails       map[string]console.Output
	patches     []console.Patch
	undos       []console.Undo
	interrupted []string
	subs        []chan console.Call
}

func (a *fakeActivity) Recent(n int) []console.Call {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]console.Call(nil), a.calls...)
}

func (a *fakeActivity) Subscribe(ctx context.Context) <-chan console.Call {
	ch := make(chan console.Call, 16)
	a.mu.Lock()
	a.subs = append(a.subs, ch)
	a.mu.Unlock()
	go func() {
		<-ctx.Done()
		a.mu.Lock()
		defer a.mu.Unlock()
		for i, c := range a.subs {
			if c == ch {
				a.subs = append(a.subs[:i], a.subs[i+1:]...)
			}
		}
		close(ch)
	}()
	return ch
}

func (a *fakeActivity) publish(c console.Call) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append([]console.Call{c}, a.calls...)
	for _, s := range a.subs {
		select {
		case s <- c:
		default:
		}
	}
}

func (a *fakeActivity) Hour(now time.Time) []console.Minute {
	out := make([]console.Minute, 60)
	for i := range out {
		out[i] = console.Minute{Start: now.Add(time.Duration(i-60) * time.Minute), Running: i % 3,
			Tools:  map[string]console.ToolMinute{"read_files": {Calls: i, P50: time.Duration(i) * time.Millisecond, P99: time.Duration(2*i) * time.Millisecond}},
			Errors: map[string]int{"path_denied": i % 2}}
	}
	return out
}

func (a *fakeActivity) RunningCommands(context.Context) ([]console.Command, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]console.Command(nil), a.commands...), nil
}

func (a *fakeActivity) CommandTail(_ context.Context, id string, _ int) (console.Output, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	o, ok := a.tails[id]
	if !ok {
		return console.Output{}, fmt.Errorf("no command %q", id)
	}
	return o, nil
}

func (a *fakeActivity) InterruptCommand(_ context.Context, id string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.interrupted = append(a.interrupted, id)
	return nil
}

func (a *fakeActivity) RecentPatches(context.Context, int) ([]console.Patch, error) {
	return a.patches, nil
}
func (a *fakeActivity) UndoHistory(context.Context, int) ([]console.Undo, error) { return a.undos, nil }

// fakeCharts draws a chart as a titled SVG with the series' names.
type fakeCharts struct{}

func (fakeCharts) Lines(title, unit string, series []console.Series, width, height int) template.HTML {
	var names []string
	for _, s := range series {
		names = append(names, template.HTMLEscapeString(s.Name))
	}
	return template.HTML(fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" role="img"><title>%s</title><text x="4" y="16">%s</text></svg>`,
		width, height, template.HTMLEscapeString(title), strings.Join(names, ", ")))
}

// harness is a console served over loopback with fakes behind it.
type harness struct {
	t        *testing.T
	srv      *httptest.Server
	con      *console.Console
	admin    *fakeAdmin
	activity *fakeActivity
	clock    *testutil.Clock

	mu    sync.Mutex
	bases map[*http.Client]string // a signed-in client's place (/s/…)
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, clock: testutil.NewClock(time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)),
		admin: &fakeAdmin{password: "correct horse", grants: []oauth.GrantSummary{{ID: "grt_1", ClientName: "ChatGPT",
			Scopes: []string{"project:read"}, Projects: []oauth.GrantProject{{Ref: "prj_a", Label: "alpha"}}, RedirectHost: "chatgpt.com"}}},
		activity: &fakeActivity{tails: map[string]console.Output{}}}
	h.srv = httptest.NewUnstartedServer(nil)
	h.con = console.New(console.Options{Admin: h.admin, Activity: h.activity, Charts: fakeCharts{},
		ListenAddr: h.srv.Listener.Addr().String(), Now: h.clock.Now})
	h.srv.Config.Handler = h.con
	h.srv.Start()
	t.Cleanup(h.srv.Close)
	return h
}

// client returns a browser-like client: a cookie jar, no redirects
// followed.
func (h *harness) client() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// signIn signs a new client in with a fresh link.
func (h *harness) signIn() *http.Client {
	h.t.Helper()
	c := h.client()
	resp, err := c.Get(h.srv.URL + "/signin?token=" + url.QueryEscape(h.con.NewLink()))
	if err != nil {
		h.t.Fatal(err)
	}
	resp.Body.Close()
	base := strings.TrimSuffix(resp.Header.Get("Location"), "/")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(base, "/s/") || len(base) < len("/s/")+40 {
		h.t.Fatalf("sign-in: %s → %q", resp.Status, resp.Header.Get("Location"))
	}
	h.setBase(c, base)
	return c
}

// setBase records the place c's session is under.
func (h *harness) setBase(c *http.Client, base string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.bases == nil {
		h.bases = map[*http.Client]string{}
	}
	h.bases[c] = base
}

// url is the address of a console path for c: a session's pages are under
// its place, so a signed-in client's paths get its place, another's a
// place of no session (as a guess would be); /signin, /static/ and paths
// already under a place are the console's own.
func (h *harness) url(c *http.Client, path string) string {
	if strings.HasPrefix(path, "/signin") || strings.HasPrefix(path, "/static/") || strings.HasPrefix(path, "/s/") || path == "/favicon.ico" {
		return h.srv.URL + path
	}
	h.mu.Lock()
	base, ok := h.bases[c]
	h.mu.Unlock()
	if !ok {
		base = "/s/no-such-place"
	}
	return h.srv.URL + base + path
}

// get fetches path with c and returns the status and body.
func (h *harness) get(c *http.Client, path string, hdr map[string]string) (int, string) {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.url(c, path), nil)
	resp, body := h.do(c, req, hdr)
	return resp.StatusCode, body
}

// post sends a form with c; hdr may set Host, Origin or Sec-Fetch-Site.
func (h *harness) post(c *http.Client, path string, form url.Values, hdr map[string]string) (*http.Response, string) {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.url(c, path), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return h.do(c, req, hdr)
}

// do sends req with c, hdr's headers set (Host as the request's host),
// and returns the response with its whole body read (a stream's body is
// read until it ends).
func (h *harness) do(c *http.Client, req *http.Request, hdr map[string]string) (*http.Response, string) {
	h.t.Helper()
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp, b.String()
}

// csrfOf returns the CSRF token a page's forms carry.
func csrfOf(t *testing.T, page string) string {
	t.Helper()
	const marker = `name="csrf" value="`
	i := strings.Index(page, marker)
	if i < 0 {
		t.Fatalf("no CSRF token in page:\n%s", page)
	}
	rest := page[i+len(marker):]
	return rest[:strings.IndexByte(rest, '"')]
}

var _ console.Admin = (*fakeAdmin)(nil)
var _ console.Activity = (*fakeActivity)(nil)

func newJar(t *testing.T) *cookiejar.Jar {
	t.Helper()
	j, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func (f *fakeAdmin) RecentClients(context.Context, int) ([]*store.Client, error) {
	return f.clients, nil
}

func (f *fakeAdmin) ClearTools(context.Context, string) (control.ClearToolsResult, error) {
	return control.ClearToolsResult{}, control.ErrProjectNotFound
}

func (f *fakeAdmin) OrphanTools(context.Context) (control.OrphanTools, error) {
	return control.OrphanTools{}, nil
}

func (f *fakeAdmin) ClearOrphanTools(context.Context) (control.ClearToolsResult, error) {
	return control.ClearToolsResult{}, nil
}
