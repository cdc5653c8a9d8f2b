// Package clientmeta fetches and validates OAuth Client ID Metadata
// Documents (draft-ietf-oauth-client-id-metadata-document): a client whose
// client_id is an https URL publishes its metadata at that URL, and the
// authorization server fetches it instead of requiring registration.
//
// The URL is chosen by an unauthenticated party, so a fetch is a
// server-side request forgery risk. The Fetcher therefore connects only to
// publicly routable addresses (checked after resolution and again on the
// socket before it connects), never follows redirects, ignores proxy
// settings from the environment, requires TLS 1.2 or later, and bounds time
// and size. Only public clients (token_endpoint_auth_method "none") are
// accepted.
package clientmeta

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"time"
)

// Defaults applied by New to zero Options fields.
const (
	DefaultTimeout  = 5 * time.Second
	DefaultMaxBytes = 64 << 10
	DefaultCacheTTL = time.Hour
)

// Options configure a Fetcher. The zero value is the production default.
type Options struct {
	// Timeout bounds a whole fetch: resolution, connection, TLS, headers
	// and body. Zero means 5s.
	Timeout time.Duration
	// MaxBytes is the largest accepted body; a larger one is ErrTooLarge.
	// Zero means 64 KiB.
	MaxBytes int64
	// CacheTTL is how long a document is cached when the response carries
	// no Cache-Control max-age (a max-age is honoured, clamped to
	// [5m, 24h]). Zero means 1h. At most 256 documents are cached.
	CacheTTL time.Duration
	// AllowLoopback is a TEST SWITCH ONLY: it permits loopback addresses
	// (and http:// client IDs on loopback hosts) and lets HTTPClient's
	// transport be used. Never set it in production.
	AllowLoopback bool
	// Now is the clock used for cache expiry; nil means time.Now.
	Now func() time.Time
	// HTTPClient is consulted only when AllowLoopback is set: if its
	// Transport is an *http.Transport (e.g. httptest.Server.Client()), a
	// clone supplies TLS settings such as the test CA. The dial guard, no
	// proxy, no redirects and the TLS 1.2 floor are always enforced.
	// Production ignores it and builds its own guarded transport.
	HTTPClient *http.Client
}

// Fetcher fetches, validates and caches client metadata documents. It is
// safe for concurrent use; concurrent fetches of one client ID share a
// single request.
type Fetcher struct {
	timeout       time.Duration
	maxBytes      int64
	cacheTTL      time.Duration
	allowLoopback bool
	now           func() time.Time
	guard         *guard
	client        *http.Client

	mu       sync.Mutex
	cache    map[string]cacheEntry
	inflight map[string]*call
}

// call is one in-flight fetch shared by every caller asking for the same
// client ID. doc and err are written before done is closed.
type call struct {
	done    chan struct{}
	waiters int // callers attached, read by tests
	doc     *Document
	err     error
}

// New returns a Fetcher with opts' zero fields replaced by defaults.
func New(opts Options) *Fetcher {
	f := &Fetcher{
		timeout:       opts.Timeout,
		maxBytes:      opts.MaxBytes,
		cacheTTL:      opts.CacheTTL,
		allowLoopback: opts.AllowLoopback,
		now:           opts.Now,
		cache:         make(map[string]cacheEntry),
		inflight:      make(map[string]*call),
	}
	if f.timeout <= 0 {
		f.timeout = DefaultTimeout
	}
	if f.maxBytes <= 0 {
		f.maxBytes = DefaultMaxBytes
	}
	if f.cacheTTL <= 0 {
		f.cacheTTL = DefaultCacheTTL
	}
	if f.now == nil {
		f.now = time.Now
	}
	f.guard = newGuard(f.allowLoopback, f.timeout)
	f.client = &http.Client{
		Transport: newTransport(f.guard, opts.HTTPClient, f.timeout),
		// A redirect could point anywhere; re-validating it is more code
		// than the draft needs, so a 3xx is simply an error.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       f.timeout,
	}
	return f
}

