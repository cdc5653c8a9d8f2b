package mcpserver_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/mcpserver"
)

// TestBodyBudget: the bytes of request bodies handled at once are
// bounded. With 1 MiB bodies the budget is 64 MiB: 64 clients that
// declare 1 MiB and trickle it hold it all, the next large request gets
// 503 with Retry-After instead of more memory, and once they are gone
// requests are served again.
func TestBodyBudget(t *testing.T) {
	t.Cleanup(mcpserver.SetBodyWait(300 * time.Millisecond))
	env := apptest.Start(t, apptest.Options{Env: map[string]string{"DEVSPACE_MAX_REQUEST_BODY": "1MiB"}})
	_, tok := env.Grant(apptest.Approval{})
	auth := map[string]string{"Authorization": "Bearer " + tok.AccessToken}
	addr := strings.TrimPrefix(env.URL, "http://")
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range 64 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
			"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n{\"jsonrpc\"", addr, tok.AccessToken, 1<<20)
	}
	// Wait until the server holds them all: then a large request is refused.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, _ := post(t, env.URL+"/mcp", auth, strings.NewReader(initBody+strings.Repeat(" ", 900<<10)))
		if resp.StatusCode == http.StatusServiceUnavailable {
			if resp.Header.Get("Retry-After") == "" {
				t.Fatal("503 without Retry-After")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a large request beyond the body budget got %d", resp.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, c := range held {
		c.Close()
	}
	held = nil
	deadline = time.Now().Add(10 * time.Second)
	for {
		resp, _ := post(t, env.URL+"/mcp", auth, strings.NewReader(initBody))
		if resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("budget not returned: %d", resp.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The held connections got no answer but an error or nothing: check
	// one more closes cleanly (the server did not wedge).
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", addr)
	if line, _ := bufio.NewReader(c).ReadString('\n'); !strings.Contains(line, "200") {
		t.Fatalf("healthz after: %q", line)
	}
}
