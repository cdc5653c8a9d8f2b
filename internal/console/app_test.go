package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/browsertest"
)

func TestMain(m *testing.M) { apptest.Main(m) }

// mcpStatus is the status /mcp answers an initialize with token.
func mcpStatus(t *testing.T, env *apptest.Env, token string) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, env.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// link returns a fresh one-time sign-in link of env's console.
func link(t *testing.T, env *apptest.Env) string {
	t.Helper()
	l, err := env.App.ConsoleLink(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(l, env.ConsoleURL+"/signin?token=") {
		t.Fatalf("link %q is not on the console %s", l, env.ConsoleURL)
	}
	return l
}

// tabTo presses Tab until the focused element matches selector (at most
// 80 times), as a keyboard-only Owner would.
func tabTo(t *testing.T, b *browsertest.Browser, selector string) {
	t.Helper()
	for range 80 {
		if err := chromedp.Do(b.Ctx(), chromedp.KeyEvent(kb.Tab)); err != nil {
			t.Fatal(err)
		}
		ok, err := chromedp.Run(b.Ctx(), chromedp.Evaluate[bool](fmt.Sprintf(`!!document.activeElement && document.activeElement.matches(%q)`, selector)))
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
	}
	t.Fatalf("Tab never reached %s", selector)
}

// placeOf returns the address the browser's session's pages are under
// (the console's URL and "/s/<place>", from where the browser is) and its
// path alone (as the pages' links write it).
func placeOf(t *testing.T, b *browsertest.Browser) (base, path string) {
	t.Helper()
	loc, err := chromedp.Run(b.Ctx(), chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.SplitN(u.Path, "/", 4) // "", "s", place, rest
	if len(parts) < 3 || parts[1] != "s" || parts[2] == "" {
		t.Fatalf("the browser is not under a session's place: %s", loc)
	}
	path = "/s/" + parts[2]
	return u.Scheme + "://" + u.Host + path, path
}

// pressEnter activates the focused element with the keyboard.
func pressEnter(t *testing.T, b *browsertest.Browser) {
	t.Helper()
	if err := chromedp.Do(b.Ctx(), chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
}

// TestConsoleInChromium: the Owner signs in with a `devspace admin` link,
// the link cannot be used again, and revoking a real grant from the Grants
// page with the keyboard alone makes its token get 401 at /mcp. The pages
// load nothing from anywhere else and report no error.
func TestConsoleInChromium(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	c := env.Register("ChatGPT <script>alert(1)</script>", "http://127.0.0.1:9/callback", "client_secret_basic")
	tok := env.GrantFor(c, apptest.Approval{})
	if s := mcpStatus(t, env, tok.AccessToken); s != http.StatusOK {
		t.Fatalf("/mcp before revocation: %d", s)
	}
	b := browsertest.New(t)
	l := link(t, env)
	if err := chromedp.Do(b.Ctx(), chromedp.Navigate(l), chromedp.WaitVisible(chromedp.CSS(`#mcp-url`))); err != nil {
		t.Fatal(err)
	}
	loc, err := chromedp.Run(b.Ctx(), chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	mcpURL, err := chromedp.Run(b.Ctx(), chromedp.Value(chromedp.CSS(`#mcp-url`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(loc, env.ConsoleURL+"/s/") || strings.Contains(loc, "token") {
		t.Errorf("the token stayed in the address bar, or the page is not under its session's place: %s", loc)
	}
	base, basePath := placeOf(t, b)
	if mcpURL != env.URL+"/mcp" {
		t.Errorf("MCP URL %q, want %q", mcpURL, env.URL+"/mcp")
	}
	// The copy button works from the keyboard.
	tabTo(t, b, `button[data-copy]`)
	pressEnter(t, b)
	if err := chromedp.Do(b.Ctx(), chromedp.WaitVisible(chromedp.CSS(`#copy-status`))); err != nil {
		t.Fatal(err)
	}

	// Replay of the same link.
	if err := chromedp.Do(b.Ctx(), chromedp.Navigate(l)); err != nil {
		t.Fatal(err)
	}
	text, err := chromedp.Run(b.Ctx(), chromedp.Text(chromedp.CSS(`main`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "expired or was already used") {
		t.Fatalf("replayed link: %q", text)
	}

	// Still signed in (the replay did not end the session); to the Grants
	// page and revoke, by keyboard.
	if err := chromedp.Do(b.Ctx(), chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`nav`))); err != nil {
		t.Fatal(err)
	}
	tabTo(t, b, `nav a[href="`+basePath+`/grants"]`)
	pressEnter(t, b)
	if err := chromedp.Do(b.Ctx(), chromedp.WaitVisible(chromedp.CSS(`.grant`))); err != nil {
		t.Fatal(err)
	}
	html, _ := chromedpHTML(b)
	if strings.Contains(html, "<script>alert(1)") || !strings.Contains(html, "unverified") || !strings.Contains(html, "127.0.0.1:9") {
		t.Errorf("grant card: client name not escaped, unlabelled, or without its redirect host:\n%s", html)
	}
	tabTo(t, b, `.grant button.danger`)
	pressEnter(t, b)
	if err := chromedp.Do(b.Ctx(), chromedp.WaitVisible(chromedp.CSS(`.flash`))); err != nil {
		html, _ := chromedpHTML(b)
		t.Fatalf("no message after revoke: %v\n%s\nlogs: %s", err, html, env.Logs.String())
	}
	if text, err = chromedp.Run(b.Ctx(), chromedp.Text(chromedp.CSS(`.flash`))); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "Grant revoked") {
		t.Fatalf("after revoke: %q", text)
	}
	if s := mcpStatus(t, env, tok.AccessToken); s != http.StatusUnauthorized {
		t.Fatalf("/mcp after revoking from the console: %d, want 401", s)
	}
	for _, r := range b.Requests() {
		if !strings.HasPrefix(r, env.ConsoleURL+"/") {
			t.Errorf("the console loaded %s", r)
		}
	}
	for _, e := range b.ConsoleErrors() {
		// The replayed link's 403 is the test's own doing.
		if !strings.Contains(e, "status of 403") || !strings.Contains(e, "/signin?token=") {
			t.Errorf("console error: %q", e)
		}
	}
}

func chromedpHTML(b *browsertest.Browser) (string, error) {
	return chromedp.Run(b.Ctx(), chromedp.OuterHTML(chromedp.CSS("html")))
}

// overflow is how far the page is wider than the viewport.
const overflow = `document.documentElement.scrollWidth - window.innerWidth`

// TestConsoleLayout: every page at a phone's 390 px and a desktop's
// 1,280 px scrolls only vertically and reports no error. With
// DEVSPACE_SCREENSHOT_DIR set, the screenshots the README shows are
// written there.
func TestConsoleLayout(t *testing.T) {
	out := os.Getenv("DEVSPACE_SCREENSHOT_DIR")
	opts := apptest.Options{Projects: []string{"web-frontend", "api-server-with-a-rather-long-name"}}
	if out != "" {
		// The README's screenshots show paths a reader's install could
		// have, not a test's temporary directory.
		opts.Dir = filepath.Join(os.TempDir(), "devspace")
		if err := os.RemoveAll(opts.Dir); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(opts.Dir) })
	}
	env := apptest.Start(t, opts)
	env.Grant(apptest.Approval{Projects: []string{"web-frontend", "api-server-with-a-rather-long-name"}, Scopes: []string{"project:read", "project:write"}})
	for _, width := range []int64{390, 1280} {
		b := browsertest.New(t)
		if err := chromedp.Do(b.Ctx(), chromedp.EmulateViewport(width, 900), chromedp.Navigate(link(t, env)), chromedp.WaitVisible(chromedp.CSS(`nav`))); err != nil {
			t.Fatal(err)
		}
		base, _ := placeOf(t, b)
		for _, page := range []string{"", "grants", "activity", "health", "charts", "projects", "grants/revoke-all", "owner/password"} {
			if err := chromedp.Do(b.Ctx(), chromedp.Navigate(base+"/"+page), chromedp.WaitVisible(chromedp.CSS(`main h1`))); err != nil {
				t.Fatal(err)
			}
			over, err := chromedp.Run(b.Ctx(), chromedp.Evaluate[int](overflow))
			if err != nil {
				t.Fatal(err)
			}
			if over > 0 {
				t.Errorf("/%s at %d px is %d px too wide", page, width, over)
			}
			name := strings.ReplaceAll(page, "/", "-")
			if name == "" {
				name = "connect"
			}
			if out != "" && (name == "connect" || name == "grants" || name == "health") {
				if err := b.Screenshot(filepath.Join(out, fmt.Sprintf("console-%s-%d.png", name, width))); err != nil {
					t.Fatal(err)
				}
			}
		}
		if errs := b.ConsoleErrors(); len(errs) > 0 {
			t.Errorf("at %d px: console errors %q", width, errs)
		}
	}
}

// TestConsoleNotOnPublicListener: the console's routes do not exist on
// the public listener, and its session cookie opens nothing there.
func TestConsoleNotOnPublicListener(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	jar := newJar(t)
	cl := &http.Client{Jar: jar}
	resp, err := cl.Get(link(t, env))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	place := resp.Request.URL // where the sign-in's redirect led: the session's place
	cookies := jar.Cookies(place)
	if resp.StatusCode != http.StatusOK || len(cookies) != 1 || !strings.HasPrefix(place.Path, "/s/") {
		t.Fatalf("sign-in: %d at %s, cookies %v", resp.StatusCode, place, cookies)
	}
	base := strings.TrimSuffix(place.Path, "/")
	for _, path := range []string{"/signin", "/grants", "/activity", "/activity/stream", "/health", "/health/diagnostic", "/charts", "/projects", "/static/console.js",
		base + "/", base + "/grants", base + "/activity/stream", base + "/health/diagnostic"} {
		req, _ := http.NewRequest(http.MethodGet, env.URL+path, nil)
		req.AddCookie(cookies[0])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("public %s: %d, want 404", path, resp.StatusCode)
		}
	}
	for _, path := range []string{"/grants/revoke", "/grants/revoke-all", "/signin", base + "/grants/revoke-all"} {
		req, _ := http.NewRequest(http.MethodPost, env.URL+path, strings.NewReader("confirm=yes"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(cookies[0])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("public POST %s: %d, want 404", path, resp.StatusCode)
		}
	}
	// The cookie is no bearer token.
	req, _ := http.NewRequest(http.MethodPost, env.URL+"/mcp", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	req.AddCookie(cookies[0])
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/mcp with the console cookie: %d, want 401", resp.StatusCode)
	}
	if got, _ := env.App.RecentAudit(context.Background()); len(got) > 0 && got[0] == "revoke_all" {
		t.Fatal("something revoked every grant")
	}
}

// TestOwnerActionsEndConsoleSessions: revoke-all and password rotation,
// from the CLI's control API as much as from the console, sign every
// console session out.
func TestOwnerActionsEndConsoleSessions(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	for _, action := range []struct {
		name string
		do   func() error
	}{
		{"revoke-all", func() error { _, err := env.App.RevokeAll(context.Background()); return err }},
		{"rotate password", func() error {
			_, err := env.App.RotatePassword(context.Background(), []byte(apptest.Password+" 2"))
			return err
		}},
	} {
		jar := newJar(t)
		cl := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := cl.Get(link(t, env))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		base := env.ConsoleURL + strings.TrimSuffix(resp.Header.Get("Location"), "/")
		if status := getStatus(t, cl, base+"/grants"); status != http.StatusOK {
			t.Fatalf("%s: signed in: %d", action.name, status)
		}
		if err := action.do(); err != nil {
			t.Fatal(err)
		}
		if status := getStatus(t, cl, base+"/grants"); status != http.StatusSeeOther {
			t.Errorf("%s: the console session survived: %d", action.name, status)
		}
	}
}

func getStatus(t *testing.T, cl *http.Client, u string) int {
	t.Helper()
	resp, err := cl.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestConsoleKeyboardEmergency: with the keyboard alone the Owner signs
// in with the password, revokes every grant behind the confirmation, signs
// in again with a link and rotates the password (the current one, then
// the new one twice); each emergency action
// ends the console session, and the tokens get 401.
func TestConsoleKeyboardEmergency(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	_, tok := env.Grant(apptest.Approval{})
	b := browsertest.New(t)
	if err := chromedp.Do(b.Ctx(), chromedp.Navigate(env.ConsoleURL+"/"), chromedp.WaitVisible(chromedp.CSS(`#password`))); err != nil {
		t.Fatal(err)
	}
	// The password field has the focus (autofocus): type and press Enter.
	if err := chromedp.Do(b.Ctx(), chromedp.KeyEvent(apptest.Password), chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.CSS(`nav`))); err != nil {
		html, _ := chromedpHTML(b)
		t.Fatalf("password sign-in: %v\n%s", err, html)
	}
	base, basePath := placeOf(t, b)
	if err := chromedp.Do(b.Ctx(), chromedp.Navigate(base+"/grants"), chromedp.WaitVisible(chromedp.CSS(`.grant`))); err != nil {
		t.Fatal(err)
	}
	tabTo(t, b, `a[href="`+basePath+`/grants/revoke-all"]`)
	pressEnter(t, b)
	if err := chromedp.Do(b.Ctx(), chromedp.WaitVisible(chromedp.CSS(`input[name="confirm"]`))); err != nil {
		t.Fatal(err)
	}
	tabTo(t, b, `input[name="confirm"]`)
	if err := chromedp.Do(b.Ctx(), chromedp.KeyEvent(" ")); err != nil {
		t.Fatal(err)
	}
	tabTo(t, b, `form button.danger`)
	pressEnter(t, b)
	if err := chromedp.Do(b.Ctx(), chromedp.WaitVisible(chromedp.CSS(`.flash`))); err != nil {
		t.Fatal(err)
	}
	text, _ := chromedp.Run(b.Ctx(), chromedp.Text(chromedp.CSS(`.flash`)))
	if !strings.Contains(text, "1 grant(s) revoked") {
		t.Fatalf("after revoke-all: %q", text)
	}
	if s := mcpStatus(t, env, tok.AccessToken); s != http.StatusUnauthorized {
		t.Fatalf("/mcp after revoke-all from the console: %d", s)
	}
	if loc := navigateTo(t, b, base+"/grants"); !strings.HasSuffix(loc, "/signin") {
		t.Fatalf("the session outlived revoke-all: at %s", loc)
	}

	// Rotation.
	if err := chromedp.Do(b.Ctx(), chromedp.Navigate(link(t, env)), chromedp.WaitVisible(chromedp.CSS(`nav`))); err != nil {
		t.Fatal(err)
	}
	base, _ = placeOf(t, b)
	if err := chromedp.Do(b.Ctx(), chromedp.Navigate(base+"/owner/password"), chromedp.WaitVisible(chromedp.CSS(`#again`))); err != nil {
		t.Fatal(err)
	}
	const fresh = "a brand new owner password"
	tabTo(t, b, `#current`)
	if err := chromedp.Do(b.Ctx(), chromedp.KeyEvent(apptest.Password), chromedp.KeyEvent(kb.Tab),
		chromedp.KeyEvent(fresh), chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(fresh), chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(" ")); err != nil {
		t.Fatal(err)
	}
	tabTo(t, b, `form button.danger`)
	pressEnter(t, b)
	if err := chromedp.Do(b.Ctx(), chromedp.WaitVisible(chromedp.CSS(`.flash`))); err != nil {
		html, _ := chromedpHTML(b)
		t.Fatalf("rotation: %v\n%s", err, html)
	}
	if ok, _, err := env.App.CheckOwnerPassword(context.Background(), []byte(fresh)); !ok || err != nil {
		t.Fatalf("the new password does not check: %v %v", ok, err)
	}
	if loc := navigateTo(t, b, base+"/grants"); !strings.HasSuffix(loc, "/signin") {
		t.Fatalf("the session outlived the rotation: at %s", loc)
	}
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}

// navigateTo opens u and returns where the browser ended up.
func navigateTo(t *testing.T, b *browsertest.Browser, u string) string {
	t.Helper()
	if err := chromedp.Do(b.Ctx(), chromedp.Navigate(u), chromedp.WaitVisible(chromedp.CSS(`main h1`))); err != nil {
		t.Fatal(err)
	}
	loc, err := chromedp.Run(b.Ctx(), chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestConnectShowsAttempts: the Connect page shows the MCP URL and what
// the last connection attempts did: the registration (from the client
// table), a wrong password, a denial and an approval (from the audit log),
// with the client's name as text.
func TestConnectShowsAttempts(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	c := env.Register("Evil <b>Corp</b>", "http://127.0.0.1:9/callback", "client_secret_basic")
	_, challenge := apptest.PKCE()
	if res := env.Authorize(env.AuthURL(c, challenge, "s", "", nil), apptest.Approval{Password: "wrong password"}); res.Status != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d", res.Status)
	}
	_, challenge = apptest.PKCE()
	env.Authorize(env.AuthURL(c, challenge, "s", "", nil), apptest.Approval{Deny: true})
	env.GrantFor(c, apptest.Approval{})

	cl := &http.Client{Jar: newJar(t)}
	resp, err := cl.Get(link(t, env))
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	for _, want := range []string{env.URL + "/mcp", "Recent registrations", "127.0.0.1:9", "approved at least once", "wrong Owner password", "denied on the consent page", "approved: grant created",
		"Evil &lt;b&gt;Corp&lt;/b&gt;", "a configured (named) address"} {
		if !strings.Contains(body, want) {
			t.Errorf("Connect page lacks %q", want)
		}
	}
	if strings.Contains(body, "<b>Corp") {
		t.Error("client name rendered as markup")
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			return sb.String()
		}
	}
}
