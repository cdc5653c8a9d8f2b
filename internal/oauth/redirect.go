package oauth

import (
	"errors"
	"net"
	"net/url"
	"slices"
	"strings"
)

// maxRedirectURIs bounds a registration.
const maxRedirectURIs = 16

// isLoopbackHost reports whether a URL host name is a loopback name.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkRedirectURI validates a redirect URI for registration: absolute
// http(s), no fragment or userinfo, a host on the allowlist, https unless
// loopback. The error text is safe to return to the client.
func (s *Server) checkRedirectURI(raw string) error {
	if len(raw) > 2048 {
		return errors.New("redirect URI is too long")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() {
		return errors.New("redirect URI must be an absolute URI")
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return errors.New("redirect URI must use https")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return errors.New("redirect URI must not contain a fragment")
	}
	if u.User != nil {
		return errors.New("redirect URI must not contain user information")
	}
	host := u.Hostname()
	if host == "" {
		return errors.New("redirect URI must have a host")
	}
	if u.Scheme == "http" && !isLoopbackHost(host) {
		return errors.New("redirect URI must use https unless it is a loopback address")
	}
	if !s.redirectHostAllowed(host) {
		return errors.New("redirect URI host is not allowed by this server (DEVSPACE_OAUTH_ALLOWED_REDIRECT_HOSTS)")
	}
	return nil
}

func (s *Server) redirectHostAllowed(host string) bool {
	host = strings.ToLower(host)
	return slices.ContainsFunc(s.opts.AllowedRedirectHosts, func(h string) bool {
		h = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"))
		return h == host
	})
}

// redirectOrigin returns scheme://host[:port] of a validated redirect URI,
// for the consent page's CSP form-action.
func redirectOrigin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
