package oauth

import (
	"net/http"

	oauth2 "github.com/go-oauth2/oauth2/v4"
)

// ProtectedResourceMetadata serves RFC 9728 metadata for the MCP resource,
// at the root well-known path and under the /mcp suffix.
func (s *Server) ProtectedResourceMetadata(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"resource":                 s.opts.Resource,
		"authorization_servers":    []string{s.opts.Issuer},
		"scopes_supported":         s.opts.Scopes,
		"bearer_methods_supported": []string{"header"},
		"resource_name":            "DevSpace",
	})
}

// AuthorizationServerMetadata serves RFC 8414 metadata. It never advertises
// OIDC scopes, and advertises the RFC 9207 iss parameter because every
// authorization response carries it.
func (s *Server) AuthorizationServerMetadata(w http.ResponseWriter, r *http.Request) {
	md := map[string]any{
		"issuer":                                         s.opts.Issuer,
		"authorization_endpoint":                         s.opts.Issuer + "/oauth/authorize",
		"token_endpoint":                                 s.opts.Issuer + "/oauth/token",
		"registration_endpoint":                          s.opts.Issuer + "/oauth/register",
		"revocation_endpoint":                            s.opts.Issuer + "/oauth/revoke",
		"scopes_supported":                               s.opts.Scopes,
		"response_types_supported":                       []string{oauth2.Code.String()},
		"response_modes_supported":                       []string{"query"},
		"grant_types_supported":                          grantTypes(),
		"code_challenge_methods_supported":               []string{oauth2.CodeChallengeS256.String()},
		"token_endpoint_auth_methods_supported":          []string{"none", "client_secret_post", "client_secret_basic"},
		"revocation_endpoint_auth_methods_supported":     []string{"none", "client_secret_post", "client_secret_basic"},
		"client_id_metadata_document_supported":          s.opts.Metadata != nil,
		"authorization_response_iss_parameter_supported": true,
	}
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		return
	}
	writeJSON(w, http.StatusOK, md)
}
