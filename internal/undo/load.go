package undo

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"path"
	"slices"
	"sort"

	"github.com/devspace-dev/devspace/internal/project"
)

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
