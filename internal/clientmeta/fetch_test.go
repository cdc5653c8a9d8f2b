package clientmeta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/testutil"
)

// testServer is an httptest TLS server on 127.0.0.1 that counts requests
// and accepted connections.
type testServer struct {
	*httptest.Server
	requests atomic.Int64
	conns    atomic.Int64
}

func newTestServer(t *testing.T, h http.HandlerFunc) *testServer {
	t.Helper()
	ts := &testServer{}
	ts.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.requests.Add(1)
		h(w, r)
	}))
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			ts.conns.Add(1)
		}
	}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	return ts
}

func (ts *testServer) clientID() string { return ts.URL + "/client.json" }

func (ts *testServer) port() string {
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	return port
}

// requestURL rebuilds the URL a request was sent to, so handlers need no
// shared state to produce a matching client_id.
func requestURL(r *http.Request) string { return "https://" + r.Host + r.URL.RequestURI() }

func validBody(clientID string) []byte {
	b, _ := json.Marshal(map[string]any{
		"client_id":      clientID,
		"client_name":    "Test Client",
		"redirect_uris":  []string{"https://client.example/cb"},
		"grant_types":    []string{"authorization_code", "refresh_token"},
		"response_types": []string{"code"},
	})
	return b
}

func serveJSON(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Write(body)
}

func serveValid(w http.ResponseWriter, r *http.Request) { serveJSON(w, validBody(requestURL(r))) }

// newFetcher returns a loopback-enabled Fetcher for ts. Every dial is
// counted, and any dial outside loopback fails the test before it happens.
func newFetcher(t *testing.T, ts *testServer, opts Options) (*Fetcher, *atomic.Int64) {
	t.Helper()
	if ts != nil {
		opts.HTTPClient = ts.Client()
	}
	f := New(opts)
	dials := new(atomic.Int64)
	f.guard.beforeDial = func(address string) error {
		dials.Add(1)
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !ap.Addr().Unmap().IsLoopback() {
			t.Errorf("attempted dial outside loopback: %s", address)
			return errors.New("test refuses non-loopback dial")
		}
		return nil
	}
	f.guard.lookup = func(context.Context, string) ([]netip.Addr, error) {
		return nil, errors.New("unexpected DNS lookup in test")
	}
	return f, dials
}

func TestFetchValid(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Accept"); got != "application/json" {
			t.Errorf("Accept = %q, want application/json", got)
		}
		if r.Method != http.MethodGet {
			t.Errorf("method = %s, want GET", r.Method)
		}
		serveValid(w, r)
	})
	f, _ := newFetcher(t, ts, Options{AllowLoopback: true})
	got, err := f.Fetch(t.Context(), ts.clientID())
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	want := &Document{
		ClientID:                ts.clientID(),
		ClientName:              "Test Client",
		RedirectURIs:            []string{"https://client.example/cb"},
		TokenEndpointAuthMethod: "none",
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Fetch mismatch\n got: %+v\nwant: %+v", got, want)
	}
}

