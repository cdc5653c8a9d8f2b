package httpserver

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/metrics"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// TestShutdownClosesSilentConnections: a connection that was accepted but
// never sent a request (a client's speculative dial, or anybody holding a
// socket open) must not hold Shutdown. net/http treats such a connection
// as busy until it is 5 s old (and serves no request read after Shutdown
// began); Shutdown closes it at once.
func TestShutdownClosesSilentConnections(t *testing.T) {
	s, addr := startEdge(t, Limits{})
	var silent []net.Conn
	for _, a := range []string{addr, s.Addrs()[1].String(), s.Addrs()[2].String()} {
		c, err := net.Dial("tcp", a)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		silent = append(silent, c)
	}
	// Wait until each server accepted its connection (StateNew).
	for i, l := range s.lims {
		for deadline := time.Now().Add(5 * time.Second); l.Len() == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("listener %d never accepted the connection", i)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Shutdown took %s with silent connections open, want well under 1 s", d)
	}
	for i, c := range silent {
		if _, _, err := waitClosed(c, time.Second); err != nil {
			t.Errorf("silent connection %d: %v", i, err)
		}
	}
}

// TestShutdownSaysWhatItWaitsFor: a drain held past slowDrain by a
// request that does not end logs the listener and the connections' states.
func TestShutdownSaysWhatItWaitsFor(t *testing.T) {
	var logs testutil.SyncBuffer
	s := New(Options{PublicAddr: "127.0.0.1:0", ControlAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0",
		AllowedHosts: []string{"127.0.0.1"}, MaxBodyBytes: 1 << 20, Metrics: metrics.New(),
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Routes: []Route{{Method: http.MethodPost, Path: "/echo", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.ReadAll(r.Body)
		})}}})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", s.Addrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The body never arrives whole: the handler stays in its read.
	c.Write([]byte("POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\nabc"))
	for deadline := time.Now().Add(5 * time.Second); s.lims[0].states()["active"] == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the request never became active")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), slowDrain+500*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); err == nil {
		t.Error("Shutdown returned nil with a request still running")
	}
	if got := logs.String(); !strings.Contains(got, `msg="shutdown still waiting for connections" component=http listener=public states=map[active:1]`) {
		t.Errorf("no log of what the drain waits for:\n%s", got)
	}
}
