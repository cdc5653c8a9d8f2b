package clientmeta

import (
	"net/netip"
	"net/url"
	"strings"
)

// maxClientIDLen bounds the client_id URL, matching common URL limits.
const maxClientIDLen = 2048

// parseClientID validates id as a metadata-document client ID: the https
// scheme (lowercase), a host, a path other than "/", no fragment, no
// userinfo, no "." or ".." segments (also percent-encoded), and at most
// 2048 bytes of printable ASCII. A query is allowed, as the draft permits.
// It does not look at where the host resolves; Fetch does that. With
// allowLoopbackHTTP it also accepts http:// when the host is a loopback
// name or address (tests only).
func parseClientID(id string, allowLoopbackHTTP bool) (*url.URL, error) {
	invalid := func(reason string) error { return newError(ErrInvalidClientID, reason, nil) }
	if id == "" {
		return nil, invalid("client_id is empty")
	}
	if len(id) > maxClientIDLen {
		return nil, invalid("client_id is longer than 2048 bytes")
	}
	for i := 0; i < len(id); i++ {
		// Whitespace, control, non-ASCII and backslash are where URL
		// parsers disagree; refusing them keeps ours and the client's aligned.
		if c := id[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			return nil, invalid("client_id contains whitespace, control, backslash or non-ASCII characters")
		}
	}
	if strings.Contains(id, "#") {
		return nil, invalid("client_id must not contain a fragment")
	}

	var rest string
	switch {
	case strings.HasPrefix(id, "https://"):
		rest = id[len("https://"):]
	case allowLoopbackHTTP && strings.HasPrefix(id, "http://"):
		rest = id[len("http://"):]
	default:
		return nil, invalid("client_id must use the https scheme")
	}
	end := strings.IndexAny(rest, "/?")
	if end < 0 || rest[end] != '/' {
		return nil, invalid("client_id must contain a path")
	}
	authority, path := rest[:end], rest[end:]
	if q := strings.IndexByte(path, '?'); q >= 0 {
		path = path[:q]
	}
	if strings.Contains(authority, "@") {
		return nil, invalid("client_id must not contain user information")
	}
	for i := 0; i < len(authority); i++ {
		if !isAuthorityChar(authority[i]) {
			return nil, invalid("client_id host contains invalid characters")
		}
	}
	if path == "/" {
		return nil, invalid("client_id path must not be /")
	}
	for seg := range strings.SplitSeq(path[1:], "/") {
		s, err := url.PathUnescape(seg)
		if err != nil {
			return nil, invalid("client_id path is not validly escaped")
		}
		if s == "." || s == ".." {
			return nil, invalid("client_id path must not contain dot segments")
		}
	}

	u, err := url.Parse(id)
	if err != nil {
		return nil, invalid("client_id is not a valid URL")
	}
	if u.Hostname() == "" {
		return nil, invalid("client_id must contain a host")
	}
	if strings.HasSuffix(u.Host, ":") {
		return nil, invalid("client_id has an empty port")
	}
	if u.Scheme == "http" && !isLoopbackHost(u.Hostname()) {
		return nil, invalid("client_id must use the https scheme")
	}
	return u, nil
}

// isAuthorityChar admits hostnames (ASCII, already IDNA-encoded), IP
// literals and a port. '%' is excluded, which also rules out IPv6 zones.
func isAuthorityChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte(".-_:[]", c) >= 0
}

// isLoopbackHost reports whether host (as returned by url.URL.Hostname) is a
// loopback IP literal or a name reserved for loopback (RFC 6761 localhost).
func isLoopbackHost(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// Accepts reports whether this Fetcher would try id: whether id looks like
// a metadata-document client ID (see parseClientID), widened to loopback hosts when the Fetcher was built with AllowLoopback.
func (f *Fetcher) Accepts(id string) bool {
	_, err := parseClientID(id, f.allowLoopback)
	return err == nil
}
