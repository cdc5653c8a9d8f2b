// Package oauth is DevSpace's OAuth 2.1 authorization server: metadata
// (RFC 8414, RFC 9728), dynamic registration (RFC 7591), client ID metadata
// documents, the two-step consent page, the authorization-code flow with
// PKCE S256, refresh rotation with replay detection, revocation (RFC 7009)
// and bearer-token verification for the MCP endpoint.
//
// The package issues every credential itself (issue.go): codes at consent,
// pairs at the code exchange and on rotation, stamped with Options.Now and
// given the Options lifetimes, only their hashes stored. The token endpoint
// owns every check of a presented credential, once, with Options.Now:
// client binding, PKCE (before anything can consume the code), single use,
// expiry, redirect URI, grant and epoch, scope narrowing; the store makes
// single use race-free. Exact redirect validation and RFC 6749 error
// statuses are ours too.
//
// go-oauth2/oauth2/v4 owns what it can own without a clock or a store: the
// PKCE match of a verifier to its challenge (pkceMatches), the names of the
// grant types, the response type and the challenge method, and the RFC 6749
// error codes (oauthError). Its manage.Manager and server.Server are not
// used: the manager reads time.Now itself and consumes a code before it
// verifies PKCE (docs/decisions.md, "go-oauth2: what it owns, and why its
// manager is not used").
//
// Handlers are plain net/http; gin stays in httpserver.
package oauth

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/devspace-dev/devspace/internal/metrics"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/store"
)

// Scope names.
const (
	ScopeRead    = "project:read"
	ScopeWrite   = "project:write"
	ScopeExecute = "process:execute"
)

// DefaultClientIPHeader is the header cloudflared sets to the connecting
// client's address.
const DefaultClientIPHeader = "Cf-Connecting-Ip"

// PasswordChecker verifies the Owner password (authstate.State does).
type PasswordChecker interface {
	VerifyPassword(ctx context.Context, password []byte) (bool, error)
}

// Limiter rate-limits Owner-password attempts (ratelimit.Limiter does).
// Reserve counts an attempt before it is verified and refuses it while
// another attempt on any of its keys is in flight, while any key waits out
// a back-off, or while too many attempts are in flight overall; done
// reports the outcome exactly once.
type Limiter interface {
	Reserve(keys ...string) (done func(success bool), retryAfter time.Duration, ok bool)
}

// ClientMetadata is a validated client ID metadata document.
type ClientMetadata struct {
	Name         string
	RedirectURIs []string
}

// MetadataFetcher resolves client IDs that are https URLs.
type MetadataFetcher interface {
	IsMetadataClientID(id string) bool
	Fetch(ctx context.Context, clientID string) (*ClientMetadata, error)
}

// Options configure a Server. Fields marked required must be set.
type Options struct {
	Issuer   string // required: public base URL without a trailing slash
	Resource string // required: Issuer + "/mcp"
	// Scopes offered; zero means project:read and project:write.
	Scopes []string
	// AllowedRedirectHosts lists hosts a redirect URI may use; https is
	// required except for loopback hosts.
	AllowedRedirectHosts []string
	AccessTTL            time.Duration // zero means 1h
	RefreshTTL           time.Duration // zero means 720h
	GrantMaxLifetime     time.Duration // zero means no limit
	CodeTTL              time.Duration // zero means 5m
	SelectionTTL         time.Duration // consent step-2 token lifetime; zero means 5m

	Store    *store.Store     // required
	Password PasswordChecker  // required
	Projects *project.Catalog // required
	Limiter  Limiter          // required
	Metadata MetadataFetcher  // nil disables client ID metadata documents
	// TrustedProxies are the peers (such as a cloudflared sidecar) whose
	// ClientIPHeader names the real client address. Empty means no proxy is
	// trusted: per-source limits (registrations, the password-attempt key
	// per address) are off, because behind a tunnel every client shares
	// one address.
	TrustedProxies []netip.Prefix
	// ClientIPHeader is the header a trusted proxy sets; empty means
	// DefaultClientIPHeader.
	ClientIPHeader string
	// RegistrationsPerSource bounds dynamic registrations per trusted
	// source address per RegistrationWindow; zero means
	// DefaultRegistrationsPerSource. It applies only to addresses named by
	// a trusted proxy.
	RegistrationsPerSource int
	RefKey                 []byte           // required: HMAC key for audit references
	Metrics                *metrics.Metrics // required
	Logger                 *slog.Logger     // nil means discard

	// Executions closes what revoked grants opened (executions, their
	// commands, output and undo snapshots) after grants were revoked
	// (revoke, code replay, revoke-all, password rotation). Required.
	Executions ExecutionCloser
	// Background bounds work that outlives a request (retrying a
	// revocation the database refused); nil means context.Background.
	Background context.Context
	Now        func() time.Time
}

