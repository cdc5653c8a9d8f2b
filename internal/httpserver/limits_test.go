package httpserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/metrics"
)

// startEdge serves a real public listener on 127.0.0.1 with lim and a
// POST /echo route that reads its body the way the OAuth handlers do.
func startEdge(t *testing.T, lim Limits) (*Server, string) {
	t.Helper()
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			http.Error(w, "request body timed out", http.StatusRequestTimeout)
			return
		}
		if err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "%d", len(b))
	})
	s := New(Options{PublicAddr: "127.0.0.1:0", ControlAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0",
		AllowedHosts: []string{"127.0.0.1"}, MaxBodyBytes: 1 << 20, Limits: lim,
		Routes: []Route{{Method: http.MethodPost, Path: "/echo", Handler: echo}}, Metrics: metrics.New()})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s, s.Addrs()[0].String()
}

// waitClosed reads from c until the server closes it, returning what was
// read and how long it took (or fails after limit).
func waitClosed(c net.Conn, limit time.Duration) (string, time.Duration, error) {
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(limit))
	b, err := io.ReadAll(c)
	if err != nil && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
		return string(b), time.Since(start), err
	}
	return string(b), time.Since(start), nil
}

func healthy(addr string) error {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + addr + "/healthz")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthz: %s", resp.Status)
	}
	return nil
}

// TestSlowBodyGets408: a body that stops arriving is dropped with 408
// within the idle timeout, and the connection is closed.
func TestSlowBodyGets408(t *testing.T) {
	_, addr := startEdge(t, Limits{BodyIdleTimeout: 300 * time.Millisecond, BodyTimeout: 2 * time.Second})
	for _, tt := range []struct{ name, head string }{
		{"content-length", "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\nx"},
		{"chunked trickle", "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := io.WriteString(c, tt.head); err != nil {
				t.Fatal(err)
			}
			out, took, err := waitClosed(c, 5*time.Second)
			if err != nil {
				t.Fatalf("connection still open after %v: %v (read %q)", took, err, out)
			}
			if !strings.HasPrefix(out, "HTTP/1.1 408") {
				t.Errorf("answer = %q, want 408", out)
			}
			if took > 2*time.Second {
				t.Errorf("closed after %v, want about 300ms", took)
			}
		})
	}
	t.Run("a trickle that never pauses long still meets the body timeout", func(t *testing.T) {
		_, addr := startEdge(t, Limits{BodyIdleTimeout: 300 * time.Millisecond, BodyTimeout: time.Second})
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = io.WriteString(c, "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n")
		start := time.Now()
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
					if _, err := c.Write([]byte("x")); err != nil {
						return
					}
				}
			}
		}()
		defer close(stop)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("after %v: %v", time.Since(start), err)
		}
		if resp.StatusCode != http.StatusRequestTimeout || time.Since(start) > 3*time.Second {
			t.Errorf("status %d after %v, want 408 after about 1s", resp.StatusCode, time.Since(start))
		}
	})
	t.Run("a prompt body passes", func(t *testing.T) {
		resp, err := http.Post("http://"+addr+"/echo", "text/plain", strings.NewReader(strings.Repeat("a", 100000)))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "100000" {
			t.Fatalf("%s %s", resp.Status, b)
		}
	})
}

// TestSlowClientFlood: 60 slow-header and 60 slow-body connections against
// a listener bounded to 32 connections. /healthz keeps answering while
// they are open, and every slow connection is closed within its timeout.
func TestSlowClientFlood(t *testing.T) {
	lim := Limits{MaxConnections: 32, ReadHeaderTimeout: 500 * time.Millisecond,
		BodyIdleTimeout: 500 * time.Millisecond, BodyTimeout: 2 * time.Second, IdleTimeout: time.Second}
	s, addr := startEdge(t, lim)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range 120 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if i%2 == 0 {
			_, _ = io.WriteString(c, "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\n") // headers never end
		} else {
			_, _ = io.WriteString(c, "POST /register HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\nx")
		}
	}
	// Health answers during the flood, also from new connections.
	for range 10 {
		if err := healthy(addr); err != nil {
			t.Fatalf("healthz during the flood: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := s.lims[0].Len(); n > lim.MaxConnections {
		t.Errorf("%d connections counted, bound is %d", n, lim.MaxConnections)
	}
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, took, err := waitClosed(c, 5*time.Second); err != nil {
				t.Errorf("slow connection %d still open after %v: %v (%q)", i, took, err, out)
			}
		}()
	}
	wg.Wait()
	if err := healthy(addr); err != nil {
		t.Fatalf("healthz after the flood: %v", err)
	}
}
