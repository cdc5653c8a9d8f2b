package mcpserver_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/apptest"
)

var sessionClient = &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}

// openSession initializes a stateful session and returns its ID.
func openSession(token, url string) (string, error) {
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := sessionClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		return "", fmt.Errorf("initialize: %s, session %q", resp.Status, id)
	}
	return id, nil
}

// pingSession sends a ping on session id and returns the HTTP status.
func pingSession(t *testing.T, token, url, id string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := sessionClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// TestSessionsCappedPerGrant: a grant that opens more sessions than its
// cap loses its least recently used ones; another grant keeps its own.
func TestSessionsCappedPerGrant(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Env: map[string]string{"DEVSPACE_MCP_MAX_SESSIONS_PER_GRANT": "3"}})
	_, a := env.Grant(apptest.Approval{})
	_, b := env.Grant(apptest.Approval{})
	other, err := openSession(b.AccessToken, env.URL)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 3 {
		id, err := openSession(a.AccessToken, env.URL)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// Use the first so that the second becomes the least recently used.
	if st := pingSession(t, a.AccessToken, env.URL, ids[0]); st != http.StatusOK {
		t.Fatalf("ping on a live session: %d", st)
	}
	for range 2 {
		id, err := openSession(a.AccessToken, env.URL)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	want := []int{http.StatusOK, http.StatusNotFound, http.StatusNotFound, http.StatusOK, http.StatusOK}
	for i, id := range ids {
		if st := pingSession(t, a.AccessToken, env.URL, id); st != want[i] {
			t.Errorf("session %d: ping %d, want %d", i, st, want[i])
		}
	}
	if st := pingSession(t, b.AccessToken, env.URL, other); st != http.StatusOK {
		t.Errorf("another grant's session: ping %d, want 200", st)
	}
}

// listen opens the GET event stream of session id and returns once the
// server has answered with its headers; stop closes the stream.
func listen(t *testing.T, token, url, id string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := sessionClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		t.Fatalf("GET stream: %s", resp.Status)
	}
	return func() { cancel(); resp.Body.Close() }
}

// TestSessionCapCountsPOSTsNotStreams: the per-grant cap closes the
// session the SDK's idle timer counts as least recently used — the one
// whose latest POST is oldest — even when a GET stream was opened on it
// since: go-sdk v1.8 does not count GET streams as use and closes such a
// session at its idle timeout anyway, while the other session was used.
func TestSessionCapCountsPOSTsNotStreams(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Env: map[string]string{"DEVSPACE_MCP_MAX_SESSIONS_PER_GRANT": "2"}})
	_, tok := env.Grant(apptest.Approval{})
	var ids []string
	for range 2 {
		id, err := openSession(tok.AccessToken, env.URL)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	stop := listen(t, tok.AccessToken, env.URL, ids[0])
	defer stop()
	third, err := openSession(tok.AccessToken, env.URL)
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, third)
	want := []int{http.StatusNotFound, http.StatusOK, http.StatusOK}
	for i, id := range ids {
		if st := pingSession(t, tok.AccessToken, env.URL, id); st != want[i] {
			t.Errorf("session %d: ping %d, want %d", i, st, want[i])
		}
	}
}

func heapInUse() uint64 {
	var ms runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestIdleSessionsExpire (issue 17, attack 7): 10,000 sessions opened and
// left idle are closed after the idle timeout, and the heap returns to
// its baseline.
func TestIdleSessionsExpire(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 10,000 sessions")
	}
	env := apptest.Start(t, apptest.Options{DiscardLogs: true, Env: map[string]string{
		"DEVSPACE_MCP_SESSION_IDLE_TIMEOUT": "20s", "DEVSPACE_MCP_MAX_SESSIONS_PER_GRANT": "10000"}})
	_, tok := env.Grant(apptest.Approval{})
	first, err := openSession(tok.AccessToken, env.URL)
	if err != nil {
		t.Fatal(err)
	}
	base := heapInUse()
	baseG := runtime.NumGoroutine()
	const n = 10000
	opening := time.Now()
	var wg sync.WaitGroup
	var next, failed, retried, slowest atomic.Int64
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= n {
				// This test is about what idle sessions hold, not about
				// latency: a race-detector run beside other packages on two
				// cores has stalled every request in flight past the
				// client's 20 s once (CI, 2026-12-05), so an open that
				// times out is tried again, and the slowest is logged.
				var err error
				for attempt := range 3 {
					start := time.Now()
					_, err = openSession(tok.AccessToken, env.URL)
					took := int64(time.Since(start))
					for cur := slowest.Load(); took > cur && !slowest.CompareAndSwap(cur, took); cur = slowest.Load() {
					}
					if err == nil || !os.IsTimeout(err) {
						break
					}
					if attempt < 2 {
						retried.Add(1)
					}
				}
				if err != nil && failed.Add(1) == 1 {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("slowest open %s; %d opens retried after a timeout", time.Duration(slowest.Load()), retried.Load())
	if failed.Load() > 0 {
		t.Fatalf("%d sessions failed to open", failed.Load())
	}
	peak := heapInUse()
	peakG := runtime.NumGoroutine()
	// The Go runtime keeps the descriptors of exited goroutines for reuse
	// (about 500 bytes each, never freed), so the peak's goroutines count
	// against the baseline; everything the sessions held must be gone.
	limit := base + base/4 + 4<<20 + uint64(peakG)*600
	t.Logf("heap in use: baseline %d KiB, with %d sessions %d KiB, goroutines %d", base>>10, n, peak>>10, peakG)
	// The sessions opened first expire 20 s after they opened; on a loaded
	// machine (a race-detector run beside other packages) opening 10,000
	// can take longer than that, and then they are not all held at once.
	if took := time.Since(opening); took > 10*time.Second {
		t.Logf("opening took %s; not checking that all were held at once", took)
	} else if peak < base+8<<20 {
		t.Errorf("10,000 open sessions took only %d KiB; were they held?", (peak-base)>>10)
	}
	deadline := time.Now().Add(60 * time.Second)
	for pingSession(t, tok.AccessToken, env.URL, first) != http.StatusNotFound {
		if time.Now().After(deadline) {
			t.Fatal("an idle session was never closed")
		}
		time.Sleep(500 * time.Millisecond)
	}
	var after uint64
	for {
		time.Sleep(500 * time.Millisecond)
		after = heapInUse()
		if after <= limit || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("heap in use after expiry: %d KiB; goroutines %d → %d", after>>10, baseG, runtime.NumGoroutine())
	if after > limit {
		t.Errorf("heap after expiry %d KiB, baseline %d KiB (peak %d KiB)", after>>10, base>>10, peak>>10)
	}
}