// TestFetchByName resolves a host name through the guard (with a fake
// resolver) and verifies TLS against the name, not the dialled IP.
func TestFetchByName(t *testing.T) {
	ts := newTestServer(t, serveValid)
	f, dials := newFetcher(t, ts, Options{AllowLoopback: true})
	f.guard.lookup = func(_ context.Context, host string) ([]netip.Addr, error) {
		if host != "example.com" { // a name in httptest's certificate
			return nil, fmt.Errorf("unexpected lookup %q", host)
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	id := "https://example.com:" + ts.port() + "/client.json"
	doc, err := f.Fetch(t.Context(), id)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if doc.ClientID != id {
		t.Errorf("ClientID = %q, want %q", doc.ClientID, id)
	}
	if dials.Load() != 1 {
		t.Errorf("dials = %d, want 1", dials.Load())
	}
}

func TestFetchErrors(t *testing.T) {
	const maxBytes = 1024
	tests := []struct {
		name     string
		handler  http.HandlerFunc
		wantErr  error
		wantReqs int64 // 0 means 1
	}{
		{
			name: "client_id mismatch",
			handler: func(w http.ResponseWriter, r *http.Request) {
				serveJSON(w, validBody(requestURL(r)+"x"))
			},
			wantErr: ErrInvalidDocument,
		},
		{
			name: "missing redirect_uris",
			handler: func(w http.ResponseWriter, r *http.Request) {
				serveJSON(w, []byte(`{"client_id":"`+requestURL(r)+`"}`))
			},
			wantErr: ErrInvalidDocument,
		},
		{
			name: "http redirect URI to non-loopback host",
			handler: func(w http.ResponseWriter, r *http.Request) {
				serveJSON(w, []byte(`{"client_id":"`+requestURL(r)+`","redirect_uris":["http://client.example/cb"]}`))
			},
			wantErr: ErrInvalidDocument,
		},
		{
			name: "client secret auth",
			handler: func(w http.ResponseWriter, r *http.Request) {
				serveJSON(w, []byte(`{"client_id":"`+requestURL(r)+`","redirect_uris":["https://c.example/cb"],"token_endpoint_auth_method":"client_secret_basic"}`))
			},
			wantErr: ErrInvalidDocument,
		},
		{
			name: "oversized with content-length",
			handler: func(w http.ResponseWriter, r *http.Request) {
				body := validBody(requestURL(r))
				body = append(body, strings.Repeat(" ", maxBytes+1-len(body))...)
				w.Header().Set("Content-Length", fmt.Sprint(len(body)))
				serveJSON(w, body)
			},
			wantErr: ErrTooLarge,
		},
		{
			name: "oversized chunked",
			handler: func(w http.ResponseWriter, r *http.Request) {
				body := validBody(requestURL(r))
				w.Header().Set("Content-Type", "application/json")
				w.Write(body)
				w.(http.Flusher).Flush()
				w.Write([]byte(strings.Repeat(" ", maxBytes)))
			},
			wantErr: ErrTooLarge,
		},
		{
			name: "redirect not followed",
			handler: func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/client.json" {
					t.Errorf("redirect target %s was fetched", r.URL.Path)
				}
				http.Redirect(w, r, "/other.json", http.StatusFound)
			},
			wantErr: ErrFetch,
		},
		{
			name: "permanent redirect not followed",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "https://127.0.0.1:1/x", http.StatusPermanentRedirect)
			},
			wantErr: ErrFetch,
		},
		{
			name:    "not found",
			handler: http.NotFound,
			wantErr: ErrFetch,
		},
		{
			name: "server error",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "boom", http.StatusInternalServerError)
			},
			wantErr: ErrFetch,
		},
		{
			name: "no content",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusNoContent)
			},
			wantErr: ErrFetch,
		},
		{
			name: "wrong content type",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.Write(validBody(requestURL(r)))
			},
			wantErr: ErrInvalidDocument,
		},
		{
			name: "missing content type",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Content-Type"] = nil // suppress sniffing
				w.Write(validBody(requestURL(r)))
			},
			wantErr: ErrInvalidDocument,
		},
		{
			name: "malformed JSON",
			handler: func(w http.ResponseWriter, r *http.Request) {
				serveJSON(w, []byte(`{"client_id": "`+requestURL(r)+`",`))
			},
			wantErr: ErrInvalidDocument,
		},
		{
			name: "JSON array",
			handler: func(w http.ResponseWriter, r *http.Request) {
				serveJSON(w, []byte(`[]`))
			},
			wantErr: ErrInvalidDocument,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t, tt.handler)
			f, _ := newFetcher(t, ts, Options{AllowLoopback: true, MaxBytes: maxBytes})
			doc, err := f.Fetch(t.Context(), ts.clientID())
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Fetch = %+v, %v; want %v", doc, err, tt.wantErr)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("error %T is not *Error", err)
			}
			want := tt.wantReqs
			if want == 0 {
				want = 1
			}
			if got := ts.requests.Load(); got != want {
				t.Errorf("server saw %d requests, want %d", got, want)
			}
			// Failures are not cached: a second call asks again.
			f.Fetch(t.Context(), ts.clientID())
			if got := ts.requests.Load(); got != want+1 {
				t.Errorf("after retry server saw %d requests, want %d", got, want+1)
			}
		})
	}
}

func TestFetchTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
		// Never answer: a late empty 200 would race the client's timeout
		// on a loaded machine.
		panic(http.ErrAbortHandler)
	})
	f, _ := newFetcher(t, ts, Options{AllowLoopback: true, Timeout: 200 * time.Millisecond})
	start := time.Now()
	_, err := f.Fetch(t.Context(), ts.clientID())
	if !errors.Is(err, ErrFetch) || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("Fetch error = %v, want ErrFetch timed out", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Fetch took %v, want about 200ms", d)
	}
}

func TestFetchCallerCancelled(t *testing.T) {
	release := make(chan struct{})
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
		serveValid(w, r)
	})
	f, _ := newFetcher(t, ts, Options{AllowLoopback: true})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := f.Fetch(ctx, ts.clientID())
	if !errors.Is(err, ErrFetch) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Fetch error = %v, want ErrFetch and context.Canceled", err)
	}
	// The shared request carries on and fills the cache for later callers.
	close(release)
	if _, err := f.Fetch(t.Context(), ts.clientID()); err != nil {
		t.Fatalf("second Fetch: %v", err)
	}
	if got := ts.requests.Load(); got != 1 {
		t.Errorf("server saw %d requests, want 1", got)
	}
}

func TestFetchCache(t *testing.T) {
	tests := []struct {
		name         string
		cacheControl string
		cacheTTL     time.Duration
		wantTTL      time.Duration
	}{
		{"default TTL", "", 0, time.Hour},
		{"configured TTL", "", 10 * time.Minute, 10 * time.Minute},
		{"max-age honoured", "public, max-age=600", 0, 10 * time.Minute},
		{"max-age clamped up", "max-age=60", 0, 5 * time.Minute},
		{"max-age zero clamped up", "max-age=0", 0, 5 * time.Minute},
		{"max-age clamped down", "max-age=604800", 0, 24 * time.Hour},
		{"max-age overflow", "max-age=99999999999999999999999", 0, 24 * time.Hour},
		{"quoted max-age", `max-age="7200"`, 0, 2 * time.Hour},
		{"no-store", "no-store", 0, 5 * time.Minute},
		{"invalid max-age", "max-age=soon", 0, 5 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
				if tt.cacheControl != "" {
					w.Header().Set("Cache-Control", tt.cacheControl)
				}
				serveValid(w, r)
			})
			clock := testutil.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
			f, _ := newFetcher(t, ts, Options{AllowLoopback: true, Now: clock.Now, CacheTTL: tt.cacheTTL})
			fetch := func(wantReqs int64) {
				t.Helper()
				if _, err := f.Fetch(t.Context(), ts.clientID()); err != nil {
					t.Fatalf("Fetch: %v", err)
				}
				if got := ts.requests.Load(); got != wantReqs {
					t.Fatalf("server saw %d requests, want %d", got, wantReqs)
				}
			}
			fetch(1)
			fetch(1) // cache hit
			clock.Advance(tt.wantTTL - time.Second)
			fetch(1) // still fresh
			clock.Advance(time.Second)
			fetch(2) // expired
		})
	}
}

func TestFetchReturnsCopies(t *testing.T) {
	ts := newTestServer(t, serveValid)
	f, _ := newFetcher(t, ts, Options{AllowLoopback: true})
	a, err := f.Fetch(t.Context(), ts.clientID())
	if err != nil {
		t.Fatal(err)
	}
	a.RedirectURIs[0] = "https://evil.example/cb"
	b, err := f.Fetch(t.Context(), ts.clientID())
	if err != nil {
		t.Fatal(err)
	}
	if b.RedirectURIs[0] != "https://client.example/cb" {
		t.Errorf("cached document was modified through a returned copy: %q", b.RedirectURIs[0])
	}
}

func TestFetchConcurrentDedup(t *testing.T) {
	const n = 20
	release := make(chan struct{})
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		serveValid(w, r)
	})
	f, _ := newFetcher(t, ts, Options{AllowLoopback: true})
	id := ts.clientID()

	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			doc, err := f.Fetch(t.Context(), id)
			if err == nil && doc.ClientID != id {
				err = fmt.Errorf("ClientID = %q", doc.ClientID)
			}
			errs <- err
		})
	}
	// Hold the response until every caller has joined the one flight.
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.mu.Lock()
		joined := 0
		if c := f.inflight[id]; c != nil {
			joined = c.waiters
		}
		f.mu.Unlock()
		if joined == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d callers joined the flight", joined, n)
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Fetch: %v", err)
		}
	}
	if got := ts.requests.Load(); got != 1 {
		t.Errorf("server saw %d requests, want 1", got)
	}
}

