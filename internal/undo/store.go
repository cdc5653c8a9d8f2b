package undo

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
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
	s := &Store{opts: opts, root: root, execs: map[string]*execIndex{}}
	if err := s.load(); err != nil {
		root.Close()
		return nil, err
	}
	return s, nil
}

// Close releases the store's directory handle.
func (s *Store) Close() error { return s.root.Close() }

// Record stores the snapshot of a successful patch.Apply (res, with
// res.CreatedDirs) under executionID and opID. A patch that touched a
// sensitive file — by its path or by its real path under resolve — is
// recorded as a stub with no contents (ReasonSensitive), as is one whose
// contents alone exceed a bound (ReasonTooLarge), so that undo of the
// latest patch refuses instead of undoing an older one. Afterwards the
// oldest snapshots are dropped until the bounds hold again.
//
// Errors: a nil resolve or result, an opID already recorded for the
// execution, filesystem failures (nothing recorded), ctx.Err(). An error
// while dropping old snapshots is returned although the new one was
// recorded.
func (s *Store) Record(ctx context.Context, executionID, opID string, res *patch.Result, resolve Resolver) error {
	if executionID == "" || opID == "" {
		return errors.New("undo: empty execution or operation ID")
	}
	if res == nil || resolve == nil {
		return errors.New("undo: nil result or resolver")
	}
	m := &manifest{Version: manifestVersion, ExecutionID: executionID, OpID: opID, CreatedAt: s.opts.Now().UTC()}
	contents := map[string][]byte{}
	m.Files, m.NotUndoable = snapFiles(res, resolve, contents)
	if m.NotUndoable == "" {
		m.CreatedDirs = append([]string(nil), res.CreatedDirs...)
	} else {
		clear(contents)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	ex := s.execs[executionID]
	if ex == nil {
		ex = newExecIndex(executionID, execDir(executionID))
	}
	for _, e := range ex.snaps {
		if e.m.OpID == opID {
			return fmt.Errorf("undo: operation already recorded: %w", fs.ErrExist)
		}
	}
	m.Seq = ex.lastSeq + 1
	hashes := make([]string, 0, len(contents))
	for h := range contents {
		hashes = append(hashes, h)
	}
	sort.Strings(hashes)
	// The snapshot must fit the bounds on its own, together with the old
	// packs it references (they stay while it does). Failing that it is
	// stored without deduplication, and failing that as a stub.
	limit := min(s.opts.PerExecutionBytes, s.opts.TotalBytes)
	newHashes, packSize, raw, need, err := layout(ex, m, contents, hashes, true)
	if err == nil && need > limit {
		newHashes, packSize, raw, need, err = layout(ex, m, contents, hashes, false)
	}
	if err == nil && need > limit {
		m.NotUndoable, m.Files, m.CreatedDirs = ReasonTooLarge, nil, nil
		newHashes, packSize, raw, _, err = layout(ex, m, nil, nil, false)
	}
	if err != nil {
		return err
	}

	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.root.MkdirAll(ex.dir, 0o700); err != nil {
		return fmt.Errorf("undo: create execution directory: %w", err)
	}
	pname := packName(ex.dir, m.Seq)
	if len(newHashes) > 0 {
		chunks := make([][]byte, len(newHashes))
		for i, h := range newHashes {
			chunks[i] = contents[h]
		}
		if err := s.writeFile(pname, false, chunks...); err != nil {
			return fmt.Errorf("undo: write contents: %w", err)
		}
	}
	if err := s.writeAtomic(manifestName(ex.dir, m.Seq), raw); err != nil {
		if len(newHashes) > 0 {
			_ = s.root.Remove(pname)
		}
		return fmt.Errorf("undo: write manifest: %w", err)
	}

	s.execs[executionID] = ex
	ex.lastSeq = m.Seq
	e := &entry{m: m, size: int64(len(raw))}
	ex.snaps = append(ex.snaps, e)
	ex.bytes += e.size
	s.total += e.size
	if len(newHashes) > 0 {
		ex.packs[m.Seq] = &pack{size: packSize, hashes: newHashes}
		ex.bytes += packSize
		s.total += packSize
		for _, h := range newHashes {
			ex.blobs[h] = m.Blobs[h]
		}
	}
	for _, p := range m.packs() {
		ex.packs[p].refs++
	}
	if err := s.enforce(e); err != nil {
		return fmt.Errorf("undo: snapshot recorded, dropping old ones failed: %w", err)
	}
	return nil
}

// layout fills m.Blobs for contents (hashes: its keys, sorted): with
// dedup, a content ex already stores is referenced where it is; the
// others go into a new pack of packSize bytes, in the order of
// newHashes. need is what the snapshot would keep on disk if it were
// the only one: its manifest raw, its pack and the old packs it
// references.
func layout(ex *execIndex, m *manifest, contents map[string][]byte, hashes []string, dedup bool) (newHashes []string, packSize int64, raw []byte, need int64, err error) {
	m.Blobs = nil
	if len(hashes) > 0 {
		m.Blobs = make(map[string]blobLoc, len(hashes))
	}
	for _, h := range hashes {
		if loc, ok := ex.blobs[h]; ok && dedup {
			m.Blobs[h] = loc
			continue
		}
		n := int64(len(contents[h]))
		m.Blobs[h] = blobLoc{Pack: m.Seq, Offset: packSize, Length: n}
		newHashes = append(newHashes, h)
		packSize += n
	}
	if raw, err = json.Marshal(m); err != nil {
		return nil, 0, nil, 0, err
	}
	need = int64(len(raw)) + packSize
	for _, p := range m.packs() {
		if p != m.Seq {
			need += ex.packs[p].size
		}
	}
	return newHashes, packSize, raw, need, nil
}

// snapFiles turns a patch result into FileSnaps, filling contents (by
// hash hex). It returns a non-empty reason when the patch cannot be
// snapshotted.
func snapFiles(res *patch.Result, resolve Resolver, contents map[string][]byte) ([]manifestFile, string) {
	var files []manifestFile
	reason := ""
	state := func(hash string, mode fs.FileMode, content []byte) *manifestState {
		if hash == "" {
			return nil
		}
		h, ok := hashHex(hash)
		if !ok || patch.HashContent(content) != hash {
			reason = ReasonIncomplete
			return nil
		}
		contents[h] = content
		return &manifestState{Hash: hash, Mode: mode.Perm()}
	}
	for _, f := range res.Files {
		if f.Sensitive {
			return nil, ReasonSensitive // no content of a secret is kept
		}
	}
	for _, f := range res.Files {
		switch f.Action {
		case patch.ActionMove:
			files = append(files,
				manifestFile{Path: f.Path, MovedFrom: f.MovedFrom, Before: state(f.Replaced, f.ReplacedMode, f.ReplacedContent), After: state(f.After, f.AfterMode, f.AfterContent)},
				manifestFile{Path: f.MovedFrom, Before: state(f.Before, f.BeforeMode, f.BeforeContent)})
		case patch.ActionAdd, patch.ActionUpdate, patch.ActionDelete:
			files = append(files, manifestFile{Path: f.Path, Before: state(f.Before, f.BeforeMode, f.BeforeContent), After: state(f.After, f.AfterMode, f.AfterContent)})
		default:
			return nil, ReasonIncomplete
		}
	}
	seen := map[string]bool{}
	for _, f := range files {
		if sensitive(f.Path, resolve) {
			return nil, ReasonSensitive
		}
		if seen[f.Path] {
			reason = ReasonIncomplete
		}
		seen[f.Path] = true
	}
	if reason != "" {
		return nil, reason
	}
	return files, ""
}

// sensitive reports whether ph or its real path is sensitive; a path
// that cannot be resolved counts as sensitive.
func sensitive(ph string, resolve Resolver) bool {
	if project.IsSensitive(ph) {
		return true
	}
	real, err := resolve(ph)
	if errors.Is(err, fs.ErrNotExist) {
		var dir string
		if dir, err = resolve(path.Dir(ph)); err == nil {
			real = path.Join(dir, path.Base(ph))
		}
	}
	return err != nil || project.IsSensitive(real)
}

// enforce drops the oldest snapshots until the bounds hold, never keep.
func (s *Store) enforce(keep *entry) error {
	if keep != nil {
		ex := s.execs[keep.m.ExecutionID]
		for len(ex.snaps) > 1 && (len(ex.snaps) > s.opts.MaxPerExecution || ex.bytes > s.opts.PerExecutionBytes) {
			if err := s.drop(ex, ex.snaps[0]); err != nil {
				return err
			}
		}
	}
	for s.total > s.opts.TotalBytes {
		var oldEx *execIndex
		for _, ex := range s.execs {
			if len(ex.snaps) == 0 || ex.snaps[0] == keep {
				continue
			}
			if oldEx == nil || older(ex.snaps[0], oldEx.snaps[0]) {
				oldEx = ex
			}
		}
		if oldEx == nil {
			return nil
		}
		if err := s.drop(oldEx, oldEx.snaps[0]); err != nil {
			return err
		}
	}
	return nil
}

func older(a, b *entry) bool {
	if !a.m.CreatedAt.Equal(b.m.CreatedAt) {
		return a.m.CreatedAt.Before(b.m.CreatedAt)
	}
	if a.m.ExecutionID != b.m.ExecutionID {
		return a.m.ExecutionID < b.m.ExecutionID
	}
	return a.m.Seq < b.m.Seq
}

func newExecIndex(id, dir string) *execIndex {
	return &execIndex{id: id, dir: dir, packs: map[int64]*pack{}, blobs: map[string]blobLoc{}}
}

// drop removes e's manifest, then the packs nothing else references.
func (s *Store) drop(ex *execIndex, e *entry) error {
	if err := s.root.Remove(manifestName(ex.dir, e.m.Seq)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for i, x := range ex.snaps {
		if x == e {
			ex.snaps = append(ex.snaps[:i], ex.snaps[i+1:]...)
			break
		}
	}
	ex.bytes -= e.size
	s.total -= e.size
	for _, p := range e.m.packs() {
		pk := ex.packs[p]
		if pk == nil {
			continue
		}
		if pk.refs--; pk.refs > 0 {
			continue
		}
		delete(ex.packs, p)
		ex.bytes -= pk.size
		s.total -= pk.size
		for _, h := range pk.hashes {
			if ex.blobs[h].Pack == p {
				delete(ex.blobs, h)
			}
		}
		_ = s.root.Remove(packName(ex.dir, p)) // an orphan is removed on the next open
	}
	if len(ex.snaps) == 0 {
		_ = s.root.Remove(ex.dir)
	}
	return nil
}

// hashes returns the distinct content hashes (hex) m references.
func (m *manifest) hashes() []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range m.Files {
		for _, st := range []*manifestState{f.Before, f.After} {
			if st == nil {
				continue
			}
			if h, ok := hashHex(st.Hash); ok && !seen[h] {
				seen[h] = true
				out = append(out, h)
			}
		}
	}
	return out
}

// packs returns the distinct packs m references, ascending.
func (m *manifest) packs() []int64 {
	var out []int64
	for _, loc := range m.Blobs {
		if !slices.Contains(out, loc.Pack) {
			out = append(out, loc.Pack)
		}
	}
	slices.Sort(out)
	return out
}

// Get returns the execution's snapshot for opID with its contents. A
// snapshot whose contents are missing or corrupt on disk comes back as a
// stub (ReasonIncomplete). Errors: ErrNotFound; a read error.
func (s *Store) Get(executionID, opID string) (*Snapshot, error) {
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if ex := s.execs[executionID]; ex != nil {
		execution = ex.bytes
	}
	return s.total, execution
}

// load reads every manifest under the root.
func (s *Store) load() error {
	dirs, err := fs.ReadDir(s.root.FS(), ".")
	if err != nil {
		return fmt.Errorf("undo: read snapshot directory: %w", err)
	}
	for _, d := range dirs {
		if !d.IsDir() || !isExecDir(d.Name()) {
			continue
		}
		if err := s.loadExec(d.Name()); err != nil {
			return err
		}
	}
	if err := s.enforce(nil); err != nil {
		return fmt.Errorf("undo: apply bounds: %w", err)
	}
	return nil
}

// loadExec indexes the execution directory dir. Anything but manifests
// and packs is removed: temps left by a crash and the blobs/ directory
// of the first format. Manifests that do not parse or are of another
// version are removed; packs no manifest references are removed.
func (s *Store) loadExec(dir string) error {
	ents, err := fs.ReadDir(s.root.FS(), dir)
	if err != nil {
		return fmt.Errorf("undo: read snapshot directory: %w", err)
	}
	packSizes := map[int64]int64{}
	var manifests []string
	for _, d := range ents {
		name := path.Join(dir, d.Name())
		if d.Type().IsRegular() {
			if seq, ok := packSeq(d.Name()); ok {
				if fi, err := d.Info(); err == nil {
					packSizes[seq] = fi.Size()
					continue
				}
			}
			if _, ok := manifestSeq(d.Name()); ok {
				manifests = append(manifests, d.Name())
				continue
			}
		}
		_ = s.root.RemoveAll(name)
	}
	var ex *execIndex
	inPack := map[int64]map[string]bool{} // the contents each pack holds
	for _, base := range manifests {
		name := path.Join(dir, base)
		seq, _ := manifestSeq(base)
		raw, err := s.root.ReadFile(name)
		if err != nil {
			return fmt.Errorf("undo: read manifest: %w", project.Scrub(err))
		}
		m := &manifest{}
		if json.Unmarshal(raw, m) != nil || !m.valid(dir, seq) {
			_ = s.root.Remove(name)
			continue
		}
		if ex == nil {
			ex = newExecIndex(m.ExecutionID, dir)
		}
		if !m.stored(packSizes) {
			// Contents lost: keep the snapshot as a stub so the order
			// of undo stays right.
			m.NotUndoable, m.Files, m.CreatedDirs, m.Blobs = ReasonIncomplete, nil, nil, nil
			if raw, err = json.Marshal(m); err == nil {
				err = s.writeAtomic(name, raw)
			}
			if err != nil {
				return fmt.Errorf("undo: rewrite manifest: %w", err)
			}
		}
		e := &entry{m: m, size: int64(len(raw))}
		ex.snaps = append(ex.snaps, e)
		ex.bytes += e.size
		ex.lastSeq = max(ex.lastSeq, m.Seq)
		s.undoOrder = max(s.undoOrder, m.UndoOrder)
		for _, p := range m.packs() {
			pk := ex.packs[p]
			if pk == nil {
				pk = &pack{size: packSizes[p]}
				ex.packs[p] = pk
				ex.bytes += pk.size
			}
			pk.refs++
		}
		for h, loc := range m.Blobs {
			if inPack[loc.Pack] == nil {
				inPack[loc.Pack] = map[string]bool{}
			}
			inPack[loc.Pack][h] = true
			// Deduplicate against the newest copy, so that old packs can go.
			if old, ok := ex.blobs[h]; !ok || old.Pack < loc.Pack {
				ex.blobs[h] = loc
			}
		}
	}
	for p, hashes := range inPack {
		ex.packs[p].hashes = slices.Collect(maps.Keys(hashes))
	}
	for p := range packSizes {
		if ex == nil || ex.packs[p] == nil {
			_ = s.root.Remove(packName(dir, p))
		}
	}
	if ex == nil {
		_ = s.root.Remove(dir)
		return nil
	}
	sort.Slice(ex.snaps, func(i, j int) bool { return ex.snaps[i].m.Seq < ex.snaps[j].m.Seq })
	s.execs[ex.id] = ex
	s.total += ex.bytes
	return nil
}

// stored reports whether every content m locates lies within a pack of
// the size given in packSizes. Whether the bytes are right is checked
// when they are read.
func (m *manifest) stored(packSizes map[int64]int64) bool {
	for _, loc := range m.Blobs {
		size, ok := packSizes[loc.Pack]
		if !ok || loc.Offset+loc.Length > size {
			return false
		}
	}
	return true
}

// valid checks a manifest read from dir/manifest-<seq>.json.
func (m *manifest) valid(dir string, seq int64) bool {
	if m.Version != manifestVersion || m.Seq != seq || m.OpID == "" || execDir(m.ExecutionID) != dir {
		return false
	}
	if m.NotUndoable != "" && (len(m.Files) > 0 || len(m.Blobs) > 0) {
		return false
	}
	for _, f := range m.Files {
		if c, err := project.CleanRel(f.Path); err != nil || c != f.Path || c == "." {
			return false
		}
		for _, st := range []*manifestState{f.Before, f.After} {
			if st == nil {
				continue
			}
			if h, ok := hashHex(st.Hash); !ok {
				return false
			} else if _, ok := m.Blobs[h]; !ok {
				return false
			}
		}
	}
	if len(m.Blobs) != len(m.hashes()) {
		return false
	}
	for _, loc := range m.Blobs {
		if loc.Pack < 1 || loc.Pack > m.Seq || loc.Offset < 0 || loc.Length < 0 || loc.Offset > math.MaxInt64-loc.Length {
			return false
		}
	}
	for _, d := range m.CreatedDirs {
		if c, err := project.CleanRel(d); err != nil || c != d {
			return false
		}
	}
	return true
}

// writeAtomic writes data to name durably (see writeFile).
func (s *Store) writeAtomic(name string, data []byte) error { return s.writeFile(name, true, data) }

// writeFile writes the chunks, one after the other, to name through a
// temp file renamed into place; durably, the file is fsynced before the
// rename and its directory after.
// With durable false nothing is fsynced: packs are written that way,
// because the manifest written after them is the commit point, a
// manifest whose pack did not survive a crash becomes a stub at the next
// start and one whose pack holds wrong bytes becomes a stub when read.
func (s *Store) writeFile(name string, durable bool, chunks ...[]byte) error {
	var r [6]byte
	_, _ = rand.Read(r[:])
	tmp := name + ".tmp-" + hex.EncodeToString(r[:])
	f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return project.Scrub(err)
	}
	for _, c := range chunks {
		if _, err = f.Write(c); err != nil {
			break
		}
	}
	if err == nil && durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.root.Rename(tmp, name)
	}
	if err != nil {
		_ = s.root.Remove(tmp)
		return project.Scrub(err)
	}
	if !durable {
		return nil
	}
	if d, err := s.root.Open(path.Dir(name)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

func execDir(executionID string) string {
	sum := sha256.Sum256([]byte(executionID))
	return hex.EncodeToString(sum[:16])
}

func isExecDir(name string) bool {
	return len(name) == 32 && isLowerHex(name)
}

func manifestName(dir string, seq int64) string {
	return fmt.Sprintf("%s/manifest-%020d.json", dir, seq)
}

func manifestSeq(name string) (int64, bool) {
	num, ok := strings.CutPrefix(name, "manifest-")
	if !ok {
		return 0, false
	}
	if num, ok = strings.CutSuffix(num, ".json"); !ok || len(num) != 20 {
		return 0, false
	}
	seq, err := strconv.ParseInt(num, 10, 64)
	return seq, err == nil && seq > 0
}

func packName(dir string, seq int64) string {
	return fmt.Sprintf("%s/pack-%020d", dir, seq)
}

func packSeq(name string) (int64, bool) {
	num, ok := strings.CutPrefix(name, "pack-")
	if !ok || len(num) != 20 || strings.Trim(num, "0123456789") != "" {
		return 0, false
	}
	seq, err := strconv.ParseInt(num, 10, 64)
	return seq, err == nil && seq > 0
}

// hashHex returns the hex part of a "sha256:…" content hash.
func hashHex(h string) (string, bool) {
	x, ok := strings.CutPrefix(h, "sha256:")
	return x, ok && isHex64(x)
}

func isHex64(s string) bool { return len(s) == 64 && isLowerHex(s) }

func isLowerHex(s string) bool { return strings.Trim(s, "0123456789abcdef") == "" }
