package config

import (
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Environment variables of the public-edge limits.
const (
	envTrustedProxies        = "DEVSPACE_TRUSTED_PROXIES"
	envClientIPHeader        = "DEVSPACE_CLIENT_IP_HEADER"
	envPasswordConcurrency   = "DEVSPACE_OWNER_PASSWORD_MAX_CONCURRENT"
	envRegistrationsPerSrc   = "DEVSPACE_OAUTH_REGISTRATIONS_PER_SOURCE"
	envHTTPMaxConnections    = "DEVSPACE_HTTP_MAX_CONNECTIONS"
	envHTTPReadHeaderTimeout = "DEVSPACE_HTTP_READ_HEADER_TIMEOUT"
	envHTTPBodyIdleTimeout   = "DEVSPACE_HTTP_BODY_IDLE_TIMEOUT"
	envHTTPBodyTimeout       = "DEVSPACE_HTTP_BODY_TIMEOUT"
	envHTTPIdleTimeout       = "DEVSPACE_HTTP_IDLE_TIMEOUT"
	envMCPBodyBudget         = "DEVSPACE_MCP_BODY_BUDGET"
	envMCPBodyGrantShare     = "DEVSPACE_MCP_BODY_GRANT_SHARE"
	envMCPSessionIdle        = "DEVSPACE_MCP_SESSION_IDLE_TIMEOUT"
	envMCPSessionsPerGrant   = "DEVSPACE_MCP_MAX_SESSIONS_PER_GRANT"
)

// Defaults of the public-edge limits. docs/decisions.md explains each.
const (
	DefaultClientIPHeader         = "Cf-Connecting-Ip"
	DefaultPasswordConcurrency    = 2
	DefaultRegistrationsPerSource = 20 // per hour, per trusted source address
	DefaultHTTPMaxConnections     = 512
	DefaultHTTPReadHeaderTimeout  = 10 * time.Second
	DefaultHTTPBodyIdleTimeout    = 15 * time.Second
	DefaultHTTPBodyTimeout        = 2 * time.Minute
	DefaultHTTPIdleTimeout        = 2 * time.Minute
	DefaultMCPBodyBudget          = 256 << 20
	DefaultMCPSessionIdleTimeout  = 30 * time.Minute
	DefaultMCPSessionsPerGrant    = 32
)

// Edge holds the limits of the public edge. The zero value is not valid;
// Defaults fills it.
type Edge struct {
	// TrustedProxies are peers whose ClientIPHeader is believed
	// (DEVSPACE_TRUSTED_PROXIES, addresses or CIDRs). Default: none, so
	// per-source limits that could lock everyone out behind a tunnel are off.
	TrustedProxies []netip.Prefix
	// ClientIPHeader is the header a trusted proxy sets
	// (DEVSPACE_CLIENT_IP_HEADER). Default: Cf-Connecting-Ip.
	ClientIPHeader string
	// PasswordConcurrency bounds Owner-password verifications in flight
	// (DEVSPACE_OWNER_PASSWORD_MAX_CONCURRENT). Default: 2; 1 to 64.
	PasswordConcurrency int
	// RegistrationsPerSource bounds dynamic registrations per trusted source
	// address per hour (DEVSPACE_OAUTH_REGISTRATIONS_PER_SOURCE). Default:
	// 20; 1 to 100000.
	RegistrationsPerSource int
	// MaxConnections bounds open connections on the public listener
	// (DEVSPACE_HTTP_MAX_CONNECTIONS). Default: 512; 16 to 1000000.
	MaxConnections int
	// ReadHeaderTimeout, BodyIdleTimeout, BodyTimeout and IdleTimeout bound
	// how long a client may take to send headers, pause within a body,
	// send a whole body and keep an idle connection. Defaults: 10s, 15s,
	// 2m, 2m.
	ReadHeaderTimeout, BodyIdleTimeout, BodyTimeout, IdleTimeout time.Duration
	// MCPBodyBudget bounds the memory /mcp request bodies hold at once,
	// each body byte counted at what decoding it costs (8x)
	// (DEVSPACE_MCP_BODY_BUDGET). Default: 256 MiB; at least
	// DEVSPACE_MAX_REQUEST_BODY.
	MCPBodyBudget int64
	// MCPBodyGrantShare bounds what one grant may hold of it
	// (DEVSPACE_MCP_BODY_GRANT_SHARE). Default: half the budget, at least
	// DEVSPACE_MAX_REQUEST_BODY; at most the budget.
	MCPBodyGrantShare int64
	// MCPSessionIdleTimeout closes an MCP session that had no POST in
	// progress for this long; GET streams do not count
	// (DEVSPACE_MCP_SESSION_IDLE_TIMEOUT). Default: 30m; 1s to 24h.
	MCPSessionIdleTimeout time.Duration
	// MCPSessionsPerGrant caps the MCP sessions one grant keeps; opening
	// another closes the one whose latest POST began or ended longest ago
	// (DEVSPACE_MCP_MAX_SESSIONS_PER_GRANT). Default: 32; 1 to 10000.
	MCPSessionsPerGrant int
}

// defaultEdge returns the defaults (the grant share is derived in
// Validate when unset).
func defaultEdge() Edge {
	return Edge{
		ClientIPHeader:         DefaultClientIPHeader,
		PasswordConcurrency:    DefaultPasswordConcurrency,
		RegistrationsPerSource: DefaultRegistrationsPerSource,
		MaxConnections:         DefaultHTTPMaxConnections,
		ReadHeaderTimeout:      DefaultHTTPReadHeaderTimeout,
		BodyIdleTimeout:        DefaultHTTPBodyIdleTimeout,
		BodyTimeout:            DefaultHTTPBodyTimeout,
		IdleTimeout:            DefaultHTTPIdleTimeout,
		MCPBodyBudget:          DefaultMCPBodyBudget,
		MCPSessionIdleTimeout:  DefaultMCPSessionIdleTimeout,
		MCPSessionsPerGrant:    DefaultMCPSessionsPerGrant,
	}
}

// GrantShare is MCPBodyGrantShare, or its default when unset: half the
// budget but at least one maximal body.
func (c *Config) GrantShare() int64 {
	if c.Edge.MCPBodyGrantShare > 0 {
		return c.Edge.MCPBodyGrantShare
	}
	return min(max(c.Edge.MCPBodyBudget/2, c.MaxRequestBody), c.Edge.MCPBodyBudget)
}

func parseInt(dst *int, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("%q is not a whole number", v)
	}
	*dst = n
	return nil
}

