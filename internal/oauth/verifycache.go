package oauth

import (
	"slices"
	"sync"
	"time"
)

// verifyCacheSize bounds the verification cache: more than the access
// tokens a single owner's hosts hold at once, small enough (about 300 KiB)
// to not matter.
const verifyCacheSize = 1024

// verifyCache remembers verified access tokens by hash, so that /mcp
// requests after the first skip the database. An entry is served only
// while the store's AuthGeneration is the one read before the entry's
// rows were read (every committed write that may revoke or change a token,
// a grant or the global epoch advances it), and only before the token's
// and its grant's expiry on the server's clock. It never remembers a
// failure. It is safe for concurrent use.
type verifyCache struct {
	max int

	mu      sync.RWMutex
	gen     uint64 // the generation every entry was read under
	entries map[string]cachedToken
}

// cachedToken is a verified token. p is never handed out, only copies.
type cachedToken struct {
	p            Principal
	grantExpires time.Time // zero: the grant does not expire
}

func newVerifyCache(max int) *verifyCache {
	return &verifyCache{max: max, entries: make(map[string]cachedToken, max)}
}

// get returns a copy of the Principal cached for hash if it was read under
// generation gen and neither the token nor its grant has expired at now.
func (c *verifyCache) get(hash string, gen uint64, now time.Time) (*Principal, bool) {
	c.mu.RLock()
	e, ok := c.entries[hash]
	ok = ok && c.gen == gen
	c.mu.RUnlock()
	if !ok || reached(e.p.ExpiresAt, now) || reached(e.grantExpires, now) {
		return nil, false
	}
	return e.p.clone(), true
}

// put caches a copy of p, read from rows under generation gen. A put from
// an older generation is dropped (a write committed since its read); one
// from a newer generation empties the cache first. When the cache is full
// an arbitrary entry makes room.
func (c *verifyCache) put(hash string, gen uint64, p *Principal, grantExpires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case gen < c.gen:
		return
	case gen > c.gen:
		clear(c.entries)
		c.gen = gen
	}
	if _, ok := c.entries[hash]; !ok && len(c.entries) >= c.max {
		for k := range c.entries {
			delete(c.entries, k)
			break
		}
	}
	c.entries[hash] = cachedToken{p: *p.clone(), grantExpires: grantExpires}
}

// reached reports whether the instant t (zero: never) is at or before now,
// the same test Verify applies to the stored rows.
func reached(t, now time.Time) bool {
	return !t.IsZero() && !now.Before(t)
}

// clone returns a deep copy of p.
func (p *Principal) clone() *Principal {
	c := *p
	c.Scopes = slices.Clone(p.Scopes)
	c.ProjectIDs = slices.Clone(p.ProjectIDs)
	return &c
}
