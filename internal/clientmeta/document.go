package clientmeta

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	oauth2 "github.com/go-oauth2/oauth2/v4"

	"github.com/devspace-dev/devspace/internal/displayname"
)

const (
	// maxURILen bounds every URI taken from a document.
	maxURILen = 2048
)

// Document is a validated client metadata document. Fetch returns a fresh
// copy on every call, so callers may keep or modify it.
type Document struct {
	// ClientID equals the URL the document was fetched from.
	ClientID string
	// ClientName is the display name with control and format characters
	// removed, trimmed, and cut to at most 200 bytes; it may be empty.
	ClientName string
	// RedirectURIs is non-empty; each is absolute, without fragment, and
	// https (http only for 127.0.0.1, localhost or [::1]).
	RedirectURIs []string
	// TokenEndpointAuthMethod is always "none": a metadata document cannot
	// carry a shared secret and this server does not verify client
	// assertions, so only public clients are accepted.
	TokenEndpointAuthMethod string
	// GrantTypes defaults to ["authorization_code"] and always contains it.
	GrantTypes []string
	// ResponseTypes defaults to ["code"] and always contains it.
	ResponseTypes []string
	// ClientURI and LogoURI are cosmetic: kept only when they are absolute
	// https URLs, otherwise dropped (empty) rather than failing the client.
	ClientURI string
	LogoURI   string
}

func (d *Document) clone() *Document {
	c := *d
	c.RedirectURIs = slices.Clone(d.RedirectURIs)
	c.GrantTypes = slices.Clone(d.GrantTypes)
	c.ResponseTypes = slices.Clone(d.ResponseTypes)
	return &c
}

// parseDocument decodes body strictly (one JSON object, no duplicate or
// trailing members, exact-case keys, typed fields) and validates it against
// clientID. Unknown members are ignored, as RFC 7591 requires.
func parseDocument(body []byte, clientID string) (*Document, error) {
	fields, err := decodeObject(body)
	if err != nil {
		return nil, newError(ErrInvalidDocument, err.Error(), nil)
	}
	invalid := func(format string, args ...any) error {
		return newError(ErrInvalidDocument, fmt.Sprintf(format, args...), nil)
	}

	for _, k := range []string{"client_secret", "client_secret_expires_at"} {
		if _, ok := fields[k]; ok {
			return nil, invalid("%s must not be present: a metadata document cannot carry a shared secret", k)
		}
	}

	var raw struct {
		clientID, clientName, authMethod, clientURI, logoURI string
		redirectURIs, grantTypes, responseTypes              []string
	}
	for _, f := range []struct {
		name string
		dst  any
	}{
		{"client_id", &raw.clientID},
		{"client_name", &raw.clientName},
		{"token_endpoint_auth_method", &raw.authMethod},
		{"client_uri", &raw.clientURI},
		{"logo_uri", &raw.logoURI},
		{"redirect_uris", &raw.redirectURIs},
		{"grant_types", &raw.grantTypes},
		{"response_types", &raw.responseTypes},
	} {
		v, ok := fields[f.name]
		if !ok || string(v) == "null" {
			continue
		}
		if err := json.Unmarshal(v, f.dst); err != nil {
			return nil, invalid("%s has the wrong type", f.name)
		}
	}

	// The draft requires a simple string comparison, no normalisation.
	if raw.clientID != clientID {
		return nil, invalid("client_id in the document does not match the URL it was fetched from")
	}

	switch m := raw.authMethod; {
	case m == "" || m == "none":
	case strings.HasPrefix(m, "client_secret_"):
		return nil, invalid("token_endpoint_auth_method %q needs a shared secret, which a metadata document cannot provide; use \"none\"", m)
	default:
		return nil, invalid("token_endpoint_auth_method %q is not supported; only public clients (\"none\") are accepted", m)
	}

	if len(raw.redirectURIs) == 0 {
		return nil, invalid("redirect_uris is required and must not be empty")
	}
	for i, u := range raw.redirectURIs {
		if reason := checkRedirectURI(u); reason != "" {
			return nil, invalid("redirect_uris[%d] %s", i, reason)
		}
	}

	if _, ok := fields["grant_types"]; !ok {
		raw.grantTypes = []string{oauth2.AuthorizationCode.String()}
	}
	if !slices.Contains(raw.grantTypes, oauth2.AuthorizationCode.String()) {
		return nil, invalid("grant_types must include authorization_code")
	}
	if _, ok := fields["response_types"]; !ok {
		raw.responseTypes = []string{oauth2.Code.String()}
	}
	if !slices.Contains(raw.responseTypes, oauth2.Code.String()) {
		return nil, invalid("response_types must include code")
	}

	return &Document{
		ClientID:                clientID,
		ClientName:              cleanName(raw.clientName),
		RedirectURIs:            raw.redirectURIs,
		TokenEndpointAuthMethod: "none",
		GrantTypes:              raw.grantTypes,
		ResponseTypes:           raw.responseTypes,
		ClientURI:               cosmeticURL(raw.clientURI),
		LogoURI:                 cosmeticURL(raw.logoURI),
	}, nil
}

// decodeObject reads exactly one JSON object and returns its members. It
// refuses duplicate keys (a parser-differential trick) and trailing data.
func decodeObject(body []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	malformed := errors.New("document is not well-formed JSON")
	if tok, err := dec.Token(); err != nil {
		return nil, malformed
	} else if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("document must be a JSON object")
	}
	fields := make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, malformed
		}
		key, ok := tok.(string)
		if !ok {
			return nil, malformed
		}
		if _, dup := fields[key]; dup {
			return nil, fmt.Errorf("document has duplicate member %q", key)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, malformed
		}
		fields[key] = v
	}
	if _, err := dec.Token(); err != nil { // closing brace
		return nil, malformed
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("document has data after the JSON object")
	}
	return fields, nil
}

// checkRedirectURI returns why u is unacceptable, or "" when it is fine.
func checkRedirectURI(u string) string {
	if u == "" || len(u) > maxURILen {
		return "must be a non-empty URI of at most 2048 bytes"
	}
	for i := 0; i < len(u); i++ {
		if c := u[i]; c <= ' ' || c == 0x7f || c == '\\' {
			return "contains whitespace, control or backslash characters"
		}
	}
	if strings.Contains(u, "#") {
		return "must not contain a fragment"
	}
	p, err := url.Parse(u)
	if err != nil || !p.IsAbs() || p.Opaque != "" {
		return "must be an absolute URI"
	}
	if p.User != nil {
		return "must not contain user information"
	}
	switch p.Scheme {
	case "https":
		if p.Hostname() == "" {
			return "must contain a host"
		}
	case "http":
		switch p.Hostname() {
		case "127.0.0.1", "localhost", "::1":
		default:
			return "must use https (http is allowed only for 127.0.0.1, localhost and [::1])"
		}
	default:
		return "must use https (http is allowed only for 127.0.0.1, localhost and [::1])"
	}
	return ""
}

// cleanName is displayname.Clean: the one rule for names clients choose.
func cleanName(s string) string { return displayname.Clean(s) }

// cosmeticURL returns u when it is an absolute https URL, else "".
func cosmeticURL(u string) string {
	if u == "" || len(u) > maxURILen {
		return ""
	}
	p, err := url.Parse(u)
	if err != nil || p.Scheme != "https" || p.Hostname() == "" || p.User != nil {
		return ""
	}
	for i := 0; i < len(u); i++ {
		if c := u[i]; c <= ' ' || c == 0x7f {
			return ""
		}
	}
	return u
}
