package quicktunnel_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/quicktunnel"
)

// standIn is cloudflared's metrics server: /quicktunnel answers an empty
// hostname for the first `after` requests, then host.
func standIn(t *testing.T, after int32, host string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/quicktunnel" || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		h := ""
		if calls.Add(1) > after {
			h = host
		}
		// cloudflared writes exactly this (metrics.go).
		fmt.Fprintf(w, `{"hostname":"%s"}`, h)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func fast(url string) quicktunnel.Options {
	return quicktunnel.Options{MetricsURL: url, Timeout: 5 * time.Second, Interval: 10 * time.Millisecond}
}

func TestResolveWaitsForTheHostname(t *testing.T) {
	srv, calls := standIn(t, 3, "Bright-Owl-42.trycloudflare.com")
	got, err := quicktunnel.Resolve(context.Background(), fast(srv.URL+"/"))
	if err != nil {
		t.Fatal(err)
	}
	if got != "https://bright-owl-42.trycloudflare.com" {
		t.Errorf("Resolve = %q", got)
	}
	if n := calls.Load(); n != 4 {
		t.Errorf("cloudflared asked %d times, want 4", n)
	}
}

func TestResolveRetriesUntilCloudflaredListens(t *testing.T) {
	// Reserve an address, then start serving on it only after a while, as
	// when DevSpace starts before cloudflared.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"hostname":"late-cat.trycloudflare.com"}`)
	})}
	go func() {
		time.Sleep(200 * time.Millisecond)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return // the port was taken meanwhile; Resolve then times out and says so
		}
		srv.Serve(ln)
	}()
	t.Cleanup(func() { srv.Close() })
	got, err := quicktunnel.Resolve(context.Background(), fast("http://"+addr))
	if err != nil || got != "https://late-cat.trycloudflare.com" {
		t.Fatalf("Resolve = %q, %v", got, err)
	}
}

func TestResolveGivesUp(t *testing.T) {
	srv, _ := standIn(t, 1<<30, "never.trycloudflare.com")
	opts := fast(srv.URL)
	opts.Timeout = 500 * time.Millisecond
	start := time.Now()
	_, err := quicktunnel.Resolve(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "no quick-tunnel hostname from cloudflared") ||
		!strings.Contains(err.Error(), "has not registered a quick tunnel yet") {
		t.Fatalf("Resolve error = %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("gave up after %s, want about 500ms", d)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := quicktunnel.Resolve(ctx, fast(srv.URL)); err == nil {
		t.Error("Resolve with a cancelled context succeeded")
	}
}

func TestResolveRefusesBadHostnames(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "localhost", "single-label", "evil.com/path", "a..b", "-x.example.com", "x_y.example.com"} {
		t.Run(host, func(t *testing.T) {
			srv, calls := standIn(t, 0, host)
			_, err := quicktunnel.Resolve(context.Background(), fast(srv.URL))
			if err == nil || !strings.Contains(err.Error(), "invalid quick-tunnel hostname") {
				t.Fatalf("Resolve error = %v", err)
			}
			if calls.Load() != 1 {
				t.Errorf("asked %d times; an invalid answer must stop the wait", calls.Load())
			}
		})
	}
}

func TestResolveOnlyDialsLocalAddresses(t *testing.T) {
	// 192.0.2.1 (TEST-NET-1) is public: the dialer refuses it before any
	// packet is sent, and Resolve stops at once.
	start := time.Now()
	_, err := quicktunnel.Resolve(context.Background(), fast("http://192.0.2.1:20241"))
	if !errors.Is(err, quicktunnel.ErrNotLocal) {
		t.Fatalf("Resolve error = %v, want ErrNotLocal", err)
	}
	if time.Since(start) > time.Second {
		t.Errorf("took %s; a refused address must not be retried", time.Since(start))
	}
}

func TestResolveDoesNotFollowRedirects(t *testing.T) {
	var hops atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hops.Add(1)
		http.Redirect(w, r, "http://192.0.2.1/quicktunnel", http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	opts := fast(srv.URL)
	opts.Timeout = 500 * time.Millisecond
	_, err := quicktunnel.Resolve(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "302 Found") || hops.Load() == 0 {
		t.Fatalf("Resolve error = %v", err)
	}
}