// Server is the authorization server. It is safe for concurrent use.
type Server struct {
	opts Options
	log  *slog.Logger
	now  func() time.Time

	registrations *sourceLimit // per trusted source address
	verified      *verifyCache // access tokens verified before
	fromCache     prometheus.Counter
	fromStore     prometheus.Counter

	requestKey []byte // seals step-1 request tokens (pending.go)

	mu         sync.Mutex
	selections map[string]*selection // step-2 one-use tokens

	// dead holds revocations in memory, ahead of the database
	// (tombstone.go).
	dead tombstones
}

// New builds a Server from opts, applying defaults.
// ExecutionCloser is what the authorization server needs of the
// execution lifecycle (executions.Service implements it).
type ExecutionCloser interface {
	CloseGrants(ctx context.Context, grantIDs []string, reason string) error
}

func New(opts Options) *Server {
	if len(opts.Scopes) == 0 {
		opts.Scopes = []string{ScopeRead, ScopeWrite}
	}
	if opts.AccessTTL == 0 {
		opts.AccessTTL = time.Hour
	}
	if opts.RefreshTTL == 0 {
		opts.RefreshTTL = 720 * time.Hour
	}
	if opts.CodeTTL == 0 {
		opts.CodeTTL = 5 * time.Minute
	}
	if opts.SelectionTTL == 0 {
		opts.SelectionTTL = 5 * time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.RegistrationsPerSource <= 0 {
		opts.RegistrationsPerSource = DefaultRegistrationsPerSource
	}
	if opts.ClientIPHeader == "" {
		opts.ClientIPHeader = DefaultClientIPHeader
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{opts: opts, log: log.With("component", "oauth"), now: opts.Now,
		requestKey: newRequestKey(), selections: map[string]*selection{},
		registrations: newSourceLimit(opts.RegistrationsPerSource, RegistrationWindow),
		verified:      newVerifyCache(verifyCacheSize),
		fromCache:     opts.Metrics.OAuthVerifications.WithLabelValues("cache"),
		fromStore:     opts.Metrics.OAuthVerifications.WithLabelValues("store")}
}

// Routes lists the public endpoints and their handlers, for httpserver to
// mount. Paths are fixed by docs/design.md §4.
func (s *Server) Routes() []Route {
	return []Route{
		{http.MethodGet, "/.well-known/oauth-protected-resource", s.ProtectedResourceMetadata},
		{http.MethodGet, "/.well-known/oauth-protected-resource/mcp", s.ProtectedResourceMetadata},
		{http.MethodGet, "/.well-known/oauth-authorization-server", s.AuthorizationServerMetadata},
		{http.MethodHead, "/.well-known/oauth-authorization-server", s.AuthorizationServerMetadata},
		{http.MethodGet, "/.well-known/oauth-authorization-server/mcp", s.AuthorizationServerMetadata},
		{http.MethodHead, "/.well-known/oauth-authorization-server/mcp", s.AuthorizationServerMetadata},
		{http.MethodPost, "/oauth/register", s.Register},
		{http.MethodGet, "/oauth/authorize", s.Authorize},
		{http.MethodPost, "/oauth/authorize", s.Authorize},
		{http.MethodPost, "/oauth/token", s.Token},
		{http.MethodPost, "/oauth/revoke", s.Revoke},
	}
}

// Route is one endpoint.
type Route struct {
	Method  string
	Path    string
	Handler http.HandlerFunc
}

// parseScopes splits a space-separated scope string, dropping duplicates.
func parseScopes(s string) []string {
	var out []string
	for _, f := range strings.Fields(s) {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}
