// Package quicktunnel learns the public hostname of a cloudflared quick
// tunnel (https://<random>.trycloudflare.com) from cloudflared's metrics
// server, so that DEVSPACE_PUBLIC_BASE_URL=auto works without copying a URL
// out of cloudflared's log.
//
// cloudflared answers GET /quicktunnel with {"hostname":"…"}; the hostname
// is empty until the quick tunnel is registered (and stays empty for a
// named tunnel). Resolve polls until it is known, for a bounded time, and
// only ever connects to loopback or private addresses: cloudflared runs on
// this host or on the compose or cluster network, and the metrics server
// speaks plain HTTP.
package quicktunnel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/devspace-dev/devspace/internal/config"
)

// Defaults of Options.
const (
	// DefaultTimeout bounds the whole wait. cloudflared usually registers a
	// quick tunnel within a few seconds of starting.
	DefaultTimeout = 60 * time.Second
	// DefaultInterval is the pause between two attempts.
	DefaultInterval = time.Second
	// maxBody caps the answer read from cloudflared.
	maxBody = 4 << 10
)

// ErrNotLocal is returned (wrapped) when the metrics address resolves to an
// address that is neither loopback nor private. Resolve gives up at once.
var ErrNotLocal = errors.New("cloudflared metrics address is neither loopback nor private")

// Options configure Resolve. The zero value of every field but MetricsURL
// means its default.
type Options struct {
	// MetricsURL is cloudflared's metrics server, such as
	// http://cloudflared:20241 (DEVSPACE_CLOUDFLARED_METRICS). Empty means
	// config.DefaultCloudflaredMetrics.
	MetricsURL string
	// Timeout bounds the whole wait. Zero means DefaultTimeout.
	Timeout time.Duration
	// Interval is the pause between attempts. Zero means DefaultInterval.
	Interval time.Duration
	// Dialer connects to the metrics server. Nil means a net.Dialer that
	// refuses every address that is not loopback or private; a test may
	// pass its own.
	Dialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// Logger reports the wait. Nil discards.
	Logger *slog.Logger
}

// Resolve polls opts.MetricsURL + "/quicktunnel" until cloudflared reports
// the quick tunnel's hostname and returns the public origin
// "https://<hostname>". It returns an error naming the last problem when
// the time is up or ctx ends first, and at once when the address is not
// local (ErrNotLocal) or the answer is not a valid host name.
func Resolve(ctx context.Context, opts Options) (string, error) {
	if opts.MetricsURL == "" {
		opts.MetricsURL = config.DefaultCloudflaredMetrics
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dial := opts.Dialer
	if dial == nil {
		dial = localDialer().DialContext
	}
	endpoint := strings.TrimRight(opts.MetricsURL, "/") + "/quicktunnel"
	if _, err := url.Parse(endpoint); err != nil {
		return "", fmt.Errorf("cloudflared metrics URL %q: %w", opts.MetricsURL, err)
	}
	client := &http.Client{
		Transport: &http.Transport{DialContext: dial, Proxy: nil, DisableKeepAlives: true},
		Timeout:   5 * time.Second,
		// cloudflared never redirects here; following one could leave the
		// local network.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	log.Info("waiting for the quick-tunnel hostname", "component", "quicktunnel", "metrics", opts.MetricsURL)
	var last error
	for attempt := 1; ; attempt++ {
		host, err := fetch(ctx, client, endpoint)
		switch {
		case err == nil:
			log.Info("quick tunnel found", "component", "quicktunnel", "public_base_url", "https://"+host, "attempts", attempt)
			return "https://" + host, nil
		case errors.Is(err, ErrNotLocal), errors.Is(err, errBadHostname):
			return "", err
		}
		if last == nil || ctx.Err() == nil {
			// An attempt cut short by the deadline says less than the one
			// before it.
			last = err
		}
		timer := time.NewTimer(opts.Interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return "", fmt.Errorf("no quick-tunnel hostname from cloudflared at %s after %s (last: %v); "+
				"start cloudflared with `tunnel --url http://devspace:7676 --metrics 0.0.0.0:20241`, "+
				"or set DEVSPACE_PUBLIC_BASE_URL to the public https URL", opts.MetricsURL, opts.Timeout, last)
		case <-timer.C:
		}
	}
}

// errNotYet says cloudflared answered but has no hostname yet.
var errNotYet = errors.New("cloudflared has not registered a quick tunnel yet")

// errBadHostname says cloudflared answered with something that is not a
// public DNS name.
var errBadHostname = errors.New("cloudflared reported an invalid quick-tunnel hostname")

func fetch(ctx context.Context, client *http.Client, endpoint string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /quicktunnel answered %s", resp.Status)
	}
	var body struct {
		Hostname string `json:"hostname"`
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return "", err
	}
	if err := json.Unmarshal(data, &body); err != nil {
		return "", fmt.Errorf("GET /quicktunnel: %w", err)
	}
	host := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(body.Hostname), "."))
	if host == "" {
		return "", errNotYet
	}
	if !publicHostname(host) {
		return "", fmt.Errorf("%w: %q", errBadHostname, body.Hostname)
	}
	return host, nil
}

// publicHostname reports whether h is a DNS name of at least two labels
// (not an IP address, not localhost) made of letters, digits and hyphens.
func publicHostname(h string) bool {
	if len(h) > 253 || config.IsLoopbackHost(h) {
		return false
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return false
	}
	labels := strings.Split(h, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// localDialer refuses, after name resolution and before connecting, every
// address that is not loopback or private.
func localDialer() *net.Dialer {
	return &net.Dialer{
		Timeout: 3 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %s", ErrNotLocal, address)
			}
			if !config.IsLocalAddr(ap.Addr()) {
				return fmt.Errorf("%w: %s", ErrNotLocal, ap.Addr())
			}
			return nil
		},
	}
}
