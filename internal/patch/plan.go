package patch

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
)

// write replaces or creates path with content; removal deletes path.
type write struct {
	path    string
	content []byte
	hash    string // of content; "" lets tx compute it
	mode    fs.FileMode
	expect  *fileState
	tmp     string // staging name, chosen before anything is written
	// aside is where a rollback writes the original back before renaming
	// it into place ("" for a create). It is chosen up front so that the
	// intent record lists it; nothing is written there unless the
	// transaction rolls back.
	aside string
}

type removal struct {
	path   string
	expect *fileState
	aside  string // as write.aside
}

type plan struct {
	writes   []*write
	removals []*removal
	// rmdirs are removed, deepest first, once committed if they are then
	// empty (Restore only).
	rmdirs []string
}

// compute builds every new content in memory.
func compute(ctx context.Context, p *Patch, states map[string]*fileState, total int64) (*plan, *Result, error) {
	pl := &plan{}
	res := &Result{Files: make([]FileResult, 0, len(p.Files))}
	work := newBudget(ctx)
	grow := func(n int) error {
		if total += int64(n); total > MaxTotalBytes {
			return fmt.Errorf("%w: the patched files exceed %d bytes in all", ErrTooLarge, MaxTotalBytes)
		}
		return nil
	}
	for _, f := range p.Files {
		st := states[f.Path]
		fr := FileResult{Path: f.Path}
		if st.exists {
			fr.Before, fr.BeforeMode, fr.BeforeContent = st.hash, st.mode, st.content
		}
		switch f.Kind {
		case Add:
			content := []byte(f.Content)
			if err := grow(len(content)); err != nil {
				return nil, nil, err
			}
			mode := fs.FileMode(0o644)
			if st.exists {
				mode = st.mode
			}
			fr.Action, fr.Added = ActionAdd, countLines(content)
			fr.After, fr.AfterMode, fr.AfterContent = HashContent(content), mode, content
			pl.writes = append(pl.writes, &write{path: f.Path, content: content, hash: fr.After, mode: mode, expect: st})
		case Delete:
			if !st.exists {
				return nil, nil, &FileError{Path: f.Path, Err: ErrTargetMissing}
			}
			fr.Action, fr.Removed = ActionDelete, countLines(st.content)
			pl.removals = append(pl.removals, &removal{path: f.Path, expect: st})
		case Update:
			if !st.exists {
				return nil, nil, &FileError{Path: f.Path, Err: ErrTargetMissing}
			}
			if !isText(st.content) {
				return nil, nil, &FileError{Path: f.Path, Err: ErrBinaryTarget}
			}
			edit := fileEdit{content: st.content}
			if len(f.Hunks) > 0 {
				var err error
				if edit, err = applyHunks(st.content, f, work); err != nil {
					return nil, nil, err
				}
				fr.Fuzz = edit.fuzz.String()
			}
			if err := grow(len(edit.content)); err != nil {
				return nil, nil, err
			}
			fr.Action, fr.Added, fr.Removed = ActionUpdate, edit.added, edit.removed
			fr.After, fr.AfterMode, fr.AfterContent = HashContent(edit.content), st.mode, edit.content
			if f.MoveTo == "" {
				if !bytes.Equal(edit.content, st.content) {
					pl.writes = append(pl.writes, &write{path: f.Path, content: edit.content, hash: fr.After, mode: st.mode, expect: st})
				}
				break
			}
			dst := states[f.MoveTo]
			fr.Action, fr.Path, fr.MovedFrom = ActionMove, f.MoveTo, f.Path
			if dst.exists {
				fr.Replaced, fr.ReplacedMode, fr.ReplacedContent = dst.hash, dst.mode, dst.content
			}
			pl.writes = append(pl.writes, &write{path: f.MoveTo, content: edit.content, hash: fr.After, mode: st.mode, expect: dst})
			pl.removals = append(pl.removals, &removal{path: f.Path, expect: st})
		}
		res.Files = append(res.Files, fr)
	}
	for _, w := range pl.writes {
		res.Bytes += int64(len(w.content))
	}
	return pl, res, nil
}

func countLines(b []byte) int {
	n := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}
