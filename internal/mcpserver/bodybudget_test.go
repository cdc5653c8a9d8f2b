package mcpserver_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/mcpserver"
)

// holdBody opens a POST /mcp that declares declared bytes, sends sent of
// them and stalls.
func holdBody(t *testing.T, env *apptest.Env, token string, chunked bool, declared, sent int) net.Conn {
	t.Helper()
	addr := strings.TrimPrefix(env.URL, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	length := fmt.Sprintf("Content-Length: %d", declared)
	if chunked {
		length = "Transfer-Encoding: chunked"
	}
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\n%s\r\n\r\n", addr, token, length)
	body := "{" + strings.Repeat(" ", sent-1)
	if chunked {
		fmt.Fprintf(c, "%x\r\n%s\r\n", len(body), body)
	} else {
		io.WriteString(c, body)
	}
	return c
}

// TestChunkedTrickleDoesNotBlockOtherGrants (issue 17, attack 2): a
// read-only grant opens four chunked POSTs and sends one byte each. The
// budget counts what arrives, not the declared cap, so another grant's
// tools/list is answered at once; the stalled bodies are dropped with 408.
func TestChunkedTrickleDoesNotBlockOtherGrants(t *testing.T) {
	t.Cleanup(mcpserver.SetBodyWait(300 * time.Millisecond))
	env := apptest.Start(t, apptest.Options{Env: map[string]string{"DEVSPACE_HTTP_BODY_IDLE_TIMEOUT": "2s"}})
	_, attacker := env.Grant(apptest.Approval{})
	_, victim := env.Grant(apptest.Approval{})
	var held []net.Conn
	for range 4 {
		held = append(held, holdBody(t, env, attacker.AccessToken, true, 0, 1))
	}
	time.Sleep(200 * time.Millisecond) // the server is reading them
	auth := map[string]string{"Authorization": "Bearer " + victim.AccessToken}
	for range 5 {
		resp, body := post(t, env.URL+"/mcp", auth, strings.NewReader(initBody))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("other grant's initialize during the trickle: %d %s", resp.StatusCode, body)
		}
	}
	for i, c := range held {
		_ = c.SetReadDeadline(time.Now().Add(6 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || !strings.Contains(line, "408") {
			t.Errorf("trickled body %d: %q %v, want 408", i, line, err)
		}
	}
}

// TestBodyBudgetGrantShare: bodies that really arrive are budgeted; one
// grant can hold at most its share, so a grant that stalls large bodies
// gets 503 with Retry-After for the next one while another grant's large
// request is served.
func TestBodyBudgetGrantShare(t *testing.T) {
	t.Cleanup(mcpserver.SetBodyWait(300 * time.Millisecond))
	env := apptest.Start(t, apptest.Options{Env: map[string]string{
		"DEVSPACE_MAX_REQUEST_BODY": "1MiB", "DEVSPACE_MCP_BODY_BUDGET": "32MiB", "DEVSPACE_MCP_BODY_GRANT_SHARE": "16MiB",
		"DEVSPACE_HTTP_BODY_IDLE_TIMEOUT": "20s"}})
	_, hog := env.Grant(apptest.Approval{})
	_, other := env.Grant(apptest.Approval{})
	// Each held body costs what arrived plus the chunk reserved ahead of
	// the next read, at what decoding costs (8x): 2 × 8 × (900 KiB + 64
	// KiB) fits the 16 MiB share, a third large body does not.
	for range 2 {
		holdBody(t, env, hog.AccessToken, false, 1<<20, 900<<10)
	}
	// The server reads (and charges) the held bodies from its socket
	// buffers; a probe racing those reads could take their room instead.
	time.Sleep(3 * time.Second)
	large := initBody + strings.Repeat(" ", 900<<10)
	hogAuth := map[string]string{"Authorization": "Bearer " + hog.AccessToken}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, _ := post(t, env.URL+"/mcp", hogAuth, strings.NewReader(large))
		if resp.StatusCode == http.StatusServiceUnavailable {
			if resp.Header.Get("Retry-After") == "" {
				t.Fatal("503 without Retry-After")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a large request beyond the grant's share got %d", resp.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, body := post(t, env.URL+"/mcp", map[string]string{"Authorization": "Bearer " + other.AccessToken}, strings.NewReader(large))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("other grant's large request: %d %s", resp.StatusCode, body)
	}
}

// TestBodyOverMaxChunked: a /mcp body over MaxBody sent without a
// declared length (chunked) is refused as it crosses the bound, not
// accepted up to a chunk past it.
func TestBodyOverMaxChunked(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	_, tok := env.Grant(apptest.Approval{})
	body := io.MultiReader(strings.NewReader(initBody[:len(initBody)-1]+`,"pad":"`), strings.NewReader(strings.Repeat("x", mcpserver.MaxBody)), strings.NewReader(`"}`))
	req, _ := http.NewRequest(http.MethodPost, env.URL+"/mcp", io.NopCloser(body))
	req.ContentLength = -1
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a chunked body of %d bytes: %d, want 413", mcpserver.MaxBody+len(initBody)+8, resp.StatusCode)
	}
}
