package undo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"

	"github.com/devspace-dev/devspace/internal/patch"
	"github.com/devspace-dev/devspace/internal/project"
)

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
	if err := s.Wait(); err != nil {
		return err
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
