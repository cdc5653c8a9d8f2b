package clientmeta

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const (
	// maxCacheEntries bounds memory: client IDs are attacker-chosen.
	maxCacheEntries = 256
	minTTL          = 5 * time.Minute
	maxTTL          = 24 * time.Hour
)

type cacheEntry struct {
	doc     *Document
	expires time.Time
}

// cachedLocked returns a fresh cached document. f.mu must be held.
func (f *Fetcher) cachedLocked(clientID string, now time.Time) (*Document, bool) {
	e, ok := f.cache[clientID]
	if !ok {
		return nil, false
	}
	if !now.Before(e.expires) {
		delete(f.cache, clientID)
		return nil, false
	}
	return e.doc, true
}

// storeLocked caches doc, evicting expired entries and then the entry
// closest to expiry when full. f.mu must be held.
func (f *Fetcher) storeLocked(clientID string, doc *Document, now time.Time, ttl time.Duration) {
	if _, ok := f.cache[clientID]; !ok && len(f.cache) >= maxCacheEntries {
		var victim string
		var soonest time.Time
		for k, e := range f.cache {
			if !now.Before(e.expires) {
				delete(f.cache, k)
				continue
			}
			if victim == "" || e.expires.Before(soonest) {
				victim, soonest = k, e.expires
			}
		}
		if len(f.cache) >= maxCacheEntries {
			delete(f.cache, victim)
		}
	}
	f.cache[clientID] = cacheEntry{doc: doc, expires: now.Add(ttl)}
}

// ttl picks the cache lifetime for a response: max-age clamped to
// [5m, 24h]; no-store or no-cache count as max-age=0 (so 5m, which still
// protects the client's host from one fetch per authorization); without
// either, the configured default.
func (f *Fetcher) ttl(h http.Header) time.Duration {
	secs, ok := maxAge(h)
	if !ok {
		return f.cacheTTL
	}
	if secs > int64(maxTTL/time.Second) {
		return maxTTL
	}
	return max(time.Duration(secs)*time.Second, minTTL)
}

// maxAge extracts the Cache-Control lifetime in seconds.
func maxAge(h http.Header) (int64, bool) {
	var secs int64
	found := false
	for _, v := range h.Values("Cache-Control") {
		for d := range strings.SplitSeq(v, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "no-store", "no-cache":
				return 0, true
			case "max-age":
				n, err := strconv.ParseInt(strings.Trim(strings.TrimSpace(val), `"`), 10, 64)
				switch {
				case errors.Is(err, strconv.ErrRange) && n > 0:
					n = math.MaxInt64 // overflow means "very long"
				case err != nil || n < 0:
					n = 0 // invalid means stale (RFC 9111 §4.2.1)
				}
				if !found || n < secs {
					secs, found = n, true
				}
			}
		}
	}
	return secs, found
}
