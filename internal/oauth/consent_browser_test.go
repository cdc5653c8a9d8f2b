package oauth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/chromedp/chromedp"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/browsertest"
	"github.com/devspace-dev/devspace/internal/sandbox"
)

// TestConsentPageInChromium drives the two-step consent page in real
// headless Chromium: password, one Project, approve, and the redirect with
// code, state and iss. The page must load nothing from anywhere else.
func TestConsentPageInChromium(t *testing.T) {
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha", "beta", "gamma"}})
	c := env.Register("ChatGPT <script>alert(1)</script>", "http://127.0.0.1:9/callback", "client_secret_basic")
	verifier, challenge := apptest.PKCE()
	authURL := env.AuthURL(c, challenge, "xyz-state", "project:read project:write", nil)
	var betaRef string
	for _, p := range env.App.Projects() {
		if p.Label == "beta" {
			betaRef = p.Ref
		}
	}

	b := browsertest.New(t)
	dir := t.TempDir()
	if err := chromedp.Do(b.Ctx(),
		chromedp.Navigate(authURL),
		chromedp.WaitVisible(chromedp.CSS(`input[name="password"]`)),
	); err != nil {
		t.Fatal(err)
	}
	step1, err := chromedp.Run(b.Ctx(), chromedp.OuterHTML(chromedp.CSS("html")))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Screenshot(filepath.Join(dir, "consent-step1.png")); err != nil {
		t.Fatal(err)
	}
	// Project labels are not shown before the password is verified, and the
	// client name is escaped.
	for _, label := range []string{"alpha", "beta", "gamma"} {
		if strings.Contains(step1, ">"+label) || strings.Contains(step1, " "+label+"<") {
			t.Errorf("step 1 shows project label %q", label)
		}
	}
	if strings.Contains(step1, "<script>alert(1)") {
		t.Error("client name rendered unescaped")
	}
	if err := chromedp.Do(b.Ctx(),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), apptest.Password),
		chromedp.Click(chromedp.CSS(`button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`input[name="project"]`)),
	); err != nil {
		html, _ := chromedp.Run(b.Ctx(), chromedp.OuterHTML(chromedp.CSS("body")))
		t.Fatalf("step 2 did not appear: %v\n%s\nlogs: %s", err, html, env.Logs.String())
	}
	step2, err := chromedp.Run(b.Ctx(), chromedp.OuterHTML(chromedp.CSS("html")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"alpha", "beta", "gamma", `value="project:read" checked`, `value="project:write" checked`, `name="decision" value="approve"`, `name="decision" value="deny"`} {
		if !strings.Contains(step2, want) {
			t.Errorf("step 2 lacks %q", want)
		}
	}
	if err := chromedp.Do(b.Ctx(), chromedp.Click(chromedp.CSS(`input[name="project"][value="`+betaRef+`"]`))); err != nil {
		t.Fatal(err)
	}
	if err := b.Screenshot(filepath.Join(dir, "consent-step2.png")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(b.Ctx(), chromedp.Click(chromedp.CSS(`button[value="approve"]`))); err != nil {
		t.Fatal(err)
	}
	landed, err := b.WaitNavigation("http://127.0.0.1:9/callback")
	if err != nil {
		t.Fatalf("no redirect to the client: %v (navigations %v)", err, b.Navigations())
	}
	u, _ := url.Parse(landed)
	q := u.Query()
	if q.Get("code") == "" || q.Get("state") != "xyz-state" || q.Get("iss") != env.URL {
		t.Fatalf("redirect = %s", landed)
	}
	for _, r := range b.Requests() {
		if !strings.HasPrefix(r, env.URL+"/") && !strings.HasPrefix(r, "http://127.0.0.1:9/callback") {
			t.Errorf("page loaded an external resource: %s", r)
		}
	}
	png, err := os.ReadFile(filepath.Join(dir, "consent-step2.png"))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("screenshot: %v", err)
	}
	if out := os.Getenv("DEVSPACE_SCREENSHOT_DIR"); out != "" {
		_ = os.WriteFile(filepath.Join(out, "consent-step2.png"), png, 0o644)
	}
	// The code is real: it buys a token for exactly the chosen Project.
	tr := env.Token(c, url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")},
		"redirect_uri": {c.RedirectURI}, "code_verifier": {verifier}})
	if tr.Status != 200 {
		t.Fatalf("exchange: %+v", tr)
	}
	p, err := env.App.OAuth().Verify(context.Background(), tr.AccessToken)
	if err != nil || len(p.ProjectIDs) != 1 || p.ProjectIDs[0] != betaRef {
		t.Fatalf("principal %+v %v", p, err)
	}
}

// TestConsentPageBidiNameInChromium (issue 17, attack 6): a client_name
// with bidi overrides, isolates and zero-width characters is shown
// without them, bounded, labelled as unverified and next to the redirect
// host, in real Chromium.
func TestConsentPageBidiNameInChromium(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	spoof := "ChatGPT\u202e\u200b\u2066moc.elgoog\u2069\u200d\ufeff\u061c\u2028 Official" + strings.Repeat("x", 500)
	c := env.Register(spoof, "http://127.0.0.1:9/callback", "none")
	_, challenge := apptest.PKCE()
	b := browsertest.New(t)
	if err := chromedp.Do(b.Ctx(),
		chromedp.Navigate(env.AuthURL(c, challenge, "s", "", nil)),
		chromedp.WaitVisible(chromedp.CSS(`input[name="password"]`)),
	); err != nil {
		t.Fatal(err)
	}
	text, err := chromedp.Run(b.Ctx(), chromedp.Text(chromedp.CSS(".who")))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range text {
		if unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			t.Errorf("consent page shows invisible or bidi character %U in %q", r, text)
		}
	}
	if !strings.Contains(text, "ChatGPTmoc.elgoog Official") {
		t.Errorf("name not shown cleaned: %q", text)
	}
	if strings.Count(text, "x") > 100 {
		t.Errorf("name not bounded: %d runes shown", utf8.RuneCountInString(text))
	}
	if !strings.Contains(strings.ToLower(text), "unverified") {
		t.Errorf("name not labelled as unverified: %q", text)
	}
	if !strings.Contains(text, "127.0.0.1:9") {
		t.Errorf("redirect host not shown: %q", text)
	}
}

// layoutCheck is run on the consent page: horizontal overflow, and every
// word of at most 30 characters that the layout broke across lines (a
// longer one, like a host name, may wrap).
const layoutCheck = `(() => {
  const broken = [];
  for (const el of document.querySelectorAll('main h1, main p, main label, main legend, .who div, .who li')) {
    const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      for (const m of n.data.matchAll(/\S+/g)) {
        const r = document.createRange();
        r.setStart(n, m.index);
        r.setEnd(n, m.index + m[0].length);
        const lines = new Set([...r.getClientRects()].filter(x => x.width > 0).map(x => Math.round(x.top)));
        if (lines.size > 1 && m[0].length <= 30) broken.push(m[0]);
      }
    }
  }
  return JSON.stringify({overflow: document.documentElement.scrollWidth - window.innerWidth, broken});
})()`

// TestConsentPageReadableAtEveryWidth (issue 19): both steps at a phone's
// 390 px and a desktop's 1,280 px: no horizontal overflow, no word broken
// mid-way (the client name used to break mid-word), every scope explained
// in plain words — process:execute, the longest wording, included — the
// grant's lifetime and how to revoke it. With DEVSPACE_SCREENSHOT_DIR set,
// the screenshots docs/ shows are written there.
func TestConsentPageReadableAtEveryWidth(t *testing.T) {
	const scopes = "project:read project:write process:execute"
	// process:execute is offered only where commands can be confined: say
	// Landlock is there, whatever this kernel has (no command runs).
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha", "beta"}, Env: map[string]string{"DEVSPACE_OAUTH_SCOPES": scopes},
		SandboxProbe: func() sandbox.Status { return sandbox.Status{ABI: 4, Reason: "assumed by the test"} }})
	c := env.Register("ChatGPT Connector for a Development Workspace", "http://127.0.0.1:9/callback", "none")
	_, challenge := apptest.PKCE()
	for _, width := range []int64{390, 1280} {
		b := browsertest.New(t)
		if err := chromedp.Do(b.Ctx(),
			chromedp.EmulateViewport(width, 900),
			chromedp.Navigate(env.AuthURL(c, challenge, "s", scopes, nil)),
			chromedp.WaitVisible(chromedp.CSS(`input[name="password"]`)),
		); err != nil {
			t.Fatal(err)
		}
		check := func(step string) {
			t.Helper()
			raw, err := chromedp.Run(b.Ctx(), chromedp.Evaluate[string](layoutCheck))
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Overflow int
				Broken   []string
			}
			if err := json.Unmarshal([]byte(raw), &got); err != nil {
				t.Fatal(err)
			}
			if got.Overflow > 0 || len(got.Broken) > 0 {
				t.Errorf("%s at %d px: %d px of horizontal overflow, words broken mid-way: %q", step, width, got.Overflow, got.Broken)
			}
			text, err := chromedp.Run(b.Ctx(), chromedp.Text(chromedp.CSS("main")))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"list, open and read the chosen Projects", "change files in the chosen Projects",
				"run commands in the chosen Projects", "Each command is confined by the kernel", "unverified", "lasts until you revoke it", "devspace grants revoke GRANT_ID", "30 days"} {
				if !strings.Contains(text, want) {
					t.Errorf("%s at %d px does not say %q:\n%s", step, width, want, text)
				}
			}
			if out := os.Getenv("DEVSPACE_SCREENSHOT_DIR"); out != "" {
				if err := b.Screenshot(filepath.Join(out, fmt.Sprintf("consent-%s-%d.png", step, width))); err != nil {
					t.Fatal(err)
				}
			}
		}
		check("step1")
		if err := chromedp.Do(b.Ctx(),
			chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), apptest.Password),
			chromedp.Click(chromedp.CSS(`button[type="submit"]`)),
			chromedp.WaitVisible(chromedp.CSS(`input[name="project"]`)),
		); err != nil {
			t.Fatal(err)
		}
		check("step2")
	}
}
