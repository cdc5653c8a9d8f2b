package oauth

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrNotRecorded is returned (wrapped) by RevokeGrant and RevokeAll when
// the revocation holds in this server, its grants' commands stopped and
// their tokens refused, but writing it to the database failed (a full
// disk): the server retries the write until it lands. Were the server to
// stop first, the revocation would be lost; the Owner's CLI says so.
var ErrNotRecorded = errors.New("revoked in the running server, but not yet recorded in the database")

// tombstones are revocations that hold in this process from the moment the
// Owner asks, before (and whether or not) the database has them: Verify,
// refresh and consent consult them after the store.
type tombstones struct {
	mu     sync.RWMutex
	grants map[string]bool
	// epochFloor: grants of an older global epoch are revoked (revoke-all
	// and password rotation bump the epoch in memory first).
	epochFloor int64
}

// revoked reports whether a grant of globalEpoch is revoked in memory.
func (t *tombstones) revoked(grantID string, globalEpoch int64) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.grants[grantID] || globalEpoch < t.epochFloor
}

func (t *tombstones) revokeGrant(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.grants == nil {
		t.grants = map[string]bool{}
	}
	t.grants[id] = true
}

// raiseFloor revokes every grant of an epoch below floor.
func (t *tombstones) raiseFloor(floor int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.epochFloor = max(t.epochFloor, floor)
}

// Retry bounds of an unrecorded revocation's write.
const (
	recordRetryFirst = time.Second
	recordRetryMax   = 30 * time.Second
)

// RecordLater retries write until it succeeds or the server's background
// context ends, backing off from a second to thirty.
func (s *Server) RecordLater(what string, write func(ctx context.Context) error) {
	bg := s.opts.Background
	if bg == nil {
		bg = context.Background()
	}
	go func() {
		wait := recordRetryFirst
		for attempt := 1; ; attempt++ {
			select {
			case <-bg.Done():
				s.log.Error("server stopping with a revocation not recorded; it is lost", "what", what)
				return
			case <-time.After(wait):
			}
			err := write(bg)
			if err == nil {
				s.log.Info("revocation recorded", "what", what, "attempts", attempt)
				return
			}
			s.log.Error("record revocation (retrying)", "what", what, "attempt", attempt, "err", err)
			wait = min(2*wait, recordRetryMax)
		}
	}()
}
