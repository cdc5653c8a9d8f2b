package shares

import (
	"context"
	"errors"
	"testing"
	"time"
)

func short() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_ = cancel // ends with its timer
	return ctx
}

// TestShares: one key cannot take more than its share, the keys together
// not more than the total, and what is given back or closed is free again.
func TestShares(t *testing.T) {
	b := New(10, 6)
	a1, a2, c, d := b.Open("a"), b.Open("a"), b.Open("c"), b.Open("d")
	if err := a1.Take(short(), 4); err != nil {
		t.Fatal(err)
	}
	if err := a2.Take(short(), 3); !errors.Is(err, ErrExhausted) {
		t.Fatalf("a past its share: %v", err)
	}
	if err := c.Take(short(), 5); err != nil {
		t.Fatalf("c within its share and the total: %v", err)
	}
	if err := d.Take(short(), 2); !errors.Is(err, ErrExhausted) {
		t.Fatalf("d past the total (9 of 10 held): %v", err)
	}
	a1.Give(4)
	if err := d.Take(short(), 2); err != nil {
		t.Fatalf("d after a gave back: %v", err)
	}
	for _, r := range []*Reservation{a1, a2, c, d} {
		r.Close()
	}
	if len(b.keys) != 0 {
		t.Fatalf("closed reservations left %d keys", len(b.keys))
	}
	if err := b.Open("e").Take(short(), 6); err != nil {
		t.Fatalf("the whole share after every close: %v", err)
	}
}
