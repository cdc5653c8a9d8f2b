package testutil

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// PostOversized sends a POST of size bytes (spaces) to rawURL with the
// given headers and returns the response status. A server that answers
// early (413) and closes the connection while the body is still being
// written makes net/http's client report "broken pipe" instead of the
// response, some of the time; here the body is written on its own while
// the response is read, so the status is what the server said.
func PostOversized(t testing.TB, rawURL string, header map[string]string, size int) int {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	host := u.Host
	var b strings.Builder
	for k, v := range header {
		if strings.EqualFold(k, "Host") {
			host = v
			continue
		}
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n%s\r\n",
		u.RequestURI(), host, size, b.String())
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	go func() {
		chunk := []byte(strings.Repeat(" ", 64<<10))
		for sent := 0; sent < size; sent += len(chunk) {
			if _, err := conn.Write(chunk[:min(len(chunk), size-sent)]); err != nil {
				return // the server stopped reading: expected
			}
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no response to the oversized POST: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Bearer is a RoundTripper that sends every request through base (or
// http.DefaultTransport when nil) with "Authorization: Bearer token", as
// an MCP client holding an access token does.
func Bearer(token string, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return bearer{token, base}
}

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}
