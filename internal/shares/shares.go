// Package shares is a budget shared by keys (grants), each of which may
// hold at most its share of it: one key's holders cannot take what the
// others need. Reservations take from the key's share first, then from
// the total, waiting until their context ends.
package shares

import (
	"context"
	"errors"
	"sync"

	"golang.org/x/sync/semaphore"
)

// ErrExhausted means the budget (the total or the key's share) had no
// room before the context ended.
var ErrExhausted = errors.New("budget exhausted")

// Budget is a total plus one share per key. It is safe for concurrent
// use.
type Budget struct {
	total *semaphore.Weighted
	share int64

	mu   sync.Mutex
	keys map[string]*keyShare
}

type keyShare struct {
	sem   *semaphore.Weighted
	users int // reservations using sem; the entry goes when it drops to zero
}

// New returns a budget of total with a share per key (at most total).
func New(total, share int64) *Budget {
	return &Budget{total: semaphore.NewWeighted(total), share: min(share, total), keys: map[string]*keyShare{}}
}

// Reservation is what one holder of key holds.
type Reservation struct {
	b    *Budget
	key  string
	ks   *keyShare
	held int64
}

// Open starts a reservation of key, holding nothing yet.
func (b *Budget) Open(key string) *Reservation {
	b.mu.Lock()
	defer b.mu.Unlock()
	ks := b.keys[key]
	if ks == nil {
		ks = &keyShare{sem: semaphore.NewWeighted(b.share)}
		b.keys[key] = ks
	}
	ks.users++
	return &Reservation{b: b, key: key, ks: ks}
}

// Take reserves n more, the key's share first, waiting until ctx ends
// (ErrExhausted).
func (r *Reservation) Take(ctx context.Context, n int64) error {
	if err := r.ks.sem.Acquire(ctx, n); err != nil {
		return ErrExhausted
	}
	if err := r.b.total.Acquire(ctx, n); err != nil {
		r.ks.sem.Release(n)
		return ErrExhausted
	}
	r.held += n
	return nil
}

// Give returns n of what r holds.
func (r *Reservation) Give(n int64) {
	if n <= 0 {
		return
	}
	r.held -= n
	r.b.total.Release(n)
	r.ks.sem.Release(n)
}

// Close returns everything r holds. It must be called exactly once.
func (r *Reservation) Close() {
	r.Give(r.held)
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	if r.ks.users--; r.ks.users == 0 {
		delete(r.b.keys, r.key)
	}
}
