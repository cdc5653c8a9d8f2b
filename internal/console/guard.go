package console

import (
	"net"
	"net/http"
	"strings"

	"github.com/devspace-dev/devspace/internal/config"
)

// refuse returns why r is not addressed to the console ("" when it is):
// its Host must name this listener (a loopback name, or the configured
// host when it is a specific one), so a DNS-rebound name, a tunnel pointed
// at the port or the container's network address is refused. Any port is
// accepted: a port forward (compose's published port, kubectl
// port-forward) may reach the listener under another one, and the name is
// what an attacker's page or tunnel cannot choose;
// a browser's Sec-Fetch-Site must not say the request came from another
// site; and an Origin, when present, must be this same origin.
func (c *Console) refuse(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host // no port: the default one
	}
	if !c.hostAllowed(host) {
		return "host"
	}
	site := r.Header.Get("Sec-Fetch-Site")
	switch site {
	case "", "same-origin", "none":
	default:
		return "sec-fetch-site"
	}
	// With Referrer-Policy: no-referrer a browser sends "Origin: null" on
	// its own form posts; it is this origin only when the browser also
	// says the request came from this origin (Sec-Fetch-Site, which pages
	// cannot set).
	if o := r.Header.Get("Origin"); o != "" && o != scheme(r)+"://"+r.Host && (o != "null" || site != "same-origin") {
		return "origin"
	}
	return ""
}

// hostAllowed: the loopback names, and the configured listen host when it
// is neither a wildcard nor empty.
func (c *Console) hostAllowed(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	switch host {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	lh, _, err := net.SplitHostPort(c.opts.ListenAddr)
	if err != nil {
		return false
	}
	lh = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(lh, "["), "]"))
	if lh == "" || lh == "0.0.0.0" || lh == "::" {
		return false
	}
	return host == lh || config.IsLoopbackHost(lh) && config.IsLoopbackHost(host)
}

func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}
