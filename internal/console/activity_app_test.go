package console_test

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/browsertest"
	"github.com/devspace-dev/devspace/internal/testutil"
)

func newMarker(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "console-" + hex.EncodeToString(b)
}

// waitGone waits up to 10 s until no process carries marker.
func waitGone(t *testing.T, marker, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(testutil.MarkedAlive(marker)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s: processes left: %v", what, testutil.MarkedAlive(marker))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startMarked starts a long command carrying marker that prints a line
// every 200 ms.
func (g *grantSession) startMarked(marker, command string) {
	g.t.Helper()
	g.n++
	sc, _ := g.call("exec_command", map[string]any{"operationId": "op" + strings.Repeat("x", g.n), "shell": true,
		"command": command, "environment": map[string]any{"DSMARK": marker}})
	if sc["status"] != "running" {
		g.t.Fatalf("exec: %v", sc)
	}
}

// TestRealActivityInChromium: a real grant's running command appears on
// the Activity page with its command line and live output within 2 s;
// Interrupt from the page, by keyboard, ends it (no process left); a
// patch's diff shows; the charts render; revoking the grant from the page
// makes its token get 401 and ends its commands.
func TestRealActivityInChromium(t *testing.T) {
	needLandlock(t)
	env := apptest.Start(t, apptest.Options{Env: execScopes})
	g := openGrant(t, env, "ChatGPT <img src=x onerror=alert(1)>")
	first, second := newMarker(t), newMarker(t)
	// The patch first: a running command that may write holds patches
	// back (root locks).
	if sc, res := g.call("apply_patch", map[string]any{"operationId": "patch-1",
		"patch":   "*** Begin Patch\n*** Add File: hello.txt\n+hello <script>alert(3)</script>\n*** End Patch\n",
		"ifMatch": map[string]any{"hello.txt": nil}}); res.IsError {
		t.Fatalf("apply_patch: %v", sc)
	}
	g.startMarked(first, "i=0; while :; do i=$((i+1)); echo tick-$i '<b>bold</b>'; sleep 0.2; done")

	b := browsertest.New(t)
	if err := chromedp.Do(b.Ctx(), chromedp.EmulateViewport(390, 900), chromedp.Navigate(link(t, env)), chromedp.WaitVisible(chromedp.CSS(`nav`))); err != nil {
		t.Fatal(err)
	}
	base, _ := placeOf(t, b)
	if err := chromedp.Do(b.Ctx(), chromedp.Navigate(base+"/activity"), chromedp.WaitVisible(chromedp.CSS(`#commands`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, b, `[...document.querySelectorAll('li.command .cmdline')].some(e => e.textContent.includes('tick-$i'))`, 2*time.Second)
	waitFor(t, b, `[...document.querySelectorAll('pre.output')].some(e => /tick-\d+ <b>bold<\/b>/.test(e.textContent))`, 2*time.Second)
	// The output grows while the page is open.
	n1, err := chromedp.Run(b.Ctx(), chromedp.Evaluate[int](`Math.max(...[...document.querySelectorAll('pre.output')].map(e => (e.textContent.match(/tick-/g) || []).length))`))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, b, `Math.max(...[...document.querySelectorAll('pre.output')].map(e => (e.textContent.match(/tick-/g) || []).length)) > `+strconv.Itoa(n1), 2*time.Second)
	// The patch's diff, as text.
	waitFor(t, b, `[...document.querySelectorAll('pre.diff')].some(e => e.textContent.includes('+hello <script>alert(3)</script>'))`, time.Second)
	waitFor(t, b, `document.querySelectorAll('main img, main script, main b').length === 0`, time.Second)

	// On a phone's width, nothing scrolls sideways (the README shows it).
	if over, err := chromedp.Run(b.Ctx(), chromedp.Evaluate[int](overflow)); err != nil || over > 0 {
		t.Errorf("the Activity page at 390 px is %d px too wide (%v)", over, err)
	}
	if out := os.Getenv("DEVSPACE_SCREENSHOT_DIR"); out != "" {
		if err := b.Screenshot(filepath.Join(out, "console-activity-390.png")); err != nil {
			t.Fatal(err)
		}
	}

	// Interrupt by keyboard: the command's tree is gone.
	tabTo(t, b, `li.command button.danger`)
	pressEnter(t, b)
	if err := chromedp.Do(b.Ctx(), chromedp.WaitVisible(chromedp.CSS(`.flash`))); err != nil {
		t.Fatal(err)
	}
	waitGone(t, first, "after Interrupt")

	// Charts.
	if err := chromedp.Do(b.Ctx(), chromedp.Navigate(base+"/charts"), chromedp.WaitVisible(chromedp.CSS(`.chart svg`))); err != nil {
		t.Fatal(err)
	}
	if n, err := chromedp.Run(b.Ctx(), chromedp.Evaluate[int](`document.querySelectorAll('.chart svg').length`)); err != nil || n != 5 {
		t.Errorf("charts: %d %v", n, err)
	}

	// Revoke from the Grants page: the token gets 401 and the grant's
	// command is killed.
	g.startMarked(second, "sleep 1000")
	if err := chromedp.Do(b.Ctx(), chromedp.Navigate(base+"/grants"), chromedp.WaitVisible(chromedp.CSS(`.grant`))); err != nil {
		t.Fatal(err)
	}
	tabTo(t, b, `.grant button.danger`)
	pressEnter(t, b)
	if err := chromedp.Do(b.Ctx(), chromedp.WaitVisible(chromedp.CSS(`.flash`))); err != nil {
		t.Fatal(err)
	}
	if s := mcpStatus(t, env, g.token); s != http.StatusUnauthorized {
		t.Fatalf("/mcp after revoking from the page: %d", s)
	}
	waitGone(t, second, "after revoking the grant")
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}
