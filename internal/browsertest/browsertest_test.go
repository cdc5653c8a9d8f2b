package browsertest

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

func TestConsentFormCapturesRedirect(t *testing.T) {
	tests := []struct {
		name     string
		redirect string // the redirect_uri with code and state
		blocked  bool   // whether the guard must refuse it
	}{
		{"closed loopback port", "http://127.0.0.1:1/cb?code=abc&state=xyz", false},
		{"external host", "https://client.example/cb?code=abc&state=xyz", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, password := consentServer(t, tt.redirect)
			b := New(t)
			if err := chromedp.Do(b.Ctx(),
				chromedp.Navigate(srv.URL+"/"),
				chromedp.SendKeys(chromedp.CSS("input[name=password]"), "s3cret"),
			); err != nil {
				t.Fatal(err)
			}
			shot := filepath.Join(t.TempDir(), "consent.png")
			if err := b.Screenshot(shot); err != nil {
				t.Fatal(err)
			}
			if err := chromedp.Do(b.Ctx(), chromedp.Click(chromedp.CSS("button[type=submit]"))); err != nil {
				t.Fatal(err)
			}

			prefix, _, _ := strings.Cut(tt.redirect, "?")
			nav, err := b.WaitNavigation(prefix)
			if err != nil {
				t.Fatal(err)
			}
			if got := password(); got != "s3cret" {
				t.Errorf("server got password %q, want %q", got, "s3cret")
			}
			u, err := url.Parse(nav)
			if err != nil {
				t.Fatal(err)
			}
			if q := u.Query(); q.Get("code") != "abc" || q.Get("state") != "xyz" {
				t.Errorf("redirect %q: want code=abc and state=xyz", nav)
			}
			wantNavs := []string{srv.URL + "/", srv.URL + "/submit", tt.redirect}
			if navs := b.Navigations(); !slices.Equal(navs, wantNavs) {
				t.Errorf("Navigations() = %q, want %q", navs, wantNavs)
			}

			png, err := os.ReadFile(shot)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 1000 {
				t.Errorf("screenshot is not a plausible PNG (%d bytes)", len(png))
			}

			reqs := b.Requests()
			if !slices.Contains(reqs, tt.redirect) {
				t.Errorf("Requests() = %q, want it to contain %q", reqs, tt.redirect)
			}
			for _, r := range reqs {
				if !strings.HasPrefix(r, srv.URL+"/") && r != tt.redirect {
					t.Errorf("unexpected request %q", r)
				}
			}
			var wantBlocked []string
			if tt.blocked {
				wantBlocked = []string{tt.redirect}
			}
			// The navigation is recorded before the guard acts on it.
			blocked := b.Blocked()
			for deadline := time.Now().Add(5 * time.Second); len(blocked) < len(wantBlocked) && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
				blocked = b.Blocked()
			}
			if !slices.Equal(blocked, wantBlocked) {
				t.Errorf("Blocked() = %q, want %q", blocked, wantBlocked)
			}
		})
	}
}

// consentServer serves a password form whose POST answers 302 to redirect
// when the password is right. password returns the last one posted.
func consentServer(t *testing.T, redirect string) (srv *httptest.Server, password func() string) {
	t.Helper()
	var (
		mu  sync.Mutex
		got string
	)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Consent</title><h1>Allow access?</h1>
<form method=post action=/submit><input type=password name=password><button type=submit>Go</button></form>`)
	})
	mux.HandleFunc("POST /submit", func(w http.ResponseWriter, r *http.Request) {
		pw := r.PostFormValue("password")
		mu.Lock()
		got = pw
		mu.Unlock()
		if pw != "s3cret" {
			http.Error(w, "wrong password", http.StatusForbidden)
			return
		}
		http.Redirect(w, r, redirect, http.StatusFound)
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, func() string {
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}

func TestGuardBlocksNonLoopbackRequests(t *testing.T) {
	const external = "http://192.0.2.1/x.png" // TEST-NET-1; must never be contacted
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><title>ext</title><img src=%q><img src="/local.png">`, external)
	}))
	t.Cleanup(srv.Close)

	b := New(t)
	// Navigate returns after the load event, which waits for both images.
	if err := chromedp.Do(b.Ctx(), chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	if reqs := b.Requests(); !slices.Contains(reqs, external) || !slices.Contains(reqs, srv.URL+"/local.png") {
		t.Errorf("Requests() = %q, want it to contain %q and the local image", reqs, external)
	}
	if blocked := b.Blocked(); !slices.Equal(blocked, []string{external}) {
		t.Errorf("Blocked() = %q, want only %q", blocked, external)
	}
	// The page itself saw a failed image, not a response from anywhere.
	broken, err := chromedp.Run(b.Ctx(), chromedp.Evaluate[bool](
		fmt.Sprintf(`(() => { const i = document.querySelector('img[src=%q]'); return i.complete && i.naturalWidth === 0; })()`, external)))
	if err != nil {
		t.Fatal(err)
	}
	if !broken {
		t.Errorf("external image loaded; the guard let it through")
	}
}

func TestIsLoopbackURL(t *testing.T) {
	tests := []struct {
		url  string
		want bool
	}{
		{"http://127.0.0.1:8080/x", true},
		{"https://127.9.9.9/", true},
		{"http://[::1]:3000/", true},
		{"http://localhost/", true},
		{"ws://app.localhost:9/", true},
		{"data:text/plain,hi", true},
		{"http://192.0.2.1/x.png", false},
		{"http://10.0.0.1/", false},
		{"https://example.com/", false},
		{"http://127.0.0.1.example.com/", false},
		{"http://[::ffff:192.0.2.1]/", false},
		{"ftp://127.0.0.1/", false},
		{"chrome-extension://abc/x", false},
		{"http://%zz/", false},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			if got := isLoopbackURL(tt.url); got != tt.want {
				t.Errorf("isLoopbackURL(%q) = %v, want %v", tt.url, got, tt.want)
			}
		})
	}
}
