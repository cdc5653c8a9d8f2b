package undo

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/devspace-dev/devspace/internal/patch"
	"github.com/devspace-dev/devspace/internal/project"
)

// Default bounds.
const (
	DefaultPerExecutionBytes = 64 << 20
	DefaultTotalBytes        = 1 << 30
	DefaultMaxPerExecution   = 100
)

// Options configure a Store. Zero values mean the defaults.
type Options struct {
	// Dir holds the snapshots (e.g. STATE_DIR/snapshots); required. It is
	// created 0700 if missing; files in it are 0600.
	Dir string
	// PerExecutionBytes bounds the contents and manifests kept for one
	// execution. Default DefaultPerExecutionBytes (64 MiB).
	PerExecutionBytes int64
	// TotalBytes bounds the whole store. Default DefaultTotalBytes
	// (1 GiB).
	TotalBytes int64
	// MaxPerExecution bounds the snapshots kept for one execution.
	// Default DefaultMaxPerExecution (100).
	MaxPerExecution int
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// IndexLater leaves the snapshots on disk unindexed until Index is
	// called or a method needs them: a starting server indexes them once
	// it answers (app.StartBackground), since reading every manifest
	// competes with its start for the CPU.
	IndexLater bool
}

// Resolver returns the Project-relative real path of a clean
// Project-relative path: symlinks resolved inside the root. Record calls
// it for paths that may no longer exist (a deleted file, a move's
// source); when it fails with fs.ErrNotExist, Record resolves the parent
// directory instead and appends the name. Any other failure counts the
// file as sensitive (fail closed).
type Resolver func(path string) (real string, err error)

// Store keeps snapshots on disk, one directory per execution:
//
//	<Dir>/<sha256(executionID)[:32]>/manifest-<seq>.json
//	<Dir>/<sha256(executionID)[:32]>/pack-<seq>
//
// Record writes at most two files: a pack holding the contents of the
// snapshot not stored yet, concatenated in hash order, and its manifest,
// which locates every content the snapshot needs (hash → pack, offset,
// length; see blobLoc) and is the commit point. Creating a file costs
// ~250 µs on a slow disk, so one file per content made a 200-file patch
// cost ~100 ms more (docs/performance.md). Contents are deduplicated
// within an execution: one already in a pack is referenced there, not
// written again. A pack is deleted, and stops counting towards the
// bounds, once no manifest references it. Each execution keeps at most
// MaxPerExecution snapshots and PerExecutionBytes; the store keeps at
// most TotalBytes; the oldest snapshots go first. Reopening a Store on
// the same Dir re-reads the manifests.
//
// A Store is safe for concurrent use; its methods serialize on one lock.
// Close it when done.
type Store struct {
	opts Options
	root *os.Root

	// loaded is closed when the snapshots on disk are indexed (or could
	// not be: loadErr); every method waits for it. index starts that once.
	index   sync.Once
	loaded  chan struct{}
	loadErr error

	mu        sync.Mutex
	execs     map[string]*execIndex // by execution ID
	total     int64
	undoOrder int64 // last UndoOrder handed out
}

type execIndex struct {
	id    string
	dir   string
	snaps []*entry // Seq ascending
	// packs are the pack files on disk, by the Seq of the Record that
	// wrote them; every one is referenced by at least one of snaps.
	packs map[int64]*pack
	// blobs locates each content hash (hex) in packs, for deduplication.
	blobs   map[string]blobLoc
	bytes   int64 // manifests and packs
	lastSeq int64
}

type entry struct {
	m    *manifest
	size int64 // manifest bytes
}

type pack struct {
	size   int64
	refs   int      // manifests referencing a content in the pack
	hashes []string // contents it holds
}

// manifestVersion 2 has packs. Version 1 (one file per content under
// blobs/) is not read: NewStore removes its files, losing the undo
// history of executions recorded before the upgrade, which is acceptable
// for per-execution, disposable snapshots.
const manifestVersion = 2

type manifest struct {
	Version     int            `json:"version"`
	ExecutionID string         `json:"executionId"`
	OpID        string         `json:"opId"`
	Seq         int64          `json:"seq"`
	CreatedAt   time.Time      `json:"createdAt"`
	Undone      bool           `json:"undone"`
	UndoOrder   int64          `json:"undoOrder,omitempty"`
	NotUndoable string         `json:"notUndoable,omitempty"`
	CreatedDirs []string       `json:"createdDirs,omitempty"`
	Files       []manifestFile `json:"files"`
	// Blobs locates every content Files references, by hash (hex), and
	// nothing else.
	Blobs map[string]blobLoc `json:"blobs,omitempty"`
}

