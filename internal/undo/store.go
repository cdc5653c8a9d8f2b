package undo

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
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
//	<Dir>/<sha256(executionID)[:32]>/blobs/<sha256 of content>
//
// Contents are deduplicated within an execution. Every file is written
// to a temp name, fsynced and renamed. Each execution keeps at most
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
	id      string
	dir     string
	snaps   []*entry // Seq ascending
	blobs   map[string]*blob
	bytes   int64
	lastSeq int64
}

type entry struct {
	m    *manifest
	size int64 // manifest bytes
}

type blob struct {
	size int64
	refs int
}

const manifestVersion = 1

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
// its manifests. Leftover temp files and contents no manifest references
// are removed; a manifest whose contents are missing becomes a stub
// (ReasonIncomplete); the bounds are applied.
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
		ex = &execIndex{id: executionID, dir: execDir(executionID), blobs: map[string]*blob{}}
	}
	for _, e := range ex.snaps {
		if e.m.OpID == opID {
			return fmt.Errorf("undo: operation already recorded: %w", fs.ErrExist)
		}
	}
	m.Seq = ex.lastSeq + 1
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	need := int64(len(raw))
	for _, c := range contents {
		need += int64(len(c))
	}
	if need > s.opts.PerExecutionBytes || need > s.opts.TotalBytes {
		m.NotUndoable, m.Files, m.CreatedDirs = ReasonTooLarge, nil, nil
		clear(contents)
		if raw, err = json.Marshal(m); err != nil {
			return err
		}
	}

	if err := s.root.MkdirAll(path.Join(ex.dir, "blobs"), 0o700); err != nil {
		return fmt.Errorf("undo: create execution directory: %w", err)
	}
	var written []string
	fail := func(err error) error {
		for _, name := range written {
			_ = s.root.Remove(name)
		}
		return err
	}
	hashes := make([]string, 0, len(contents))
	for h := range contents {
		hashes = append(hashes, h)
	}
	sort.Strings(hashes)
	for _, h := range hashes {
		if ex.blobs[h] != nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		name := blobName(ex.dir, h)
		if err := s.writeFile(name, contents[h], false); err != nil {
			return fail(fmt.Errorf("undo: write content: %w", err))
		}
		written = append(written, name)
	}
	if err := s.writeAtomic(manifestName(ex.dir, m.Seq), raw); err != nil {
		return fail(fmt.Errorf("undo: write manifest: %w", err))
	}

	s.execs[executionID] = ex
	ex.lastSeq = m.Seq
	e := &entry{m: m, size: int64(len(raw))}
	ex.snaps = append(ex.snaps, e)
	ex.bytes += e.size
	s.total += e.size
	for _, h := range hashes {
		b := ex.blobs[h]
		if b == nil {
			b = &blob{size: int64(len(contents[h]))}
			ex.blobs[h] = b
			ex.bytes += b.size
			s.total += b.size
		}
		b.refs++
	}
	if err := s.enforce(e); err != nil {
		return fmt.Errorf("undo: snapshot recorded, dropping old ones failed: %w", err)
	}
	return nil
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

