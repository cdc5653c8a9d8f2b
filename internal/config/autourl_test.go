package config

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCloudflaredMetrics(t *testing.T) {
	tests := []struct {
		name, value, want, wantErr string
	}{
		{name: "default", value: "", want: "http://cloudflared:20241"},
		{name: "compose service name", value: "http://tunnel:20241/", want: "http://tunnel:20241"},
		{name: "cluster service name", value: "http://cloudflared.devspace.svc:2000", want: "http://cloudflared.devspace.svc:2000"},
		{name: "loopback", value: "http://127.0.0.1:20241", want: "http://127.0.0.1:20241"},
		{name: "IPv6 loopback", value: "http://[::1]:20241", want: "http://[::1]:20241"},
		{name: "private network", value: "http://172.18.0.5:20241", want: "http://172.18.0.5:20241"},
		{
			name: "https", value: "https://cloudflared:20241",
			wantErr: `DEVSPACE_CLOUDFLARED_METRICS: "https://cloudflared:20241" must start with http://; cloudflared's metrics server speaks plain HTTP on the local network`,
		},
		{
			name: "public address", value: "http://8.8.8.8:20241",
			wantErr: `DEVSPACE_CLOUDFLARED_METRICS: "http://8.8.8.8:20241" is not a loopback or private address; DevSpace asks only cloudflared on this host or its container network`,
		},
		{
			name: "unspecified address", value: "http://0.0.0.0:20241",
			wantErr: `DEVSPACE_CLOUDFLARED_METRICS: "http://0.0.0.0:20241" is not a loopback or private address; DevSpace asks only cloudflared on this host or its container network`,
		},
		{
			name: "path", value: "http://cloudflared:20241/quicktunnel",
			wantErr: `DEVSPACE_CLOUDFLARED_METRICS: "http://cloudflared:20241/quicktunnel" must be an origin only (http://host:port), without a path, query or user name`,
		},
		{
			name: "no scheme", value: "cloudflared:20241",
			wantErr: `DEVSPACE_CLOUDFLARED_METRICS: "cloudflared:20241" is not a URL; give cloudflared's metrics address, such as http://cloudflared:20241`,
		},
		{
			name: "no host", value: "http://:20241",
			wantErr: `DEVSPACE_CLOUDFLARED_METRICS: "http://:20241" has no host; give cloudflared's metrics address, such as http://cloudflared:20241`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(nil, env(with(baseEnv, "DEVSPACE_CLOUDFLARED_METRICS", tt.value)))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Load error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if c.CloudflaredMetrics != tt.want {
				t.Errorf("CloudflaredMetrics = %q, want %q", c.CloudflaredMetrics, tt.want)
			}
		})
	}
}

func TestResolvePublicBaseURL(t *testing.T) {
	load := func(t *testing.T, kv ...string) *Config {
		t.Helper()
		c, err := Load(nil, env(with(baseEnv, append([]string{"DEVSPACE_PUBLIC_BASE_URL", "auto"}, kv...)...)))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	t.Run("default hosts gain the public host first", func(t *testing.T) {
		c := load(t)
		if err := c.ResolvePublicBaseURL("https://Quiet-Fox.trycloudflare.com/"); err != nil {
			t.Fatal(err)
		}
		if c.PublicBaseURL != "https://quiet-fox.trycloudflare.com" || c.Resource() != "https://quiet-fox.trycloudflare.com/mcp" || c.PublicURLIsAuto() {
			t.Errorf("PublicBaseURL = %q, Resource = %q", c.PublicBaseURL, c.Resource())
		}
		// The same list as for a configured URL.
		want := DefaultAllowedHosts("https://quiet-fox.trycloudflare.com", c.Listen)
		if d := cmp.Diff(want, c.AllowedHosts); d != "" {
			t.Errorf("AllowedHosts (-want +got):\n%s", d)
		}
	})
	t.Run("a configured list keeps its entries", func(t *testing.T) {
		c := load(t, "DEVSPACE_ALLOWED_HOSTS", "devspace:7676")
		if err := c.ResolvePublicBaseURL("https://a-b.trycloudflare.com"); err != nil {
			t.Fatal(err)
		}
		want := []string{"a-b.trycloudflare.com", "a-b.trycloudflare.com:443", "devspace:7676"}
		if d := cmp.Diff(want, c.AllowedHosts); d != "" {
			t.Errorf("AllowedHosts (-want +got):\n%s", d)
		}
	})
	for _, bad := range []struct{ origin, want string }{
		{"http://a-b.trycloudflare.com", `DEVSPACE_PUBLIC_BASE_URL: "http://a-b.trycloudflare.com" must use https; plain http is allowed only for a loopback host (localhost, 127.0.0.1, [::1])`},
		{"https://a-b.trycloudflare.com/x", `DEVSPACE_PUBLIC_BASE_URL: "https://a-b.trycloudflare.com/x" has a path; give the origin only (https://a-b.trycloudflare.com)`},
		{"auto", `DEVSPACE_PUBLIC_BASE_URL: the resolved origin must not be "auto"`},
	} {
		t.Run("refuses "+bad.origin, func(t *testing.T) {
			c := load(t)
			before := append([]string(nil), c.AllowedHosts...)
			err := c.ResolvePublicBaseURL(bad.origin)
			if err == nil || err.Error() != bad.want {
				t.Fatalf("error = %v, want %q", err, bad.want)
			}
			if !c.PublicURLIsAuto() || !cmp.Equal(before, c.AllowedHosts) {
				t.Errorf("a refused origin changed the Config: %q %v", c.PublicBaseURL, c.AllowedHosts)
			}
		})
	}
	t.Run("only auto resolves", func(t *testing.T) {
		c, err := Load(nil, env(baseEnv))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.ResolvePublicBaseURL("https://x.example.com"); err == nil || c.PublicBaseURL != DefaultPublicBaseURL {
			t.Errorf("resolved a configured URL: %v, %q", err, c.PublicBaseURL)
		}
	})
}

func TestIsLocalAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1": true, "::1": true, "10.1.2.3": true, "172.16.0.1": true, "172.31.255.254": true,
		"192.168.1.1": true, "fd00::1": true, "::ffff:10.0.0.1": true,
		"172.32.0.1": false, "8.8.8.8": false, "0.0.0.0": false, "::": false, "2001:db8::1": false,
		"169.254.169.254": false, "100.64.0.1": false,
	} {
		if got := IsLocalAddr(netip.MustParseAddr(addr)); got != want {
			t.Errorf("IsLocalAddr(%s) = %v, want %v", addr, got, want)
		}
	}
}
