// Package idempotency makes mutating tools idempotent (docs/design.md §7
// "operationId"). Every mutating tool wraps its effect in Service.Do under
// a Key of (grant, execution, tool, operationId) and a hash of its request:
//
//   - the first call reserves the key and runs the effect once;
//   - a retry with the same request after the effect committed gets the
//     stored result back (replayed), and the effect is not repeated —
//     also when the retry races the first call;
//   - the same operationId with a different request is ErrConflict;
//   - an effect whose outcome is unknown (it failed part way, or the server
//     crashed while it ran) is ErrOutcomeUnknown and is never re-run.
//
// Records live in the store's operations table for Options.TTL (24 h).
package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/devspace-dev/devspace/internal/fault"
	"github.com/devspace-dev/devspace/internal/store"
)

// DefaultTTL is how long an idempotency record is kept (docs/design.md §9).
const DefaultTTL = 24 * time.Hour

// MaxResultBytes bounds a stored result (docs/design.md §9: 2 MiB).
const MaxResultBytes = store.MaxOperationResultBytes

// DefaultGrantBytes bounds the stored results one grant's records hold
// together (docs/design.md §9): past it the grant's oldest results are
// dropped, down to three quarters of it. The state volume is every
// grant's; within the 24 h a record lives, one grant's calls could
// otherwise fill it.
const DefaultGrantBytes = 64 << 20

// Errors of Do. This package owns them; each says its code (and the two
// phase sentinels their phase: package fault), which the edge looks up
// once (docs/design.md §8).
var (
	// ErrConflict: the operationId was already used under this key with a
	// different request (operation_id_conflict, category conflict).
	ErrConflict = fault.New("operation_id_conflict", "operationId already used with a different request")
	// ErrOutcomeUnknown: an attempt under this key may or may not have
	// taken effect — it failed part way, its result could not be
	// recorded, or the server stopped while it ran — and the record says
	// so. It is never re-run: the retry gets ErrOutcomeUnknown
	// (operation_outcome_unknown, phase outcome_unknown); the client must
	// inspect the Project and retry with a new operationId. The attempt
	// that left the record so gets it too, wrapped after its own error,
	// whose code (if it says one) is the answer's.
	ErrOutcomeUnknown = fault.New("operation_outcome_unknown", "operation outcome unknown").In(fault.OutcomeUnknown)
	// ErrNotStarted is returned (wrapped) by an effect function that failed
	// before changing anything: Do then releases the reservation so a retry
	// may run again, and returns the function's error unchanged (phase
	// not_started). Services wrap every failure before their effect began
	// with it — validation, version conflicts, spawn failures — and those
	// before they called Do too. It says no code: the error it wraps does.
	ErrNotStarted = fault.Mark(fault.NotStarted, "operation not started")
	// ErrResultTooLarge: the effect ran but its result exceeds
	// MaxResultBytes and cannot be stored for replay. The record is marked
	// unknown, and the error wraps ErrOutcomeUnknown: the call, and a
	// retry, answer operation_outcome_unknown.
	ErrResultTooLarge = errors.New("operation result too large to store")
)

// NotStarted wraps err, a failure before an operation's effect began,
// with ErrNotStarted: inside Do the reservation is then released, and
// either way the error says phase not_started. Services call it for every
// such failure, before Do or inside their effect.
func NotStarted(err error) error { return fmt.Errorf("%w: %w", ErrNotStarted, err) }

