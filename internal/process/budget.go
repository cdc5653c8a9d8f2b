package process

import (
	"maps"
	"sync"
)

// headKeepSize is how much of a command's first output its spool file
// keeps whatever its share and the total say: only its own cap
// (Spec.MaxOutputBytes) and a failing file stop it. With the tail ring
// (tailRingSize) every command, also one whose owner is over its share
// or while the spool is full, keeps its head and its tail. What this
// lets the total exceed is at most one head per command started since
// the owner's older output was last retired (a sweep, which such a
// head asks for through the pressure channel).
const headKeepSize = tailRingSize

// Reasons a command's output was truncated, for Metrics.OutputTruncated.
const (
	// TruncatedCommandCap: the command reached its own cap
	// (Spec.MaxOutputBytes).
	TruncatedCommandCap = "command_cap"
	// TruncatedGrantShare: the command's owner (Spec.Tenant, the grant)
	// holds its share of the spool (Options.SpoolShareBytes).
	TruncatedGrantShare = "grant_share"
	// TruncatedSpoolFull: the spool holds its total
	// (Options.MaxSpoolBytes).
	TruncatedSpoolFull = "spool_full"
	// TruncatedFileError: the spool file could not be created or written.
	TruncatedFileError = "file_error"
)

// spoolBudget bounds the bytes all spool files of one Manager retain, in
// all (limit) and per owner (share). It counts per spool ID, so that
// giving a file's bytes back (forget) is idempotent whoever does it: the
// Process that wrote the file, or the retention that later deletes it by
// ID. pressure (buffered, one slot) is signalled when a reservation
// takes an owner or the total above 90% of its bound, could not be
// granted whole, or granted a head past a bound, so that whoever keeps
// finished output retires some of it (Manager.SpoolPressure).
type spoolBudget struct {
	limit, share int64
	pressure     chan struct{}

	mu     sync.Mutex
	used   int64
	by     map[string]spoolUse // by spool ID
	owners map[string]int64    // bytes by owner
}

// spoolUse is what one spool file holds, and whose share it counts in.
type spoolUse struct {
	owner string
	n     int64
}

func newSpoolBudget(limit, share int64) *spoolBudget {
	return &spoolBudget{limit: limit, share: share, pressure: make(chan struct{}, 1),
		by: make(map[string]spoolUse), owners: make(map[string]int64)}
}

// reserve grants up to n bytes to spool id of owner, whose file holds off
// bytes already: the part of them within the file's first headKeepSize
// bytes whatever the bounds say, the rest as far as the owner's share
// and the total allow. When it grants less than n, cut says which bound
// stopped it (TruncatedGrantShare or TruncatedSpoolFull).
func (b *spoolBudget) reserve(id, owner string, off, n int64) (granted int64, cut string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ownerBefore, usedBefore := b.owners[owner], b.used
	head := max(0, min(n, headKeepSize-off))
	b.addLocked(id, owner, head)
	shareRoom, totalRoom := b.share-b.owners[owner], b.limit-b.used
	rest := max(0, min(n-head, shareRoom, totalRoom))
	b.addLocked(id, owner, rest)
	granted = head + rest
	switch {
	case granted == n:
	case shareRoom <= totalRoom:
		cut = TruncatedGrantShare
	default:
		cut = TruncatedSpoolFull
	}
	// Events, not states: an owner whose running commands alone keep it
	// near its share must not make every write ask for a sweep.
	crossed := func(before, after, bound int64) bool { return before <= bound/10*9 && after > bound/10*9 }
	if cut != "" || (head > 0 && (shareRoom < 0 || totalRoom < 0)) ||
		crossed(ownerBefore, b.owners[owner], b.share) || crossed(usedBefore, b.used, b.limit) {
		select {
		case b.pressure <- struct{}{}:
		default: // already signalled
		}
	}
	return granted, cut
}

func (b *spoolBudget) addLocked(id, owner string, n int64) {
	if n <= 0 {
		return
	}
	u := b.by[id]
	u.owner, u.n = owner, u.n+n
	b.by[id] = u
	b.owners[owner] += n
	b.used += n
}

// release gives back n of the bytes reserved to id (a short write).
func (b *spoolBudget) release(id string, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	u, ok := b.by[id]
	if !ok {
		return
	}
	n = min(n, u.n)
	b.setLocked(id, u.owner, u.n-n)
}

// setLocked makes spool id of owner hold n bytes.
func (b *spoolBudget) setLocked(id, owner string, n int64) {
	if u, ok := b.by[id]; ok {
		b.used -= u.n
		if b.owners[u.owner] -= u.n; b.owners[u.owner] <= 0 {
			delete(b.owners, u.owner)
		}
		delete(b.by, id)
	}
	if n > 0 {
		b.addLocked(id, owner, n)
	}
}

// adopt counts a file a previous run left (at start).
func (b *spoolBudget) adopt(id, owner string, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.setLocked(id, owner, n)
}

// forget gives back everything reserved to id; a second call is a no-op.
func (b *spoolBudget) forget(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.setLocked(id, "", 0)
}

func (b *spoolBudget) usedBytes() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// ownerBytes returns a copy of the bytes held per owner.
func (b *spoolBudget) ownerBytes() map[string]int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.owners)
}