// Fetch returns the validated document for clientID, from the cache while
// fresh. Errors are *Error values wrapping ErrInvalidClientID,
// ErrForbiddenAddress, ErrFetch, ErrTooLarge or ErrInvalidDocument; their
// messages are safe to show to the client. Failures are not cached. If ctx
// ends first, Fetch returns ErrFetch (also matching ctx.Err()) while the
// shared request continues, bounded by Options.Timeout, for other callers.
func (f *Fetcher) Fetch(ctx context.Context, clientID string) (*Document, error) {
	u, err := parseClientID(clientID, f.allowLoopback)
	if err != nil {
		return nil, err
	}
	if err := f.checkHost(u.Hostname()); err != nil {
		return nil, err
	}

	f.mu.Lock()
	if doc, ok := f.cachedLocked(clientID, f.now()); ok {
		f.mu.Unlock()
		return doc.clone(), nil
	}
	c, ok := f.inflight[clientID]
	if !ok {
		c = &call{done: make(chan struct{})}
		f.inflight[clientID] = c
		// Detached from the first caller's cancellation so one impatient
		// caller cannot fail the others; bounded by the fetch timeout.
		go f.run(context.WithoutCancel(ctx), clientID, c)
	}
	c.waiters++
	f.mu.Unlock()

	select {
	case <-c.done:
		if c.err != nil {
			return nil, c.err
		}
		return c.doc.clone(), nil
	case <-ctx.Done():
		return nil, newError(ErrFetch, "request cancelled", ctx.Err())
	}
}

// checkHost refuses, without any network traffic, hosts that are IP
// literals or loopback names the guard would refuse anyway; names are
// resolved and checked on the dial path.
func (f *Fetcher) checkHost(host string) error {
	if ip, err := netip.ParseAddr(host); err == nil {
		if !f.guard.allowed(ip) {
			return forbidden(nil)
		}
		return nil
	}
	if isLoopbackHost(host) && !f.allowLoopback {
		return forbidden(nil)
	}
	return nil
}

func (f *Fetcher) run(ctx context.Context, clientID string, c *call) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	doc, ttl, err := f.fetch(ctx, clientID)

	f.mu.Lock()
	if err == nil {
		f.storeLocked(clientID, doc, f.now(), ttl)
	}
	c.doc, c.err = doc, err
	delete(f.inflight, clientID)
	f.mu.Unlock()
	close(c.done)
}

// fetch performs one GET and validates the result.
func (f *Fetcher) fetch(ctx context.Context, clientID string) (*Document, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientID, nil)
	if err != nil {
		return nil, 0, newError(ErrInvalidClientID, "client_id is not a valid URL", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "DevSpace-OAuth/1 (client metadata fetcher)")

	resp, err := f.client.Do(req)
	if err != nil {
		return nil, 0, transportError(err)
	}
	defer resp.Body.Close()

	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return nil, 0, newError(ErrFetch, fmt.Sprintf("server answered with redirect status %d; redirects are not followed", resp.StatusCode), nil)
	case resp.StatusCode != http.StatusOK:
		return nil, 0, newError(ErrFetch, fmt.Sprintf("server answered with status %d, want 200", resp.StatusCode), nil)
	}
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return nil, 0, newError(ErrInvalidDocument, "response Content-Type must be application/json", nil)
	}
	tooLarge := newError(ErrTooLarge, fmt.Sprintf("document exceeds %d bytes", f.maxBytes), nil)
	if resp.ContentLength > f.maxBytes {
		return nil, 0, tooLarge
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.maxBytes+1))
	if err != nil {
		return nil, 0, transportError(err)
	}
	if int64(len(body)) > f.maxBytes {
		return nil, 0, tooLarge
	}
	doc, err := parseDocument(body, clientID)
	if err != nil {
		return nil, 0, err
	}
	return doc, f.ttl(resp.Header), nil
}

// transportError maps a client or body error to a client-safe *Error; the
// raw error (which may name resolved addresses) stays in Cause.
func transportError(err error) error {
	switch {
	case errors.Is(err, ErrForbiddenAddress):
		return forbidden(err)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return newError(ErrFetch, "timed out", err)
	case errors.Is(err, context.Canceled):
		return newError(ErrFetch, "request cancelled", err)
	default:
		return newError(ErrFetch, "could not retrieve the document from the client_id host", err)
	}
}

func isTimeout(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue) && ue.Timeout()
}