// blobLoc is where a content is stored: Length bytes at Offset in the
// pack written by the Record of sequence Pack (this manifest's or an
// earlier one of the same execution). Reads check the bytes against the
// content hash.
type blobLoc struct {
	Pack   int64 `json:"pack"`
	Offset int64 `json:"offset"`
	Length int64 `json:"length"`
}

type manifestFile struct {
	Path      string         `json:"path"`
	MovedFrom string         `json:"movedFrom,omitempty"`
	Before    *manifestState `json:"before"`
	After     *manifestState `json:"after"`
}

type manifestState struct {
	Hash string      `json:"hash"`
	Mode fs.FileMode `json:"mode"`
}

// NewStore opens (creating if needed) the store in opts.Dir and reads
// its manifests. Leftover temp files, packs no manifest references and
// the files of the first on-disk format are removed; a manifest whose
// contents are missing or cut short becomes a stub (ReasonIncomplete);
// the bounds are applied.
func NewStore(opts Options) (*Store, error) {
	if opts.Dir == "" {
		return nil, errors.New("undo: no snapshot directory")
	}
	if opts.PerExecutionBytes <= 0 {
		opts.PerExecutionBytes = DefaultPerExecutionBytes
	}
	if opts.TotalBytes <= 0 {
		opts.TotalBytes = DefaultTotalBytes
	}
	if opts.MaxPerExecution <= 0 {
		opts.MaxPerExecution = DefaultMaxPerExecution
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("undo: create snapshot directory: %w", err)
	}
	root, err := os.OpenRoot(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("undo: open snapshot directory: %w", err)
	}
	s := &Store{opts: opts, root: root, execs: map[string]*execIndex{}, loaded: make(chan struct{})}
	if !opts.IndexLater {
		s.Index()
	}
	return s, nil
}

// errClosed is what the methods of a Store closed before it was indexed
// return.
var errClosed = errors.New("undo: store closed")

// Index starts indexing the snapshots on disk in the background, unless
// it has started. Indexing reads every manifest: after a few hundred large
// patches it takes longer than the rest of a server's start, and only the
// patch tools need it, so it runs in the background and they wait for it.
func (s *Store) Index() {
	s.index.Do(func() {
		go func() {
			defer close(s.loaded)
			s.loadErr = s.load()
		}()
	})
}

// Wait waits until the snapshots on disk are indexed (starting that if
// need be) and returns why they could not be, if so; every method then
// fails with that error.
func (s *Store) Wait() error {
	s.Index()
	<-s.loaded
	return s.loadErr
}

// Indexed reports, without waiting, whether the snapshots on disk are
// indexed (or could not be: Wait says why).
func (s *Store) Indexed() bool {
	select {
	case <-s.loaded:
		return true
	default:
		return false
	}
}

// Close releases the store's directory handle once indexing is over; a
// store never indexed is not indexed now.
func (s *Store) Close() error {
	s.index.Do(func() {
		s.loadErr = errClosed
		close(s.loaded)
	})
	<-s.loaded
	return s.root.Close()
}

