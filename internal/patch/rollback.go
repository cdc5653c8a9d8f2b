package patch

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"path"
	"syscall"
	"unicode/utf8"
)

// rollback undoes the committed steps, removes temps and the directories
// it created (deepest first), and returns cause, joined after
// ErrRollbackIncomplete (whose code is then the answer's) when something
// could not be restored. It returns
// errCrashed alone when Hooks.Crash stops it.
//
// The originals are only in memory, so rollback works in two passes that
// keep every crash recoverable from what is on disk. First it writes each
// original a committed step replaced or removed to that step's aside
// (named in the intent record), touching no target: a crash here leaves
// every committed target new and every pending one with its temp, which
// Recover finishes. Then it renames the asides into place and removes the
// files the transaction created, newest first: a crash here leaves every
// target old or with its original in its aside, which Recover undoes.
// With an intent record, an aside that cannot be written stops the
// rollback before any target is touched and leaves the record (and the
// temps) for Recover, which then finishes the patch; without one,
// rollback restores what it can.
func (t *tx) rollback(cause error) error {
	var errs []error
	staged := make([]bool, len(t.done))
	for i := len(t.done) - 1; i >= 0; i-- {
		s := t.done[i]
		if s.kind == stepCreated {
			continue
		}
		if err := t.createTemp(s.aside, s.path, s.expect.content, s.expect.mode); err != nil {
			errs = append(errs, err)
			if t.intent != nil {
				return errors.Join(append([]error{ErrRollbackIncomplete, cause}, errs...)...)
			}
			continue
		}
		staged[i] = true
		if t.crashed() {
			return errCrashed
		}
	}
	for i := len(t.done) - 1; i >= 0; i-- {
		s := t.done[i]
		var err error
		switch {
		case s.kind == stepCreated:
			err = t.root.Remove(s.path)
		case !staged[i]:
			continue // its failure is in errs already
		default:
			if err = t.root.Rename(s.aside, s.path); err == nil {
				t.consumed(s.aside)
			}
		}
		if err != nil {
			errs = append(errs, fileErr(s.path, err))
		}
		if t.crashed() {
			return errCrashed
		}
	}
	for _, tmp := range t.temps {
		if err := t.root.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fileErr(tmp, err))
		}
	}
	for i := len(t.created) - 1; i >= 0; i-- {
		// A directory someone else has put a file into since stays.
		err := t.root.Remove(t.created[i])
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EEXIST) {
			errs = append(errs, fileErr(t.created[i], err))
		}
	}
	if t.crashed() {
		return errCrashed
	}
	if errs == nil {
		return cause
	}
	return errors.Join(append([]error{ErrRollbackIncomplete, cause}, errs...)...)
}

// asideName returns a fresh hidden name next to ph.
func asideName(ph, kind string) string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	base := path.Base(ph)
	if len(base) > 96 {
		base = base[:96]
		for !utf8.ValidString(base) {
			base = base[:len(base)-1]
		}
	}
	name := "." + base + ".devspace-" + hex.EncodeToString(r[:]) + "." + kind
	if dir := path.Dir(ph); dir != "." {
		return dir + "/" + name
	}
	return name
}