// sizeField parses a byte count (parseSize) into the field of c.
func sizeField(field func(*Config) *int64) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := parseSize(v)
		if err != nil {
			return err
		}
		*field(c) = n
		return nil
	}
}

func edgeSettings() []setting {
	dur := func(field func(*Config) *time.Duration) func(*Config, string) error {
		return func(c *Config, v string) error { return parseDuration(field(c), v) }
	}
	num := func(field func(*Config) *int) func(*Config, string) error {
		return func(c *Config, v string) error { return parseInt(field(c), v) }
	}
	return []setting{
		{
			flag: "trusted-proxies", env: envTrustedProxies, arg: "LIST",
			def:   "none",
			usage: "Addresses or CIDRs of reverse proxies (such as the cloudflared sidecar) whose client-address header is believed, comma-separated. Only then are per-source limits (registrations, password attempts per address) applied to the real client address.",
			parse: func(c *Config, v string) error {
				var ps []netip.Prefix
				for _, e := range splitList(v) {
					if p, err := netip.ParsePrefix(e); err == nil {
						ps = append(ps, p.Masked())
						continue
					}
					a, err := netip.ParseAddr(e)
					if err != nil {
						return fmt.Errorf("%q is not an IP address or CIDR", e)
					}
					a = a.Unmap()
					ps = append(ps, netip.PrefixFrom(a, a.BitLen()))
				}
				c.Edge.TrustedProxies = ps
				return nil
			},
		},
		{
			flag: "client-ip-header", env: envClientIPHeader, arg: "HEADER",
			def:   DefaultClientIPHeader,
			usage: "Header a trusted proxy sets to the client's address (cloudflared: Cf-Connecting-Ip).",
			parse: func(c *Config, v string) error { c.Edge.ClientIPHeader = http.CanonicalHeaderKey(v); return nil },
		},
		{
			flag: "owner-password-max-concurrent", env: envPasswordConcurrency, arg: "N",
			def:   strconv.Itoa(DefaultPasswordConcurrency),
			usage: "Owner-password verifications (Argon2id) in flight at once; more attempts get 429. 1 to 64.",
			parse: num(func(c *Config) *int { return &c.Edge.PasswordConcurrency }),
		},
		{
			flag: "oauth-registrations-per-source", env: envRegistrationsPerSrc, arg: "N",
			def:   strconv.Itoa(DefaultRegistrationsPerSource),
			usage: "Dynamic client registrations per hour from one client address; applied only to addresses named by a trusted proxy. 1 to 100000.",
			parse: num(func(c *Config) *int { return &c.Edge.RegistrationsPerSource }),
		},
		{
			flag: "http-max-connections", env: envHTTPMaxConnections, arg: "N",
			def:   strconv.Itoa(DefaultHTTPMaxConnections),
			usage: "Open connections on the public listener. At the bound a connection that is not serving a request is closed to make room; when every connection is busy the new one is refused. 16 to 1000000.",
			parse: num(func(c *Config) *int { return &c.Edge.MaxConnections }),
		},
		{
			flag: "http-read-header-timeout", env: envHTTPReadHeaderTimeout, arg: "DURATION",
			def:   DefaultHTTPReadHeaderTimeout.String(),
			usage: "Time a client has to send a request's headers. 100ms to 5m.",
			parse: dur(func(c *Config) *time.Duration { return &c.Edge.ReadHeaderTimeout }),
		},
		{
			flag: "http-body-idle-timeout", env: envHTTPBodyIdleTimeout, arg: "DURATION",
			def:   DefaultHTTPBodyIdleTimeout.String(),
			usage: "Longest pause while a request body arrives; a stalled body is dropped with 408. 100ms to 5m, at most the body timeout.",
			parse: dur(func(c *Config) *time.Duration { return &c.Edge.BodyIdleTimeout }),
		},
		{
			flag: "http-body-timeout", env: envHTTPBodyTimeout, arg: "DURATION",
			def:   DefaultHTTPBodyTimeout.String(),
			usage: "Time a client has to send a whole request body (so the minimum data rate is the request-body limit over this); later, 408. 100ms to 1h.",
			parse: dur(func(c *Config) *time.Duration { return &c.Edge.BodyTimeout }),
		},
		{
			flag: "http-idle-timeout", env: envHTTPIdleTimeout, arg: "DURATION",
			def:   DefaultHTTPIdleTimeout.String(),
			usage: "How long an idle keep-alive connection stays open. 1s to 1h.",
			parse: dur(func(c *Config) *time.Duration { return &c.Edge.IdleTimeout }),
		},
		{
			flag: "mcp-body-budget", env: envMCPBodyBudget, arg: "BYTES",
			def:   "268435456, i.e. 256MiB",
			usage: "Memory /mcp request bodies may hold at once: each body byte counts 8 times (what decoding it costs), as it arrives; a request that cannot get room within 5s gets 503. At least the request-body limit, at most 4GiB.",
			parse: sizeField(func(c *Config) *int64 { return &c.Edge.MCPBodyBudget }),
		},
		{
			flag: "mcp-body-grant-share", env: envMCPBodyGrantShare, arg: "BYTES",
			def:   "half the budget, at least the request-body limit",
			usage: "Most of the /mcp body budget one grant may hold, so one grant cannot starve the others. Between the request-body limit and the budget.",
			parse: sizeField(func(c *Config) *int64 { return &c.Edge.MCPBodyGrantShare }),
		},
		{
			flag: "mcp-session-idle-timeout", env: envMCPSessionIdle, arg: "DURATION",
			def:   DefaultMCPSessionIdleTimeout.String(),
			usage: "An MCP session (Mcp-Session-Id) with no POST (request or notification) this long is closed; an open GET stream does not keep it. The client starts a new one. 1s to 24h.",
			parse: dur(func(c *Config) *time.Duration { return &c.Edge.MCPSessionIdleTimeout }),
		},
		{
			flag: "mcp-max-sessions-per-grant", env: envMCPSessionsPerGrant, arg: "N",
			def:   strconv.Itoa(DefaultMCPSessionsPerGrant),
			usage: "MCP sessions one grant may keep open; opening another closes the one whose latest POST is oldest. 1 to 10000.",
			parse: num(func(c *Config) *int { return &c.Edge.MCPSessionsPerGrant }),
		},
	}
}

