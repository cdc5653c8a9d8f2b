// Package browsertest drives a real headless Chromium from tests, for pages
// that only a browser can check end to end, such as the OAuth consent page.
//
// Every Browser keeps all its traffic on loopback: a Fetch-domain guard fails
// each request for a non-loopback address before it is sent, and a dead proxy
// on loopback catches whatever the guard cannot see (other tabs, workers,
// WebSockets, the browser's own background requests).
package browsertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/devspace-dev/devspace/internal/testutil"
)

// ActionTimeout bounds browser start-up, each context returned by
// [Browser.Ctx], and each wait of [Browser.WaitNavigation].
const ActionTimeout = 20 * time.Second

// installHint is appended to every "chromium not found" failure.
const installHint = "install Chromium with `apt-get install -y chromium`, or point DEVSPACE_CHROMIUM at a Chromium binary"

// Browser is one headless Chromium with one tab, owned by one test. It records
// every request and main-frame navigation of the tab from the start.
//
// Requests, Navigations, Blocked and WaitNavigation are safe for concurrent
// use. Chromedp actions on contexts from Ctx must not run concurrently with
// each other, as chromedp requires for one tab.
type Browser struct {
	t   testing.TB
	ctx context.Context // the tab; lives until the test's cleanup

	mu          sync.Mutex
	mainFrame   string
	requests    []string
	navigations []string
	blocked     []string
	console     []string      // exceptions, console errors, error log entries
	changed     chan struct{} // closed and replaced when navigations grows
}

// New starts a headless Chromium for t and opens one blank tab. t.Cleanup
// closes the browser. The binary is DEVSPACE_CHROMIUM if set, else
// /usr/bin/chromium, else chromium in PATH. New fails the test (never skips)
// when no binary is found or the browser does not start within
// [ActionTimeout]: CI installs chromium, so a missing one is a broken setup.
func New(t testing.TB) *Browser {
	t.Helper()
	path, err := findChromium()
	if err != nil {
		t.Fatalf("browsertest: %v; %s", err, installHint)
	}
	sink, err := startSink()
	if err != nil {
		t.Fatalf("browsertest: %v", err)
	}
	t.Cleanup(sink.close)

	out := &testutil.SyncBuffer{} // chromedp writes from its own goroutine
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.CombinedOutput(out),
		chromedp.WindowSize(1280, 800),
		// Required on this project's machines: headless, root, no network but
		// loopback. The background-networking flags stop Chromium from
		// reaching for Google services on its own.
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("disable-features", "Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider,NetworkTimeServiceQuerying"),
		// Even with the flags above, Chromium 156 still calls
		// update.googleapis.com and accounts.google.com at start-up. A proxy
		// catches that: Chromium bypasses proxies for loopback hosts, so only
		// non-loopback traffic reaches the sink, which drops it. WebRTC must
		// not use UDP around the proxy.
		chromedp.ProxyServer("http://"+sink.addr()),
		chromedp.Flag("force-webrtc-ip-handling-policy", "disable_non_proxied_udp"),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	b := &Browser{t: t, ctx: ctx, changed: make(chan struct{})}
	t.Cleanup(func() {
		if err := chromedp.Cancel(ctx); err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("browsertest: closing chromium: %v", err)
		}
		cancelTab()
		cancelAlloc()
		if t.Failed() {
			t.Logf("browsertest: chromium output:\n%s", out.String())
		}
	})

	// The first action starts the browser and binds its life to ctx, so it
	// cannot take a timeout context; a timer cancels a hung start instead.
	timer := time.AfterFunc(ActionTimeout, cancelAlloc)
	err = b.start()
	timer.Stop()
	if err != nil {
		t.Fatalf("browsertest: starting %s: %v\nchromium output:\n%s", path, err, out.String())
	}
	return b
}

// start opens the tab, then installs the recorder and the network guard
// before anything is loaded into it.
func (b *Browser) start() error {
	if err := chromedp.Do(b.ctx); err != nil {
		return err
	}
	c := chromedp.FromContext(b.ctx)
	// The main frame of a page target has the target's ID.
	b.mainFrame = string(c.Target.TargetID)
	if err := chromedp.Listen(b.ctx, b.record); err != nil {
		return fmt.Errorf("listening to the tab: %w", err)
	}
	return b.guard()
}

// Ctx returns a context for chromedp actions on the tab, for example
// chromedp.Do(b.Ctx(), chromedp.Navigate(u)). Each call returns a new context
// that expires after [ActionTimeout], so take one per action or short
// sequence. The test's cleanup cancels it.
func (b *Browser) Ctx() context.Context {
	ctx, cancel := context.WithTimeout(b.ctx, ActionTimeout)
	b.t.Cleanup(cancel)
	return ctx
}

// Screenshot writes a full-page PNG of the tab to path.
func (b *Browser) Screenshot(path string) error {
	png, err := chromedp.Run(b.Ctx(), chromedp.FullScreenshot(100))
	if err != nil {
		return fmt.Errorf("capturing screenshot: %w", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return fmt.Errorf("writing screenshot: %w", err)
	}
	return nil
}

// findChromium returns the browser binary to run; see [New] for the order.
func findChromium() (string, error) {
	if p := os.Getenv("DEVSPACE_CHROMIUM"); p != "" {
		if !isExecutable(p) {
			return "", fmt.Errorf("DEVSPACE_CHROMIUM=%s is not an executable file", p)
		}
		return p, nil
	}
	if p := "/usr/bin/chromium"; isExecutable(p) {
		return p, nil
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		return "", fmt.Errorf("chromium not found: %w", err)
	}
	return p, nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
