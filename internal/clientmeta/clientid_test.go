package clientmeta

import (
	"strings"
	"testing"
)

func TestParseClientID(t *testing.T) {
	long := "https://example.com/" + strings.Repeat("a", maxClientIDLen-len("https://example.com/"))
	tests := []struct {
		name string
		id   string
		want bool
	}{
		{"simple", "https://example.com/client.json", true},
		{"port", "https://example.com:8443/oauth/client", true},
		{"query", "https://example.com/client?v=2", true},
		{"ipv4 literal", "https://203.0.113.5/client", true}, // syntax only; Fetch refuses it
		{"ipv6 literal", "https://[2001:db8::1]/client", true},
		{"dotted file name", "https://example.com/.well-known/client.json", true},
		{"three dots", "https://example.com/.../x", true},
		{"exactly 2048 bytes", long, true},

		{"empty", "", false},
		{"http", "http://example.com/client.json", false},
		{"uppercase scheme", "HTTPS://example.com/client.json", false},
		{"other scheme", "ftp://example.com/client.json", false},
		{"no scheme", "example.com/client.json", false},
		{"no host", "https:///client.json", false},
		{"no path", "https://example.com", false},
		{"root path", "https://example.com/", false},
		{"query without path", "https://example.com?x=1", false},
		{"root path with query", "https://example.com/?x=1", false},
		{"fragment", "https://example.com/client.json#x", false},
		{"empty fragment", "https://example.com/client.json#", false},
		{"userinfo", "https://user@example.com/client.json", false},
		{"userinfo with password", "https://user:pw@example.com/client.json", false},
		{"dot segment", "https://example.com/./client.json", false},
		{"dot-dot segment", "https://example.com/a/../client.json", false},
		{"trailing dot-dot", "https://example.com/a/..", false},
		{"encoded dot segment", "https://example.com/%2e/client.json", false},
		{"encoded dot-dot segment", "https://example.com/a/%2E%2e/client.json", false},
		{"half encoded dot-dot", "https://example.com/a/.%2e/client.json", false},
		{"bad escape", "https://example.com/%zz", false},
		{"too long", long + "a", false},
		{"space", "https://example.com/a b", false},
		{"tab", "https://example.com/a\tb", false},
		{"non-ascii", "https://exämple.com/client", false},
		{"backslash", "https://example.com\\@evil.com/client", false},
		{"percent in host", "https://%65xample.com/client", false},
		{"zone", "https://[fe80::1%25eth0]/client", false},
		{"empty port", "https://example.com:/client", false},
		{"opaque", "https:example.com/client", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := parseClientID(tt.id, false); (err == nil) != tt.want {
				t.Errorf("parseClientID(%q) = %v, want ok=%v", tt.id, err, tt.want)
			}
		})
	}
}

func TestParseClientIDLoopbackHTTP(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{"http://127.0.0.1:8080/client", true},
		{"http://[::1]:8080/client", true},
		{"http://localhost:8080/client", true},
		{"http://example.com/client", false},
		{"http://10.0.0.1/client", false},
	}
	for _, tt := range tests {
		_, err := parseClientID(tt.id, true)
		if got := err == nil; got != tt.want {
			t.Errorf("parseClientID(%q, allowLoopbackHTTP) error = %v, want ok=%v", tt.id, err, tt.want)
		}
		if _, err := parseClientID(tt.id, false); err == nil {
			t.Errorf("parseClientID(%q, false) accepted http", tt.id)
		}
	}
}
