package oauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/devspace-dev/devspace/internal/displayname"
	"github.com/devspace-dev/devspace/internal/store"
)

// Registration bounds (docs/design.md §4).
var registrationLimits = store.ClientLimits{MaxUnused: 64, MaxTotal: 512, UnusedTTL: time.Hour}

const maxRegistrationBody = 64 << 10

type registrationRequest struct {
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              string   `json:"client_name"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	Scope                   string   `json:"scope"`
}

type registrationResponse struct {
	ClientID                string   `json:"client_id"`
	ClientSecret            string   `json:"client_secret"`
	ClientIDIssuedAt        int64    `json:"client_id_issued_at"`
	ClientSecretExpiresAt   int64    `json:"client_secret_expires_at"`
	ClientName              string   `json:"client_name,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	Scope                   string   `json:"scope,omitempty"`
}

// Register implements RFC 7591 dynamic client registration. Clients are
// persisted and bounded; a client_secret is always returned (some hosts
// abandon a registration without one), also for auth method "none".
func (s *Server) Register(w http.ResponseWriter, r *http.Request) {
	if addr, trusted := s.clientAddr(r); trusted {
		if ok, wait := s.registrations.take(addr, s.now()); !ok {
			w.Header().Set("Retry-After", retryAfterSeconds(wait))
			writeJSON(w, http.StatusTooManyRequests, protocolError{Code: "temporarily_unavailable",
				Description: "too many registrations from this address; try again later"})
			return
		}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRegistrationBody+1))
	if bodyTimedOut(w, err) {
		return
	}
	if err != nil {
		writeError(w, "invalid_client_metadata", "could not read the request body")
		return
	}
	if len(body) > maxRegistrationBody {
		writeError(w, "invalid_client_metadata", "registration request is too large")
		return
	}
	var req registrationRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		writeError(w, "invalid_client_metadata", "registration request must be a JSON object")
		return
	}
	if err := s.validateRegistration(&req); err != nil {
		code := "invalid_client_metadata"
		if errors.Is(err, errBadRedirect) {
			code = "invalid_redirect_uri"
		}
		writeError(w, code, err.Error())
		return
	}
	secret := randomValue(prefixSecret)
	c := &store.Client{ID: randomID(prefixClient), SecretHash: hashSecret(secret), Name: req.ClientName,
		RedirectURIs: req.RedirectURIs, AuthMethod: req.TokenEndpointAuthMethod}
	if err := s.opts.Store.CreateClient(r.Context(), c, registrationLimits); err != nil {
		if errors.Is(err, store.ErrClientLimit) {
			writeError(w, "temporarily_unavailable", "too many registered clients; try again later")
			return
		}
		s.log.ErrorContext(r.Context(), "register client", "err", err)
		writeError(w, "server_error", "registration failed")
		return
	}
	s.log.InfoContext(r.Context(), "oauth client registered", "client_ref", s.ref(c.ID), "auth_method", c.AuthMethod)
	writeJSON(w, http.StatusCreated, registrationResponse{
		ClientID: c.ID, ClientSecret: secret, ClientIDIssuedAt: c.CreatedAt.Unix(), ClientName: c.Name,
		RedirectURIs: c.RedirectURIs, TokenEndpointAuthMethod: c.AuthMethod, GrantTypes: req.GrantTypes,
		ResponseTypes: req.ResponseTypes, Scope: req.Scope,
	})
}

var errBadRedirect = errors.New("bad redirect uri")

type redirectError struct{ msg string }

func (e redirectError) Error() string { return e.msg }
func (e redirectError) Is(t error) bool {
	return t == errBadRedirect
}

func (s *Server) validateRegistration(req *registrationRequest) error {
	if len(req.RedirectURIs) == 0 {
		return redirectError{"redirect_uris is required"}
	}
	if len(req.RedirectURIs) > maxRedirectURIs {
		return redirectError{"too many redirect_uris"}
	}
	for _, u := range req.RedirectURIs {
		if err := s.checkRedirectURI(u); err != nil {
			return redirectError{err.Error()}
		}
	}
	req.ClientName = cleanName(req.ClientName)
	switch req.TokenEndpointAuthMethod {
	case "":
		req.TokenEndpointAuthMethod = "client_secret_basic" // RFC 7591 §2 default
	case "none", "client_secret_post", "client_secret_basic":
	default:
		return errors.New("token_endpoint_auth_method must be none, client_secret_post or client_secret_basic")
	}
	if len(req.GrantTypes) == 0 {
		req.GrantTypes = []string{"authorization_code", "refresh_token"}
	}
	for _, g := range req.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return errors.New("grant_types may contain only authorization_code and refresh_token")
		}
	}
	if len(req.ResponseTypes) == 0 {
		req.ResponseTypes = []string{"code"}
	}
	if !slices.Equal(req.ResponseTypes, []string{"code"}) {
		return errors.New("response_types must be [\"code\"]")
	}
	if len(req.Scope) > 1024 {
		return errors.New("scope is too long")
	}
	return nil
}

// cleanName is displayname.Clean: the one rule for names clients choose.
func cleanName(name string) string { return displayname.Clean(name) }