func TestCacheBounded(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f := New(Options{Now: clock.Now})
	doc := &Document{}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range maxCacheEntries + 50 {
		// Later entries live longer, so the oldest are evicted first.
		f.storeLocked(fmt.Sprintf("https://c.example/%d", i), doc, clock.Now(), time.Hour+time.Duration(i)*time.Second)
	}
	if got := len(f.cache); got != maxCacheEntries {
		t.Errorf("cache holds %d entries, want %d", got, maxCacheEntries)
	}
	if _, ok := f.cache["https://c.example/0"]; ok {
		t.Error("entry closest to expiry was not evicted")
	}
	if _, ok := f.cache[fmt.Sprintf("https://c.example/%d", maxCacheEntries+49)]; !ok {
		t.Error("newest entry missing")
	}
}

// TestFetchForbiddenLoopback checks that without AllowLoopback, loopback
// targets are refused with ErrForbiddenAddress before any connection.
func TestFetchForbiddenLoopback(t *testing.T) {
	ts := newTestServer(t, serveValid)
	port := ts.port()
	ids := []string{
		"https://127.0.0.1:" + port + "/client.json",
		"https://127.1.2.3:" + port + "/client.json",
		"https://[::1]:" + port + "/client.json",
		"https://[::ffff:127.0.0.1]:" + port + "/client.json",
		"https://localhost:" + port + "/client.json",
		"https://LocalHost.:" + port + "/client.json",
		"https://app.localhost:" + port + "/client.json",
	}
	for _, id := range ids {
		t.Run(id, func(t *testing.T) {
			// The test server's client is passed but must be ignored.
			f, dials := newFetcher(t, ts, Options{})
			_, err := f.Fetch(t.Context(), id)
			if !errors.Is(err, ErrForbiddenAddress) {
				t.Fatalf("Fetch error = %v, want ErrForbiddenAddress", err)
			}
			if dials.Load() != 0 || ts.conns.Load() != 0 {
				t.Errorf("dials = %d, server connections = %d; want none", dials.Load(), ts.conns.Load())
			}
		})
	}
}

// TestFetchForbiddenResolved covers names whose resolution is not public.
// The fake resolver keeps DNS off the network; the dial hook proves that
// no connection is attempted.
func TestFetchForbiddenResolved(t *testing.T) {
	ts := newTestServer(t, serveValid)
	tests := []struct {
		name  string
		addrs []string
	}{
		{"private", []string{"10.0.0.1"}},
		{"cloud metadata", []string{"169.254.169.254"}},
		{"loopback (rebinding)", []string{"127.0.0.1"}},
		{"mapped loopback", []string{"::ffff:127.0.0.1"}},
		{"ULA", []string{"fd00::1"}},
		{"NAT64 private", []string{"64:ff9b::a00:1"}},
		{"loopback mixed with public", []string{"127.0.0.1", "8.8.8.8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, dials := newFetcher(t, nil, Options{})
			lookups := 0
			f.guard.lookup = func(_ context.Context, host string) ([]netip.Addr, error) {
				lookups++
				var ips []netip.Addr
				for _, a := range tt.addrs {
					ips = append(ips, netip.MustParseAddr(a))
				}
				return ips, nil
			}
			_, err := f.Fetch(t.Context(), "https://meta.example:"+ts.port()+"/client.json")
			if !errors.Is(err, ErrForbiddenAddress) {
				t.Fatalf("Fetch error = %v, want ErrForbiddenAddress", err)
			}
			if lookups != 1 {
				t.Errorf("lookups = %d, want 1", lookups)
			}
			if dials.Load() != 0 || ts.conns.Load() != 0 {
				t.Errorf("dials = %d, server connections = %d; want none", dials.Load(), ts.conns.Load())
			}
			for _, a := range tt.addrs {
				if strings.Contains(err.Error(), a) {
					t.Errorf("error %q leaks resolved address %s", err, a)
				}
			}
		})
	}
}

