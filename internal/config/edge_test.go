package config

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestEdgeSettings(t *testing.T) {
	got, err := Load(nil, env(with(baseEnv,
		"DEVSPACE_TRUSTED_PROXIES", "172.18.0.0/16, 10.0.0.7",
		"DEVSPACE_CLIENT_IP_HEADER", "x-real-ip",
		"DEVSPACE_OWNER_PASSWORD_MAX_CONCURRENT", "4",
		"DEVSPACE_OAUTH_REGISTRATIONS_PER_SOURCE", "5",
		"DEVSPACE_HTTP_MAX_CONNECTIONS", "64",
		"DEVSPACE_HTTP_READ_HEADER_TIMEOUT", "2s",
		"DEVSPACE_HTTP_BODY_IDLE_TIMEOUT", "1s",
		"DEVSPACE_HTTP_BODY_TIMEOUT", "30s",
		"DEVSPACE_HTTP_IDLE_TIMEOUT", "10s",
		"DEVSPACE_MCP_BODY_BUDGET", "256MiB",
		"DEVSPACE_MCP_BODY_GRANT_SHARE", "32MiB",
		"DEVSPACE_MCP_SESSION_IDLE_TIMEOUT", "5m",
		"DEVSPACE_MCP_MAX_SESSIONS_PER_GRANT", "3",
	)))
	if err != nil {
		t.Fatal(err)
	}
	want := Edge{
		TrustedProxies:         []netip.Prefix{netip.MustParsePrefix("172.18.0.0/16"), netip.MustParsePrefix("10.0.0.7/32")},
		ClientIPHeader:         "X-Real-Ip",
		PasswordConcurrency:    4,
		RegistrationsPerSource: 5,
		MaxConnections:         64,
		ReadHeaderTimeout:      2 * time.Second,
		BodyIdleTimeout:        time.Second,
		BodyTimeout:            30 * time.Second,
		IdleTimeout:            10 * time.Second,
		MCPBodyBudget:          256 << 20,
		MCPBodyGrantShare:      32 << 20,
		MCPSessionIdleTimeout:  5 * time.Minute,
		MCPSessionsPerGrant:    3,
	}
	if d := cmp.Diff(want, got.Edge, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); d != "" {
		t.Errorf("Edge (-want +got):\n%s", d)
	}
	if def, _ := Load(nil, env(baseEnv)); def.GrantShare() != 128<<20 {
		t.Errorf("default grant share = %d, want 128MiB (half the 256 MiB budget)", def.GrantShare())
	}
}

func TestEdgeSettingsInvalid(t *testing.T) {
	for _, tt := range []struct{ env, value, want string }{
		{"DEVSPACE_TRUSTED_PROXIES", "cloudflared", `"cloudflared" is not an IP address or CIDR`},
		{"DEVSPACE_OWNER_PASSWORD_MAX_CONCURRENT", "0", "0 is out of range"},
		{"DEVSPACE_OWNER_PASSWORD_MAX_CONCURRENT", "two", "not a whole number"},
		{"DEVSPACE_OAUTH_REGISTRATIONS_PER_SOURCE", "-1", "out of range"},
		{"DEVSPACE_HTTP_MAX_CONNECTIONS", "4", "out of range"},
		{"DEVSPACE_HTTP_READ_HEADER_TIMEOUT", "0s", "out of range"},
		{"DEVSPACE_HTTP_BODY_IDLE_TIMEOUT", "10m", "out of range"},
		{"DEVSPACE_HTTP_BODY_TIMEOUT", "5s", "longer than DEVSPACE_HTTP_BODY_TIMEOUT"},
		{"DEVSPACE_HTTP_IDLE_TIMEOUT", "2h", "out of range"},
		{"DEVSPACE_MCP_BODY_BUDGET", "1MiB", "out of range"},
		{"DEVSPACE_MCP_BODY_GRANT_SHARE", "1GiB", "out of range"},
		{"DEVSPACE_MCP_SESSION_IDLE_TIMEOUT", "soon", "not a duration"},
		{"DEVSPACE_MCP_MAX_SESSIONS_PER_GRANT", "0", "out of range"},
		{"DEVSPACE_CLIENT_IP_HEADER", "a b", "not a header name"},
	} {
		t.Run(tt.env+"="+tt.value, func(t *testing.T) {
			_, err := Load(nil, env(with(baseEnv, tt.env, tt.value)))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load error = %v, want one containing %q", err, tt.want)
			}
			if !strings.Contains(err.Error(), "DEVSPACE_HTTP_BODY_IDLE_TIMEOUT") && !strings.Contains(err.Error(), tt.env) {
				t.Errorf("error does not name %s: %v", tt.env, err)
			}
		})
	}
}