// Get returns the execution's snapshot for opID with its contents. A
// snapshot whose contents are missing or corrupt on disk comes back as a
// stub (ReasonIncomplete). Errors: ErrNotFound; a read error.
func (s *Store) Get(executionID, opID string) (*Snapshot, error) {
	if err := s.Wait(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ex := s.execs[executionID]
	if ex != nil {
		for _, e := range ex.snaps {
			if e.m.OpID == opID {
				return s.snapshot(ex, e)
			}
		}
	}
	return nil, ErrNotFound
}

// Latest returns the execution's newest snapshot, undone or not, with
// its contents (a stub when they are missing or corrupt, as Get).
// Errors: ErrNotFound when it has none; a read error.
func (s *Store) Latest(executionID string) (*Snapshot, error) {
	if err := s.Wait(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ex := s.execs[executionID]
	if ex == nil || len(ex.snaps) == 0 {
		return nil, ErrNotFound
	}
	return s.snapshot(ex, ex.snaps[len(ex.snaps)-1])
}

// Next returns the snapshot an undo (or redo) without a named patch
// should act on: for undo the newest snapshot not undone, for redo the
// most recently undone one. Stubs count, so a refused latest patch is
// never skipped. Contents are read as by Get. Errors: ErrNotFound when
// there is none; a read error.
func (s *Store) Next(executionID string, redo bool) (*Snapshot, error) {
	if err := s.Wait(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ex := s.execs[executionID]
	if ex == nil {
		return nil, ErrNotFound
	}
	var best *entry
	for i := len(ex.snaps) - 1; i >= 0; i-- {
		e := ex.snaps[i]
		if !redo && !e.m.Undone {
			best = e
			break
		}
		if redo && e.m.Undone && (best == nil || e.m.UndoOrder > best.m.UndoOrder) {
			best = e
		}
	}
	if best == nil {
		return nil, ErrNotFound
	}
	return s.snapshot(ex, best)
}

// snapshot builds the Snapshot of e, reading and verifying its contents.
// Contents that are missing, cut short or do not match their hash make
// it a stub (ReasonIncomplete): undo never writes bytes it cannot vouch
// for.
func (s *Store) snapshot(ex *execIndex, e *entry) (*Snapshot, error) {
	m := e.m
	snap := &Snapshot{OpID: m.OpID, Seq: m.Seq, Undone: m.Undone, CreatedAt: m.CreatedAt,
		NotUndoable: m.NotUndoable, CreatedDirs: append([]string(nil), m.CreatedDirs...)}
	contents, err := s.readContents(ex.dir, m)
	if errors.Is(err, errCorrupt) {
		snap.NotUndoable, snap.CreatedDirs = ReasonIncomplete, nil
		return snap, nil
	}
	if err != nil {
		return nil, fmt.Errorf("undo: read contents of %s: %w", m.OpID, err)
	}
	state := func(st *manifestState) *State {
		if st == nil {
			return nil
		}
		h, _ := hashHex(st.Hash)
		return &State{Hash: st.Hash, Mode: st.Mode, Content: contents[h]}
	}
	for _, f := range m.Files {
		snap.Files = append(snap.Files, FileSnap{Path: f.Path, MovedFrom: f.MovedFrom, Before: state(f.Before), After: state(f.After)})
	}
	return snap, nil
}

// errCorrupt: a content is missing from its pack or does not match its
// hash.
var errCorrupt = errors.New("content missing or corrupt")

// readContents reads every content m.Blobs locates, opening each pack
// once, and checks each against its hash. Errors: errCorrupt, or a
// failure to open or read a pack for another reason.
func (s *Store) readContents(dir string, m *manifest) (map[string][]byte, error) {
	byPack := map[int64][]string{}
	for h, loc := range m.Blobs {
		byPack[loc.Pack] = append(byPack[loc.Pack], h)
	}
	contents := make(map[string][]byte, len(m.Blobs))
	for p, hashes := range byPack {
		f, err := s.root.Open(packName(dir, p))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errCorrupt
		}
		if err != nil {
			return nil, project.Scrub(err)
		}
		for _, h := range hashes {
			loc := m.Blobs[h]
			c := make([]byte, loc.Length)
			if _, err = f.ReadAt(c, loc.Offset); err != nil {
				break
			}
			if patch.HashContent(c) != "sha256:"+h {
				err = errCorrupt
				break
			}
			contents[h] = c
		}
		f.Close()
		switch {
		case errors.Is(err, io.EOF):
			return nil, errCorrupt
		case err != nil && !errors.Is(err, errCorrupt):
			return nil, project.Scrub(err)
		case err != nil:
			return nil, err
		}
	}
	return contents, nil
}

// MarkUndone records that the execution's snapshot for opID is now
// undone (or redone, with undone false). Errors: ErrNotFound; a write
// failure, leaving the mark unchanged.
func (s *Store) MarkUndone(executionID, opID string, undone bool) error {
	if err := s.Wait(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ex := s.execs[executionID]
	if ex == nil {
		return ErrNotFound
	}
	for _, e := range ex.snaps {
		if e.m.OpID != opID {
			continue
		}
		m := *e.m
		m.Undone, m.UndoOrder = undone, 0
		if undone {
			m.UndoOrder = s.undoOrder + 1
		}
		raw, err := json.Marshal(&m)
		if err != nil {
			return err
		}
		if err := s.writeAtomic(manifestName(ex.dir, m.Seq), raw); err != nil {
			return fmt.Errorf("undo: write manifest: %w", err)
		}
		if undone {
			s.undoOrder++
		}
		delta := int64(len(raw)) - e.size
		e.m, e.size = &m, int64(len(raw))
		ex.bytes += delta
		s.total += delta
		return nil
	}
	return ErrNotFound
}

// DropExecution removes every snapshot of the execution, for example
// when it closes. Dropping an unknown execution is not an error.
func (s *Store) DropExecution(executionID string) error {
	if err := s.Wait(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	dir := execDir(executionID)
	if err := s.root.RemoveAll(dir); err != nil {
		return fmt.Errorf("undo: drop execution: %w", project.Scrub(err))
	}
	if ex := s.execs[executionID]; ex != nil {
		s.total -= ex.bytes
		delete(s.execs, executionID)
	}
	return nil
}

// Bytes returns the bytes the store accounts for, in all and for one
// execution.
func (s *Store) Bytes(executionID string) (total, execution int64) {
	_ = s.Wait() // none indexed: zero
	s.mu.Lock()
	defer s.mu.Unlock()
	if ex := s.execs[executionID]; ex != nil {
		execution = ex.bytes
	}
	return s.total, execution
}