func (c *Config) validateEdge() []error {
	var errs []error
	e := c.Edge
	intIn := func(env string, v, lo, hi int) {
		if v < lo || v > hi {
			errs = append(errs, errorf(env, "%d is out of range; use %d to %d", v, lo, hi))
		}
	}
	durIn := func(env string, v, lo, hi time.Duration) {
		if v < lo || v > hi {
			errs = append(errs, errorf(env, "%s is out of range; use %s to %s", v, lo, hi))
		}
	}
	intIn(envPasswordConcurrency, e.PasswordConcurrency, 1, 64)
	intIn(envRegistrationsPerSrc, e.RegistrationsPerSource, 1, 100000)
	intIn(envHTTPMaxConnections, e.MaxConnections, 16, 1000000)
	intIn(envMCPSessionsPerGrant, e.MCPSessionsPerGrant, 1, 10000)
	durIn(envHTTPReadHeaderTimeout, e.ReadHeaderTimeout, 100*time.Millisecond, 5*time.Minute)
	durIn(envHTTPBodyIdleTimeout, e.BodyIdleTimeout, 100*time.Millisecond, 5*time.Minute)
	durIn(envHTTPBodyTimeout, e.BodyTimeout, 100*time.Millisecond, time.Hour)
	durIn(envHTTPIdleTimeout, e.IdleTimeout, time.Second, time.Hour)
	durIn(envMCPSessionIdle, e.MCPSessionIdleTimeout, time.Second, 24*time.Hour)
	if e.BodyIdleTimeout > e.BodyTimeout {
		errs = append(errs, errorf(envHTTPBodyIdleTimeout, "%s is longer than %s (%s)", e.BodyIdleTimeout, envHTTPBodyTimeout, e.BodyTimeout))
	}
	if c.MaxRequestBody < MinMaxRequestBody || c.MaxRequestBody > MaxMaxRequestBody {
		return errs // already reported; the budget is judged against a valid limit
	}
	if e.MCPBodyBudget < c.MaxRequestBody || e.MCPBodyBudget > 4<<30 {
		errs = append(errs, errorf(envMCPBodyBudget, "%d bytes is out of range; use %s (%d) to 4GiB", e.MCPBodyBudget, envMaxRequestBody, c.MaxRequestBody))
	}
	if s := e.MCPBodyGrantShare; s != 0 && (s < c.MaxRequestBody || s > e.MCPBodyBudget) {
		errs = append(errs, errorf(envMCPBodyGrantShare, "%d bytes is out of range; use %s (%d) to %s (%d)",
			s, envMaxRequestBody, c.MaxRequestBody, envMCPBodyBudget, e.MCPBodyBudget))
	}
	if h := e.ClientIPHeader; h == "" || strings.ContainsAny(h, " \t:\r\n") {
		errs = append(errs, errorf(envClientIPHeader, "%q is not a header name", h))
	}
	return errs
}