func TestFetchForbiddenLiterals(t *testing.T) {
	ids := []string{
		"https://10.0.0.1/client.json",
		"https://169.254.169.254/latest/meta-data",
		"https://192.168.1.1:8443/client.json",
		"https://[fd00::1]/client.json",
		"https://[fe80::1]/client.json",
		"https://[::ffff:10.0.0.1]/client.json",
		"https://0.0.0.0/client.json",
	}
	for _, allow := range []bool{false, true} {
		for _, id := range ids {
			t.Run(fmt.Sprintf("%s/allowLoopback=%v", id, allow), func(t *testing.T) {
				f, dials := newFetcher(t, nil, Options{AllowLoopback: allow})
				_, err := f.Fetch(t.Context(), id)
				if !errors.Is(err, ErrForbiddenAddress) {
					t.Fatalf("Fetch error = %v, want ErrForbiddenAddress", err)
				}
				if dials.Load() != 0 {
					t.Errorf("dials = %d, want 0", dials.Load())
				}
			})
		}
	}
}

func TestFetchInvalidClientID(t *testing.T) {
	f, dials := newFetcher(t, nil, Options{})
	for _, id := range []string{"", "http://127.0.0.1/x", "https://example.com/", "https://example.com/a#b", "chatgpt"} {
		if _, err := f.Fetch(t.Context(), id); !errors.Is(err, ErrInvalidClientID) {
			t.Errorf("Fetch(%q) error = %v, want ErrInvalidClientID", id, err)
		}
	}
	if dials.Load() != 0 {
		t.Errorf("dials = %d, want 0", dials.Load())
	}
}

func TestGuardControl(t *testing.T) {
	tests := []struct {
		network, address string
		allowLoopback    bool
		want             bool
	}{
		{"tcp", "8.8.8.8:443", false, true},
		{"tcp6", "[2606:4700::1111]:443", false, true},
		{"tcp", "10.0.0.1:443", false, false},
		{"tcp4", "169.254.169.254:80", true, false},
		{"tcp", "127.0.0.1:443", false, false},
		{"tcp", "127.0.0.1:443", true, true},
		{"tcp6", "[::1]:443", true, true},
		{"tcp6", "[::ffff:127.0.0.1]:443", false, false},
		{"udp", "8.8.8.8:53", false, false},
		{"tcp", "not-an-address", false, false},
	}
	for _, tt := range tests {
		g := newGuard(tt.allowLoopback, time.Second)
		err := g.control(context.Background(), tt.network, tt.address, nil)
		if got := err == nil; got != tt.want {
			t.Errorf("control(%s, %s, allowLoopback=%v) = %v, want ok=%v", tt.network, tt.address, tt.allowLoopback, err, tt.want)
		}
		if err != nil && !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("control error %v is not ErrForbiddenAddress", err)
		}
	}
}

func TestTransportHardening(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	ts := newTestServer(t, serveValid)
	for _, allow := range []bool{false, true} {
		f := New(Options{AllowLoopback: allow, HTTPClient: ts.Client()})
		tr, ok := f.client.Transport.(*http.Transport)
		if !ok {
			t.Fatalf("transport is %T", f.client.Transport)
		}
		if tr.Proxy != nil {
			t.Errorf("allowLoopback=%v: Proxy is set", allow)
		}
		if tr.TLSClientConfig.MinVersion < 0x0303 {
			t.Errorf("allowLoopback=%v: MinVersion = %#x", allow, tr.TLSClientConfig.MinVersion)
		}
		if tr.DialTLSContext != nil || tr.DialContext == nil {
			t.Errorf("allowLoopback=%v: dial hooks not guarded", allow)
		}
		if got := tr.TLSClientConfig.RootCAs != nil; got != allow {
			t.Errorf("allowLoopback=%v: test CA used = %v", allow, got)
		}
	}
	// The proxy variable must not divert the fetch.
	f, _ := newFetcher(t, ts, Options{AllowLoopback: true})
	if _, err := f.Fetch(t.Context(), ts.clientID()); err != nil {
		t.Fatalf("Fetch with HTTPS_PROXY set: %v", err)
	}
}
