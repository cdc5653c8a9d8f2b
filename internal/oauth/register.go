package oauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"time"

	oauth2 "github.com/go-oauth2/oauth2/v4"
	oauth2errors "github.com/go-oauth2/oauth2/v4/errors"

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
	resp, oerr := s.register(w, r)
	if oerr != nil {
		writeError(w, r, oerr)
		return
	}
	writeJSON(w, http.StatusCreated, resp)
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) (*registrationResponse, *oauthError) {
	if source, trusted := s.sourceKey(r); trusted {
		if ok, wait := s.registrations.take(source, s.now()); !ok {
			w.Header().Set("Retry-After", retryAfterSeconds(wait))
			return nil, oauthErr(oauth2errors.ErrTemporarilyUnavailable, "too many registrations from this address; try again later").
				withStatus(http.StatusTooManyRequests)
		}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRegistrationBody+1))
	if err != nil {
		return nil, bodyError(err, oauthErr(errInvalidClientMetadata, "could not read the request body"))
	}
	if len(body) > maxRegistrationBody {
		return nil, oauthErr(errInvalidClientMetadata, "registration request is too large")
	}
	var req registrationRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		return nil, oauthErr(errInvalidClientMetadata, "registration request must be a JSON object")
	}
	if oerr := s.validateRegistration(&req); oerr != nil {
		return nil, oerr
	}
	secret := randomValue(prefixSecret)
	c := &store.Client{ID: randomID(prefixClient), SecretHash: hashSecret(secret), Name: req.ClientName,
		RedirectURIs: req.RedirectURIs, AuthMethod: req.TokenEndpointAuthMethod}
	if err := s.opts.Store.CreateClient(r.Context(), c, registrationLimits); err != nil {
		if errors.Is(err, store.ErrClientLimit) {
			return nil, oauthErr(oauth2errors.ErrTemporarilyUnavailable, "too many registered clients; try again later")
		}
		s.log.ErrorContext(r.Context(), "register client", "err", err)
		return nil, oauthErr(oauth2errors.ErrServerError, "registration failed")
	}
	s.log.InfoContext(r.Context(), "oauth client registered", "client_ref", s.ref(c.ID), "auth_method", c.AuthMethod)
	return &registrationResponse{
		ClientID: c.ID, ClientSecret: secret, ClientIDIssuedAt: c.CreatedAt.Unix(), ClientName: c.Name,
		RedirectURIs: c.RedirectURIs, TokenEndpointAuthMethod: c.AuthMethod, GrantTypes: req.GrantTypes,
		ResponseTypes: req.ResponseTypes, Scope: req.Scope,
	}, nil
}

// validateRegistration checks req and fills its RFC 7591 §2 defaults; a
// bad redirect URI is invalid_redirect_uri, anything else
// invalid_client_metadata (RFC 7591 §3.2.2).
func (s *Server) validateRegistration(req *registrationRequest) *oauthError {
	badRedirect := func(d string) *oauthError { return oauthErr(errInvalidRedirectURI, d) }
	badMetadata := func(d string) *oauthError { return oauthErr(errInvalidClientMetadata, d) }
	if len(req.RedirectURIs) == 0 {
		return badRedirect("redirect_uris is required")
	}
	if len(req.RedirectURIs) > maxRedirectURIs {
		return badRedirect("too many redirect_uris")
	}
	for _, u := range req.RedirectURIs {
		if err := s.checkRedirectURI(u); err != nil {
			return badRedirect(err.Error())
		}
	}
	req.ClientName = cleanName(req.ClientName)
	switch req.TokenEndpointAuthMethod {
	case "":
		req.TokenEndpointAuthMethod = "client_secret_basic" // RFC 7591 §2 default
	case "none", "client_secret_post", "client_secret_basic":
	default:
		return badMetadata("token_endpoint_auth_method must be none, client_secret_post or client_secret_basic")
	}
	supported := grantTypes()
	if len(req.GrantTypes) == 0 {
		req.GrantTypes = supported
	}
	for _, g := range req.GrantTypes {
		if !slices.Contains(supported, g) {
			return badMetadata("grant_types may contain only authorization_code and refresh_token")
		}
	}
	if len(req.ResponseTypes) == 0 {
		req.ResponseTypes = []string{oauth2.Code.String()}
	}
	if !slices.Equal(req.ResponseTypes, []string{oauth2.Code.String()}) {
		return badMetadata("response_types must be [\"code\"]")
	}
	if len(req.Scope) > 1024 {
		return badMetadata("scope is too long")
	}
	return nil
}

// cleanName is displayname.Clean: the one rule for names clients choose.
func cleanName(name string) string { return displayname.Clean(name) }