// drop removes e's manifest, then the contents nothing else references.
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
	for _, h := range e.m.hashes() {
		b := ex.blobs[h]
		if b == nil {
			continue
		}
		if b.refs--; b.refs > 0 {
			continue
		}
		delete(ex.blobs, h)
		ex.bytes -= b.size
		s.total -= b.size
		_ = s.root.Remove(blobName(ex.dir, h)) // an orphan is removed on the next open
	}
	if len(ex.snaps) == 0 {
		_ = s.root.Remove(path.Join(ex.dir, "blobs"))
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

// Get returns the execution's snapshot for opID with its contents.
// Errors: ErrNotFound; a read error or a corrupt content.
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
// its contents. Errors: ErrNotFound when it has none.
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
// never skipped. Errors: ErrNotFound when there is none.
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
func (s *Store) snapshot(ex *execIndex, e *entry) (*Snapshot, error) {
	m := e.m
	snap := &Snapshot{OpID: m.OpID, Seq: m.Seq, Undone: m.Undone, CreatedAt: m.CreatedAt,
		NotUndoable: m.NotUndoable, CreatedDirs: append([]string(nil), m.CreatedDirs...)}
	cache := map[string][]byte{}
	load := func(st *manifestState) (*State, error) {
		if st == nil {
			return nil, nil
		}
		h, _ := hashHex(st.Hash)
		c, ok := cache[h]
		if !ok {
			var err error
			if c, err = s.root.ReadFile(blobName(ex.dir, h)); err != nil {
				return nil, fmt.Errorf("undo: read content of %s: %w", m.OpID, project.Scrub(err))
			}
			if patch.HashContent(c) != st.Hash {
				return nil, fmt.Errorf("undo: content of %s is corrupt", m.OpID)
			}
			cache[h] = c
		}
		return &State{Hash: st.Hash, Mode: st.Mode, Content: c}, nil
	}
	for _, f := range m.Files {
		fsnap := FileSnap{Path: f.Path, MovedFrom: f.MovedFrom}
		var err error
		if fsnap.Before, err = load(f.Before); err != nil {
			return nil, err
		}
		if fsnap.After, err = load(f.After); err != nil {
			return nil, err
		}
		snap.Files = append(snap.Files, fsnap)
	}
	return snap, nil
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

func (s *Store) loadExec(dir string) error {
	ents, err := fs.ReadDir(s.root.FS(), dir)
	if err != nil {
		return fmt.Errorf("undo: read snapshot directory: %w", err)
	}
	var ex *execIndex
	sizes := map[string]int64{}
	if blobs, err := fs.ReadDir(s.root.FS(), path.Join(dir, "blobs")); err == nil {
		for _, b := range blobs {
			name := path.Join(dir, "blobs", b.Name())
			fi, err := b.Info()
			if !b.Type().IsRegular() || err != nil || !isHex64(b.Name()) {
				_ = s.root.Remove(name) // a temp left by a crash
				continue
			}
			sizes[b.Name()] = fi.Size()
		}
	}
	for _, d := range ents {
		name := path.Join(dir, d.Name())
		seq, ok := manifestSeq(d.Name())
		if !ok {
			if d.Name() != "blobs" {
				_ = s.root.Remove(name) // a temp left by a crash
			}
			continue
		}
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
			ex = &execIndex{id: m.ExecutionID, dir: dir, blobs: map[string]*blob{}}
		}
		for _, h := range m.hashes() {
			if _, ok := sizes[h]; !ok {
				// Contents lost: keep the snapshot as a stub so the order
				// of undo stays right.
				m.NotUndoable, m.Files, m.CreatedDirs = ReasonIncomplete, nil, nil
				if raw, err = json.Marshal(m); err == nil {
					err = s.writeAtomic(name, raw)
				}
				if err != nil {
					return fmt.Errorf("undo: rewrite manifest: %w", err)
				}
				break
			}
		}
		e := &entry{m: m, size: int64(len(raw))}
		ex.snaps = append(ex.snaps, e)
		ex.bytes += e.size
		ex.lastSeq = max(ex.lastSeq, m.Seq)
		s.undoOrder = max(s.undoOrder, m.UndoOrder)
		for _, h := range m.hashes() {
			b := ex.blobs[h]
			if b == nil {
				b = &blob{size: sizes[h]}
				ex.blobs[h] = b
				ex.bytes += b.size
			}
			b.refs++
		}
	}
	for h := range sizes {
		if ex == nil || ex.blobs[h] == nil {
			_ = s.root.Remove(blobName(dir, h))
		}
	}
	if ex == nil {
		_ = s.root.Remove(path.Join(dir, "blobs"))
		_ = s.root.Remove(dir)
		return nil
	}
	sort.Slice(ex.snaps, func(i, j int) bool { return ex.snaps[i].m.Seq < ex.snaps[j].m.Seq })
	s.execs[ex.id] = ex
	s.total += ex.bytes
	return nil
}

// valid checks a manifest read from dir/manifest-<seq>.json.
func (m *manifest) valid(dir string, seq int64) bool {
	if m.Version != manifestVersion || m.Seq != seq || m.OpID == "" || execDir(m.ExecutionID) != dir {
		return false
	}
	if m.NotUndoable != "" && len(m.Files) > 0 {
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
			if _, ok := hashHex(st.Hash); !ok {
				return false
			}
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
func (s *Store) writeAtomic(name string, data []byte) error { return s.writeFile(name, data, true) }

// writeFile writes data to name through a temp file renamed
// into place, then fsyncs the directory.
// With durable false the data is not fsynced: blobs are written that way,
// because the manifest written after them is the commit point and a
// manifest whose blobs did not survive a crash becomes a stub at the next
// start. Syncing every blob and its directory cost ~800 fsyncs for a
// 200-file patch (docs/performance.md).
func (s *Store) writeFile(name string, data []byte, durable bool) error {
	var r [6]byte
	_, _ = rand.Read(r[:])
	tmp := name + ".tmp-" + hex.EncodeToString(r[:])
	f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return project.Scrub(err)
	}
	_, err = f.Write(data)
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

func blobName(dir, hexHash string) string { return dir + "/blobs/" + hexHash }

// hashHex returns the hex part of a "sha256:…" content hash.
func hashHex(h string) (string, bool) {
	x, ok := strings.CutPrefix(h, "sha256:")
	return x, ok && isHex64(x)
}

func isHex64(s string) bool { return len(s) == 64 && isLowerHex(s) }

func isLowerHex(s string) bool { return strings.Trim(s, "0123456789abcdef") == "" }