// HashRequest returns "sha256:" and the hex SHA-256 of the JSON encoding of
// v. encoding/json writes struct fields in declaration order and map keys
// sorted, so equal requests hash equally. v should hold the request's
// arguments without the operationId itself.
func HashRequest(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("hash request: %w", err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Key identifies one operation. ExecutionID is "" for operations that create
// an execution (project_control open). OperationID is compared as exact
// bytes.
type Key struct {
	GrantID     string
	ExecutionID string
	Tool        string
	OperationID string
}

func (k Key) store() store.OperationKey { return store.OperationKey(k) }

// Options tune a Service. The zero value is the production default.
type Options struct {
	// TTL is how long a record is kept and replayed. Zero means DefaultTTL.
	TTL time.Duration
	// Now is the clock Prune uses; nil means the store's clock, which also
	// stamps reservations.
	Now func() time.Time
	// GrantBytes bounds the stored results of one grant's records. Zero
	// means DefaultGrantBytes.
	GrantBytes int64
}

// Service runs effects at most once per Key. It is safe for concurrent use.
// Exactly one Service may use a Store: a pending record that this Service
// is not running is taken as left behind by a crash.
type Service struct {
	st  *store.Store
	ttl time.Duration
	now func() time.Time

	mu       sync.Mutex
	inflight map[Key]chan struct{} // closed when the owning call returns

	grantBytes int64
	held       map[string]int64 // grant → result bytes its records hold, as of its last count plus what it stored since
	trimming   map[string]bool  // grants whose oldest results are being dropped
}

// New returns a Service recording operations in st.
func New(st *store.Store, opts Options) *Service {
	s := &Service{st: st, ttl: opts.TTL, now: opts.Now, inflight: map[Key]chan struct{}{},
		grantBytes: opts.GrantBytes, held: map[string]int64{}, trimming: map[string]bool{}}
	if s.ttl <= 0 {
		s.ttl = DefaultTTL
	}
	if s.grantBytes <= 0 {
		s.grantBytes = DefaultGrantBytes
	}
	if s.now == nil {
		s.now = st.Now
	}
	return s
}

// Do runs fn at most once for key and returns its result.
//
//   - The first call reserves key and runs fn. On success the result is
//     stored and returned with replayed=false.
//   - A later call with the same requestHash returns the stored result with
//     replayed=true without calling fn. A concurrent identical call waits
//     for the running one (or for ctx) and then replays.
//   - A call with another requestHash gets ErrConflict.
//   - If the record's outcome is unknown — fn failed earlier, or the record
//     is pending with no call of this Service running it (a crash) — the
//     call gets ErrOutcomeUnknown and fn is not run.
//
// If fn returns an error wrapping ErrNotStarted, the reservation is deleted
// and the error returned as is; a retry runs fn again. Any other error from
// fn (or a panic, which is re-raised) marks the record unknown and is
// returned wrapped with ErrOutcomeUnknown after it, so that the error says
// the phase its record does. A result over MaxResultBytes marks the record
// unknown and returns ErrResultTooLarge (with ErrOutcomeUnknown). When the
// release of a reservation fails, the error wraps ErrOutcomeUnknown first:
// the record stays pending, which a retry answers with ErrOutcomeUnknown. The bookkeeping after fn returns does not depend on
// ctx, so a caller that goes away cannot leave a finished effect
// unrecorded.
//
// The key's operationId must pass ValidateID (ErrInvalidID otherwise).
func (s *Service) Do(ctx context.Context, key Key, requestHash string, fn func(ctx context.Context) ([]byte, error)) (result []byte, replayed bool, err error) {
	if err := ValidateID(key.OperationID); err != nil {
		return nil, false, err
	}
	if key.GrantID == "" || key.Tool == "" || requestHash == "" {
		return nil, false, errors.New("operation: grant, tool and request hash are required")
	}
	for {
		s.mu.Lock()
		wait, busy := s.inflight[key]
		if !busy {
			done := make(chan struct{})
			s.inflight[key] = done
			s.mu.Unlock()
			defer func() {
				s.mu.Lock()
				delete(s.inflight, key)
				s.mu.Unlock()
				close(done)
			}()
			return s.run(ctx, key, requestHash, fn)
		}
		s.mu.Unlock()
		select {
		case <-wait:
			// The owner finished; look again. Usually this replays, conflicts
			// or reports an unknown outcome; after ErrNotStarted it runs.
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// run executes one attempt while holding key's in-flight slot.
func (s *Service) run(ctx context.Context, key Key, requestHash string, fn func(ctx context.Context) ([]byte, error)) ([]byte, bool, error) {
	sk := key.store()
	op, created, err := s.st.ReserveOperation(ctx, sk, requestHash, s.ttl)
	if err != nil {
		return nil, false, fmt.Errorf("reserve operation: %w", err)
	}
	if !created {
		switch {
		case op.RequestHash != requestHash:
			return nil, false, ErrConflict
		case op.State == store.OperationCommitted:
			return op.Result, true, nil
		default: // unknown, or pending with no owner in this process
			return nil, false, ErrOutcomeUnknown
		}
	}

	// From here on the reservation must always leave the pending state.
	bg := context.WithoutCancel(ctx)
	finished := false
	defer func() {
		if !finished {
			// fn panicked: its effect may have started.
			_ = s.st.MarkOperationUnknown(bg, sk)
		}
	}()
	result, fnErr := fn(ctx)
	finished = true

	switch {
	case errors.Is(fnErr, ErrNotStarted):
		if err := s.st.ReleaseOperation(bg, sk); err != nil {
			return nil, false, errors.Join(fmt.Errorf("%w: release operation: %w", ErrOutcomeUnknown, err), fnErr)
		}
		return nil, false, fnErr
	case fnErr != nil:
		if err := s.st.MarkOperationUnknown(bg, sk); err != nil {
			return nil, false, errors.Join(fmt.Errorf("%w: %w", fnErr, ErrOutcomeUnknown), fmt.Errorf("mark operation unknown: %w", err))
		}
		return nil, false, fmt.Errorf("%w: %w", fnErr, ErrOutcomeUnknown)
	case len(result) > MaxResultBytes:
		tooLarge := fmt.Errorf("%w: %d bytes, limit %d: %w", ErrResultTooLarge, len(result), MaxResultBytes, ErrOutcomeUnknown)
		if err := s.st.MarkOperationUnknown(bg, sk); err != nil {
			return nil, false, errors.Join(tooLarge, fmt.Errorf("mark operation unknown: %w", err))
		}
		return nil, false, tooLarge
	}
	if err := s.st.CompleteOperation(bg, sk, result); err != nil {
		// The effect happened but is not recorded; the row stays pending,
		// so retries get ErrOutcomeUnknown rather than a second effect.
		return nil, false, fmt.Errorf("%w: record result: %w", ErrOutcomeUnknown, err)
	}
	s.holdResult(bg, key.GrantID, int64(len(result)))
	return result, false, nil
}

// holdResult counts n more result bytes held by grant's records and, past
// the service's GrantBytes, drops the grant's oldest results down to three
// quarters of it (store.DropOldestResults). The first count of a grant
// since the start reads its records. A failure to count or drop is
// harmless to the call that stored: the next one tries again.
func (s *Service) holdResult(ctx context.Context, grant string, n int64) {
	s.mu.Lock()
	held, counted := s.held[grant]
	s.mu.Unlock()
	if !counted {
		total, err := s.st.OperationResultBytes(ctx, grant)
		if err != nil {
			return
		}
		held, n = total, 0 // the total includes what was just stored
	}
	s.mu.Lock()
	held += n
	s.held[grant] = held
	trim := held > s.grantBytes && !s.trimming[grant]
	if trim {
		s.trimming[grant] = true
	}
	s.mu.Unlock()
	if !trim {
		return
	}
	after, err := s.st.DropOldestResults(ctx, grant, s.grantBytes/4*3)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.trimming, grant)
	if err != nil {
		delete(s.held, grant) // counted again next time
		return
	}
	s.held[grant] = after
}

// Prune deletes records whose TTL has passed and returns how many. Run it
// periodically; a record older than its TTL is no longer replayed in any
// case.
func (s *Service) Prune(ctx context.Context) (int64, error) {
	return s.st.PruneOperations(ctx, s.now())
}
