package oauth

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	oauth2 "github.com/go-oauth2/oauth2/v4"
	oauth2errors "github.com/go-oauth2/oauth2/v4/errors"

	"github.com/devspace-dev/devspace/internal/store"
)

const (
	maxSelections   = 256
	maxConsentForm  = 64 << 10
	maxStateLen     = 1024
	maxProjectsForm = 256
)

// codeChallengeRE matches an RFC 7636 code challenge or verifier; it is
// compiled on first use, not at package init: every command's launcher is
// this binary too, and runs every package's init before it can start the
// command (docs/performance.md, "Command start").
var codeChallengeRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._~-]{43,128}$`) })

// authRequest is a validated authorization request awaiting consent.
type authRequest struct {
	id            string // random, set when sealed (see sealRequest)
	clientID      string
	clientName    string
	redirectURI   string
	state         string
	codeChallenge string
	scopes        []string // requested (defaulted) scopes
	created       time.Time
}

// selection is the one-use step-2 token issued after a correct password.
// It proves the password as it was under the global epoch epoch (read
// before the check): password rotation and revoke-all bump the epoch, and
// a selection of an older one approves nothing. A selection re-issued
// because the form was incomplete keeps the original's expiry and epoch.
type selection struct {
	req     *authRequest
	expires time.Time
	epoch   int64
}

// Authorize serves GET/POST /oauth/authorize: the request itself, step 1
// (password) and step 2 (Projects, scopes, decision).
func (s *Server) Authorize(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, maxConsentForm)
		if err := r.ParseForm(); err != nil {
			if oerr := bodyError(err, nil); oerr != nil {
				writeError(w, r, oerr)
				return
			}
			s.renderError(w, oauthErr(oauth2errors.ErrInvalidRequest, "The form could not be read."))
			return
		}
		if !s.sameOrigin(r) {
			s.renderError(w, oauthErr(oauth2errors.ErrInvalidRequest, "This form was submitted from another site.").withStatus(http.StatusForbidden))
			return
		}
		switch {
		case r.PostForm.Has("selection"):
			s.consentDecision(w, r)
			return
		case r.PostForm.Has("request"):
			s.passwordStep(w, r)
			return
		}
	}
	if r.Method == http.MethodGet {
		if err := r.ParseForm(); err != nil {
			s.renderError(w, oauthErr(oauth2errors.ErrInvalidRequest, "The authorization request could not be read."))
			return
		}
	}
	req, oerr := s.validateAuthorizeRequest(r.Context(), r.Form)
	if oerr != nil {
		s.authorizeError(w, r, req, oerr)
		return
	}
	s.renderPassword(w, http.StatusOK, s.sealRequest(req), req, "")
}

// authorizeError answers a failed authorization request: redirected to
// req's validated redirect URI (RFC 6749 §4.1.2.1), or shown as a page when
// there is none (req is nil: redirecting would be an open redirect).
func (s *Server) authorizeError(w http.ResponseWriter, r *http.Request, req *authRequest, e *oauthError) {
	if req == nil {
		s.renderError(w, e)
		return
	}
	s.redirectWith(w, r, req.redirectURI, req.state, url.Values{"error": {e.code.Error()}, "error_description": {e.description}})
}

// validateAuthorizeRequest checks an authorization request. Problems with
// the client or redirect URI come without a request (see authorizeError);
// the rest come with the request whose redirect URI was validated.
func (s *Server) validateAuthorizeRequest(ctx context.Context, q url.Values) (*authRequest, *oauthError) {
	page := func(msg string) (*authRequest, *oauthError) {
		return nil, oauthErr(oauth2errors.ErrInvalidRequest, msg)
	}
	for _, k := range []string{"client_id", "redirect_uri", "response_type", "state", "scope", "resource", "code_challenge", "code_challenge_method"} {
		if len(q[k]) > 1 {
			return page("The authorization request repeats the parameter " + k + ".")
		}
	}
	clientID := q.Get("client_id")
	if clientID == "" {
		return page("The authorization request has no client_id.")
	}
	client, err := s.lookupClient(ctx, clientID)
	if err != nil {
		return page("This application is not registered with DevSpace (" + err.Error() + "). Remove and re-add the connector in your client.")
	}
	redirect := q.Get("redirect_uri")
	switch {
	case redirect == "" && len(client.RedirectURIs) == 1:
		redirect = client.RedirectURIs[0]
	case redirect == "":
		return page("The authorization request has no redirect_uri.")
	case !slices.Contains(client.RedirectURIs, redirect):
		return page("The redirect URI does not match the application's registration.")
	}
	if err := s.checkRedirectURI(redirect); err != nil {
		return page("The redirect URI is not allowed: " + err.Error() + ".")
	}
	req := &authRequest{clientID: client.ID, clientName: client.Name, redirectURI: redirect,
		state: q.Get("state"), created: s.now()}
	if len(req.state) > maxStateLen {
		req.state = ""
		return req, oauthErr(oauth2errors.ErrInvalidRequest, "state is too long")
	}
	if oauth2.ResponseType(q.Get("response_type")) != oauth2.Code {
		return req, oauthErr(oauth2errors.ErrUnsupportedResponseType, "only response_type=code is supported")
	}
	req.codeChallenge = q.Get("code_challenge")
	if req.codeChallenge == "" {
		return req, oauthErr(oauth2errors.ErrInvalidRequest, "PKCE is required: send code_challenge with code_challenge_method=S256")
	}
	if oauth2.CodeChallengeMethod(q.Get("code_challenge_method")) != oauth2.CodeChallengeS256 {
		return req, oauthErr(oauth2errors.ErrInvalidRequest, "code_challenge_method must be S256")
	}
	if !codeChallengeRE().MatchString(req.codeChallenge) {
		return req, oauthErr(oauth2errors.ErrInvalidRequest, "code_challenge is malformed")
	}
	if res, ok := q["resource"]; ok && res[0] != s.opts.Resource {
		return req, oauthErr(errInvalidTarget, "resource must be "+s.opts.Resource)
	}
	req.scopes = parseScopes(q.Get("scope"))
	if len(req.scopes) == 0 {
		// ChatGPT omits scope after Disconnect → Connect: use the baseline.
		req.scopes = []string{ScopeRead}
	}
	for _, sc := range req.scopes {
		if !slices.Contains(s.opts.Scopes, sc) {
			return req, oauthErr(oauth2errors.ErrInvalidScope, "scope "+sc+" is not offered by this server")
		}
	}
	return req, nil
}

// lookupClient finds a registered client or resolves a client ID metadata
// document, caching it as a client row.
func (s *Server) lookupClient(ctx context.Context, clientID string) (*store.Client, error) {
	if s.opts.Metadata != nil && s.opts.Metadata.IsMetadataClientID(clientID) {
		doc, err := s.opts.Metadata.Fetch(ctx, clientID)
		if err != nil {
			return nil, errors.New("its client metadata document could not be used")
		}
		c := &store.Client{ID: clientID, Name: cleanName(doc.Name), RedirectURIs: doc.RedirectURIs,
			AuthMethod: "none", MetadataDocument: true}
		if err := s.opts.Store.CreateClient(ctx, c, registrationLimits); err != nil {
			return nil, errors.New("too many registered clients")
		}
		return c, nil
	}
	c, err := s.opts.Store.Client(ctx, clientID)
	if err != nil {
		return nil, errors.New("unknown client")
	}
	return c, nil
}

// passwordStep handles step 1: verify the Owner password with rate limits.
// The request token stays valid until it expires, also after a correct
// password: it seals the request rather than naming a stored one (see
// sealRequest), and using it again needs the password again.
func (s *Server) passwordStep(w http.ResponseWriter, r *http.Request) {
	token := r.PostForm.Get("request")
	req := s.openRequest(token)
	if req == nil {
		s.renderError(w, oauthErr(oauth2errors.ErrInvalidRequest, "This sign-in request expired. Start again from your client."))
		return
	}
	// The attempt is reserved (and counted) before Argon2 runs: one
	// verification in flight per authorization request, per client and per
	// source, a global bound on verifications, back-off from attempts. The
	// source is a key only when a trusted proxy named it: otherwise it is
	// the tunnel's address, shared by everyone, and anyone's wrong
	// passwords would hold the Owner's own sign-in in back-off.
	keys := []string{"req:" + req.id, "client:" + req.clientID}
	if source, trusted := s.sourceKey(r); trusted {
		keys = append(keys, "addr:"+source)
	}
	// The epoch before the check: a rotation that lands during it makes
	// the selection stale.
	epoch, err := s.opts.Store.GlobalEpoch(r.Context())
	if err != nil {
		s.log.ErrorContext(r.Context(), "read the global epoch", "err", err)
		s.renderError(w, oauthErr(oauth2errors.ErrTemporarilyUnavailable, "The password could not be checked. Try again."))
		return
	}
	done, wait, allowed := s.opts.Limiter.Reserve(keys...)
	if !allowed {
		w.Header().Set("Retry-After", retryAfterSeconds(wait))
		s.renderPassword(w, http.StatusTooManyRequests, token, req,
			"Too many password attempts. Wait "+retryAfterSeconds(wait)+" seconds and try again.")
		return
	}
	ok, err := s.verifyReserved(r.Context(), []byte(r.PostForm.Get("password")), done)
	if err != nil {
		s.log.ErrorContext(r.Context(), "verify owner password", "err", err)
		s.renderError(w, oauthErr(oauth2errors.ErrTemporarilyUnavailable, "The password could not be checked. Try again."))
		return
	}
	if !ok {
		s.audit(r.Context(), "owner_password_failed", "", req.clientID, nil)
		s.renderPassword(w, http.StatusUnauthorized, token, req, "Wrong password.")
		return
	}
	s.mu.Lock()
	next := s.newSelectionLocked(&selection{req: req, expires: s.now().Add(s.opts.SelectionTTL), epoch: epoch})
	s.mu.Unlock()
	s.renderConsent(w, http.StatusOK, next, req, req.scopes, nil, "")
}

// verifyReserved checks password and reports the outcome to done, the
// release of the attempt Limiter.Reserve allowed. done runs however the
// check ends, a panic included (the HTTP server recovers it), so a failing
// check cannot keep the attempt's keys and verification slot forever.
func (s *Server) verifyReserved(ctx context.Context, password []byte, done func(success bool)) (ok bool, err error) {
	defer func() { done(ok && err == nil) }()
	return s.opts.Password.VerifyPassword(ctx, password)
}

// newSelectionLocked stores sel under a fresh one-use token.
func (s *Server) newSelectionLocked(sel *selection) string {
	now := s.now()
	for id, sel := range s.selections {
		if now.After(sel.expires) {
			delete(s.selections, id)
		}
	}
	for len(s.selections) >= maxSelections {
		for id := range s.selections {
			delete(s.selections, id)
			break
		}
	}
	token := randomValue("sel_")
	s.selections[token] = sel
	return token
}

// consentDecision handles step 2. The selection token is single use.
func (s *Server) consentDecision(w http.ResponseWriter, r *http.Request) {
	token := r.PostForm.Get("selection")
	s.mu.Lock()
	sel := s.selections[token]
	delete(s.selections, token)
	s.mu.Unlock()
	if sel == nil || s.now().After(sel.expires) {
		s.renderError(w, oauthErr(oauth2errors.ErrInvalidRequest, "This consent form expired or was already used. Start again from your client."))
		return
	}
	if epoch, err := s.opts.Store.GlobalEpoch(r.Context()); err != nil || epoch != sel.epoch {
		// The password was rotated, or every grant revoked, since it was
		// typed: it proves nothing now.
		s.renderError(w, oauthErr(oauth2errors.ErrInvalidRequest, "This consent form is no longer valid. Start again from your client."))
		return
	}
	req := sel.req
	switch r.PostForm.Get("decision") {
	case "deny":
		s.audit(r.Context(), "consent_denied", "", req.clientID, map[string]any{"client_name": req.clientName})
		s.authorizeError(w, r, req, oauthErr(oauth2errors.ErrAccessDenied, "the owner denied the request"))
		return
	case "approve":
	default:
		s.renderError(w, oauthErr(oauth2errors.ErrInvalidRequest, "Choose Approve or Deny."))
		return
	}
	chosenScopes := r.PostForm["scope"]
	chosenProjects := r.PostForm["project"]
	var scopes []string
	for _, sc := range s.opts.Scopes { // offered order, only offered values
		if slices.Contains(chosenScopes, sc) {
			scopes = append(scopes, sc)
		}
	}
	if !slices.Contains(scopes, ScopeRead) {
		scopes = append([]string{ScopeRead}, scopes...) // every grant can at least read
	}
	var projects []string
	for _, root := range s.opts.Projects.Roots() {
		if slices.Contains(chosenProjects, root.Ref) {
			projects = append(projects, root.Ref)
		}
	}
	if len(projects) == 0 || len(chosenProjects) > maxProjectsForm {
		s.mu.Lock()
		next := s.newSelectionLocked(&selection{req: req, expires: sel.expires, epoch: sel.epoch})
		s.mu.Unlock()
		s.renderConsent(w, http.StatusBadRequest, next, req, scopes, chosenProjects, "Choose at least one Project.")
		return
	}
	ctx := r.Context()
	g := &store.Grant{ID: randomID(prefixGrant), ClientID: req.clientID, ClientName: req.clientName,
		Scopes: scopes, ProjectIDs: projects}
	if s.opts.GrantMaxLifetime > 0 {
		exp := s.now().Add(s.opts.GrantMaxLifetime)
		g.ExpiresAt = &exp
	}
	if err := s.opts.Store.CreateGrant(ctx, g); err != nil {
		s.log.ErrorContext(ctx, "create grant", "err", err)
		s.renderError(w, oauthErr(oauth2errors.ErrServerError, "The grant could not be saved. Try again."))
		return
	}
	code, err := s.issueCode(ctx, req, g)
	if err != nil {
		s.log.ErrorContext(ctx, "issue authorization code", "err", err)
		s.renderError(w, oauthErr(oauth2errors.ErrServerError, "The authorization could not be completed. Try again."))
		return
	}
	s.audit(ctx, "grant_created", g.ID, req.clientID, map[string]any{"scopes": scopes, "projects": len(projects), "client_name": req.clientName})
	s.redirectWith(w, r, req.redirectURI, req.state, url.Values{"code": {code}})
}

// redirectWith sends the browser to a validated redirect URI with params,
// state and the RFC 9207 iss parameter.
func (s *Server) redirectWith(w http.ResponseWriter, r *http.Request, redirectURI, state string, params url.Values) {
	u, err := url.Parse(redirectURI)
	if err != nil {
		s.renderError(w, oauthErr(oauth2errors.ErrInvalidRequest, "The redirect URI is invalid."))
		return
	}
	q := u.Query()
	for k, v := range params {
		q[k] = v
	}
	if state != "" {
		q.Set("state", state)
	}
	q.Set("iss", s.opts.Issuer)
	u.RawQuery = q.Encode()
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, u.String(), http.StatusFound)
}

// sameOrigin rejects a consent POST whose Origin header names another site.
// Browsers send Origin on form posts; its absence (non-browser clients) is
// tolerated because the one-use request and selection tokens carry the
// CSRF protection.
func (s *Server) sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	return o == "" || o == s.opts.Issuer
}

// clientAddr returns the request's source address and whether it
// identifies the client. It is the one place that decides whether a
// per-source limit may apply: the address is trusted only when the peer is
// one of Options.TrustedProxies and sent exactly one parsable
// Options.ClientIPHeader, which is then the address returned. Otherwise it
// is the peer address and trusted is false: behind a tunnel without a
// trusted proxy every request shares the tunnel's address, and a header
// from any other peer may be forged.
func (s *Server) clientAddr(r *http.Request) (addr string, trusted bool) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || len(s.opts.TrustedProxies) == 0 {
		return host, false
	}
	peer = peer.Unmap()
	for _, p := range s.opts.TrustedProxies {
		if p.Contains(peer) {
			v := r.Header.Values(s.opts.ClientIPHeader)
			if len(v) != 1 {
				return host, false
			}
			ip, err := netip.ParseAddr(strings.TrimSpace(v[0]))
			if err != nil {
				return host, false
			}
			return ip.Unmap().String(), true
		}
	}
	return host, false
}

func retryAfterSeconds(d time.Duration) string {
	secs := int((d + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	return strconv.Itoa(secs)
}

// sourceKey is the per-source limit key of r (the password back-off, the
// registration limit): clientAddr's address, an IPv6 one as its /64,
// since one subscriber commonly holds a whole /64 and could otherwise take
// a fresh address for every guess. trusted is clientAddr's.
func (s *Server) sourceKey(r *http.Request) (key string, trusted bool) {
	addr, trusted := s.clientAddr(r)
	return addressKey(addr), trusted
}

// addressKey is addr, or for an IPv6 address its /64.
func addressKey(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil || !ip.Is6() || ip.Is4In6() {
		return addr
	}
	return netip.PrefixFrom(ip, 64).Masked().String()
}
