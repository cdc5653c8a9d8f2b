package console_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/console"
)

// TestAttackCookieOnAnotherPort: browsers keep cookies by host, not by
// port, so a page a grant's command serves on 127.0.0.1 (a dev server the
// Owner opens to preview the model's work) would receive the console's
// session cookie and could replay it from loopback. The session cookie is
// sent only under its session's own unguessable path, so a visit to any
// other port's pages carries none.
func TestAttackCookieOnAnotherPort(t *testing.T) {
	h := newHarness(t)
	owner := h.signIn()

	var mu sync.Mutex
	var seen []string
	dev := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path+": "+r.Header.Get("Cookie"))
		mu.Unlock()
		w.Write([]byte("a dev server"))
	}))
	t.Cleanup(dev.Close)
	if !strings.HasPrefix(dev.URL, "http://127.0.0.1:") || !strings.HasPrefix(h.srv.URL, "http://127.0.0.1:") {
		t.Fatalf("both must be on 127.0.0.1: %s %s", dev.URL, h.srv.URL)
	}
	// The Owner opens the dev server's pages, as a browser would, with the
	// same cookie jar; some paths mirror the console's.
	for _, p := range []string{"/", "/grants", "/activity/stream", "/s/", "/signin"} {
		resp, err := owner.Get(dev.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range seen {
		if strings.Contains(s, "devspace_console") {
			t.Errorf("the dev server on another port received the console's session cookie: %s", s)
		}
	}
	// The console itself still knows its Owner.
	if status, _ := h.get(owner, "/grants", nil); status != http.StatusOK {
		t.Errorf("the signed-in Owner's Grants page: %d", status)
	}
}

// TestAttackCookieAtAnotherPlace: a session's cookie value, replayed by
// whoever got it, works only under its own session's place: under another
// live session's place or a guessed one it gets no page, no stream and
// no action, and is no use of its session (which still ends at its idle
// timeout).
func TestAttackCookieAtAnotherPlace(t *testing.T) {
	h := newHarness(t)
	victim, other := h.signIn(), h.signIn()
	u, _ := url.Parse(h.url(victim, "/"))
	var stolen string
	for _, c := range victim.Jar.Cookies(u) {
		if c.Name == "devspace_console" {
			stolen = c.Value
		}
	}
	if stolen == "" {
		t.Fatal("no session cookie")
	}
	csrf := csrfOf(t, func() string { _, p := h.get(victim, "/grants/revoke-all", nil); return p }())
	h.clock.Advance(console.IdleTimeout - time.Minute)
	for _, base := range []string{h.bases[other], "/s/guessed-place"} {
		for _, tc := range []struct {
			method, path string
			want         int
		}{
			{http.MethodGet, "/grants", http.StatusSeeOther},
			{http.MethodGet, "/health/diagnostic", http.StatusSeeOther},
			{http.MethodGet, "/activity/stream", http.StatusUnauthorized},
			{http.MethodPost, "/grants/revoke-all", http.StatusUnauthorized},
		} {
			form := url.Values{"csrf": {csrf}, "confirm": {"yes"}}
			req, _ := http.NewRequest(tc.method, h.srv.URL+base+tc.path, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Cookie", "devspace_console="+stolen)
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("%s %s with the victim's cookie: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
			}
		}
	}
	h.clock.Advance(2 * time.Minute)
	if status, _ := h.get(victim, "/grants", nil); status != http.StatusSeeOther {
		t.Errorf("requests under other places kept the victim's session alive: %d", status)
	}
	h.admin.mu.Lock()
	defer h.admin.mu.Unlock()
	if len(h.admin.grants) == 0 {
		t.Error("revoke-all ran under another place")
	}
}
