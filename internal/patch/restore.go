package patch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/devspace-dev/devspace/internal/fault"
	"github.com/devspace-dev/devspace/internal/project"
)

// ErrUndoConflict: a file Restore was asked to bring back is no longer in
// the state the caller expects, in content, mode or type
// (*RestoreConflict lists every such path);
// nothing was written, or the commit was rolled back. This package owns
// it; undo_patch maps it to undo_conflict.
var ErrUndoConflict = fault.New("undo_conflict", "undo conflict")

// FileState is one file's recorded state for Restore.
type FileState struct {
	// Path is Project-relative; it is cleaned with project.CleanRel.
	Path string
	// Expect is the content hash ("sha256:…") of the regular file that
	// must be there now; "" means nothing may be there (no file, link,
	// directory or other entry).
	Expect string
	// ExpectMode, with CheckMode, is the permission bits the file must
	// have now (with Expect set): a mode changed since, or a set-user-ID,
	// set-group-ID or sticky bit added, is a conflict like changed
	// content, so that a restore never resets a mode someone else chose.
	ExpectMode fs.FileMode
	CheckMode  bool
	// Content is the exact content to restore (ignored when Absent).
	Content []byte
	// Mode holds the permission bits to restore, applied exactly (the
	// umask does not narrow them; other bits are ignored).
	Mode fs.FileMode
	// Absent removes the file instead.
	Absent bool
}

// RestoreConflict lists every path whose current state differs from its
// FileState (Expect, and ExpectMode with CheckMode), in input order.
type RestoreConflict struct {
	Files []VersionConflict
	// err is the rollback failure when a conflict found during the
	// commit could not be rolled back completely; nil otherwise.
	err error
}

func (e *RestoreConflict) Error() string {
	parts := make([]string, len(e.Files))
	for i, f := range e.Files {
		parts[i] = fmt.Sprintf("%s (expected %s, found %s)", f.Path, orAbsent(f.Expected), orAbsent(f.Actual))
	}
	msg := "undo conflict: changed since: " + strings.Join(parts, ", ")
	if e.err != nil {
		msg += ": " + e.err.Error()
	}
	return msg
}

// Paths returns the drifted paths.
func (e *RestoreConflict) Paths() []string {
	out := make([]string, len(e.Files))
	for i, f := range e.Files {
		out[i] = f.Path
	}
	return out
}

// Unwrap returns ErrUndoConflict, preceded, when the rollback after a
// conflict found during the commit was incomplete, by that failure (which
// wraps ErrRollbackIncomplete): its code is then the error's.
func (e *RestoreConflict) Unwrap() []error {
	if e.err != nil {
		return []error{e.err, ErrUndoConflict}
	}
	return []error{ErrUndoConflict}
}

// Details name the drifted paths: details.paths.
func (e *RestoreConflict) Details() map[string]any { return map[string]any{"paths": e.Paths()} }

// Restore atomically brings the files in states to their recorded
// content and mode, or removes them (Absent), with Apply's guarantees:
// every Expect (content, mode with CheckMode, and type: anything but a
// regular file where one is expected, or any entry where none is, is a
// conflict) is checked first and all drifted paths are reported
// together; then new contents are staged next to their targets,
// re-checked the same way just before each rename (mode included) and
// committed by rename (a hard
// linked original is never written in place), and any failure rolls
// everything back, including the directories Restore created. Once
// committed, each directory in removeDirs (typically the CreatedDirs of
// the Apply being undone) is removed if it is then empty, deepest first;
// one that cannot be removed stays and does not fail the call, but one
// that is repository metadata refuses the whole call up front.
//
// A file already holding its target content and mode is left alone.
// Result.Files describes the files that changed (Action add, update or
// delete, with before and after states); Result.CreatedDirs and
// Result.RemovedDirs the directories.
//
// Errors: *RestoreConflict (ErrUndoConflict), *FileError wrapping
// project.ErrPathDenied (sensitive targets unless opts.AllowSensitive,
// repository metadata among the targets or removeDirs, a directory on
// the way that is a link leaving the root; a link or special file at a
// target itself is a conflict) or a filesystem error, ErrTooLarge,
// ErrInvalidPatch for malformed input (no files, a duplicate path),
// ctx.Err(), the failure to write the intent record; joined with
// ErrRollbackIncomplete if the rollback failed. With opts.Intents a crash
// is finished or undone by Intents.Recover, as for Apply.
//
// Restore does not coordinate with other writers: the caller holds the
// root's write lock. Like Apply, it may return before the files it
// replaced or removed are freed.
func Restore(ctx context.Context, root *os.Root, states []FileState, removeDirs []string, opts Options) (*Result, error) {
	if root == nil || len(states) == 0 {
		return nil, fmt.Errorf("%w: nothing to restore", ErrInvalidPatch)
	}
	if len(states) > 2*MaxFiles {
		return nil, fmt.Errorf("%w: %d files to restore", ErrTooLarge, len(states))
	}
	want := make([]FileState, len(states))
	seen := make(map[string]bool, len(states))
	sensitive := map[string]bool{}
	resolve := project.NewDirResolver(root)
	var total int64
	for i, s := range states {
		ph, err := project.CleanRel(s.Path)
		if err != nil {
			return nil, &FileError{Path: "restore", Err: err}
		}
		if ph == "." {
			return nil, &FileError{Path: ph, Err: &project.PathError{Reason: project.ReasonSpecial}}
		}
		if seen[ph] {
			return nil, fmt.Errorf("%w: %s is named twice", ErrInvalidPatch, ph)
		}
		seen[ph] = true
		sens, err := checkTarget(resolve, ph, opts.AllowSensitive)
		if err != nil {
			return nil, err
		}
		if sens {
			sensitive[ph] = true
		}
		if s.Absent {
			s.Content = nil
		}
		if int64(len(s.Content)) > MaxFileBytes {
			return nil, &FileError{Path: ph, Err: fmt.Errorf("%w: file of %d bytes", ErrTooLarge, len(s.Content))}
		}
		if total += int64(len(s.Content)); total > MaxTotalBytes {
			return nil, fmt.Errorf("%w: the restored files exceed %d bytes in all", ErrTooLarge, MaxTotalBytes)
		}
		s.Path, s.Mode = ph, s.Mode.Perm()
		want[i] = s
	}
	dirs, err := cleanDirs(removeDirs)
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		// An empty directory inside a Git directory (refs/tags of a new
		// repository) is repository metadata too. Other failures leave
		// the directory to removeEmptyDirs, which skips it.
		if _, err := resolve.Path(d); err != nil {
			if pe, ok := errors.AsType[*project.PathError](err); ok && pe.Reason == project.ReasonRepository {
				return nil, &FileError{Path: d, Err: err}
			}
		}
	}

	// Look at every file and report every drifted one before doing
	// anything else.
	current := make([]*fileState, len(want))
	var conflicts []VersionConflict
	for i, s := range want {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		st, err := readState(root, s.Path, MaxTotalBytes-total)
		if err == nil && st.sensitive {
			if !opts.AllowSensitive {
				return nil, &FileError{Path: s.Path, Err: &project.PathError{Reason: project.ReasonSensitive}}
			}
			sensitive[s.Path] = true
		}
		want := &fileState{exists: s.Expect != "", hash: s.Expect, mode: s.ExpectMode.Perm()}
		if err := drift(s.Path, want, st, err, s.CheckMode); err != nil {
			if vc, ok := errors.AsType[*VersionConflict](err); ok {
				conflicts = append(conflicts, *vc)
				continue
			}
			return nil, err
		}
		total += int64(len(st.content))
		current[i] = st
	}
	if conflicts != nil {
		return nil, &RestoreConflict{Files: conflicts}
	}

	pl := &plan{rmdirs: dirs}
	res := &Result{Files: []FileResult{}}
	defer markSensitive(res, sensitive)
	for i, s := range want {
		st := current[i]
		fr := FileResult{Path: s.Path}
		if st.exists {
			fr.Before, fr.BeforeMode, fr.BeforeContent = st.hash, st.mode, st.content
		}
		switch {
		case s.Absent && !st.exists:
			continue
		case s.Absent:
			fr.Action, fr.Removed = ActionDelete, countLines(st.content)
			pl.removals = append(pl.removals, &removal{path: s.Path, expect: st})
		case st.exists && st.mode == s.Mode && bytes.Equal(st.content, s.Content):
			continue
		default:
			content := s.Content
			if content == nil {
				content = []byte{}
			}
			fr.Action = ActionUpdate
			if !st.exists {
				fr.Action = ActionAdd
			}
			fr.Added, fr.Removed = changedLines(st.content, content)
			fr.After, fr.AfterMode, fr.AfterContent = HashContent(content), s.Mode, content
			pl.writes = append(pl.writes, &write{path: s.Path, content: content, hash: fr.After, mode: s.Mode, expect: st})
			res.Bytes += int64(len(content))
		}
		res.Files = append(res.Files, fr)
	}
	t := &tx{root: root, opts: opts, dirs: map[string]bool{}}
	if err := t.run(ctx, pl); err != nil {
		var vc *VersionConflict
		if errors.As(err, &vc) {
			rc := &RestoreConflict{Files: []VersionConflict{*vc}}
			if errors.Is(err, ErrRollbackIncomplete) {
				rc.err = err
			}
			return nil, rc
		}
		return nil, err
	}
	res.CreatedDirs, res.RemovedDirs = t.created, t.removed
	return res, nil
}

// cleanDirs validates removeDirs and orders them deepest first.
func cleanDirs(in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	seen := map[string]bool{}
	for _, d := range in {
		c, err := project.CleanRel(d)
		if err != nil {
			return nil, &FileError{Path: "restore", Err: err}
		}
		if c == "." || seen[c] {
			continue
		}
		seen[c] = true
		out = append(out, c)
	}
	sort.SliceStable(out, func(i, j int) bool {
		di, dj := strings.Count(out[i], "/"), strings.Count(out[j], "/")
		if di != dj {
			return di > dj
		}
		return out[i] > out[j]
	})
	return out, nil
}

// removeEmptyDirs removes each directory in dirs (deepest first) that is
// empty, reached only through real directories. Failures leave the
// directory in place.
func (t *tx) removeEmptyDirs(dirs []string) {
	for _, d := range dirs {
		if !realDir(t.root, d) {
			continue
		}
		if t.root.Remove(d) == nil {
			t.removed = append(t.removed, d)
		}
	}
	if t.opts.Sync && len(t.removed) > 0 {
		synced := map[string]bool{}
		for _, d := range t.removed {
			parent := path.Dir(d)
			if synced[parent] {
				continue
			}
			synced[parent] = true
			if f, err := t.root.Open(parent); err == nil {
				_ = f.Sync()
				f.Close()
			}
		}
	}
}

// realDir reports whether d and each of its parents is a directory, not
// a symlink to one.
func realDir(root *os.Root, d string) bool {
	for i := 0; i <= len(d); i++ {
		if i < len(d) && d[i] != '/' {
			continue
		}
		fi, err := root.Lstat(d[:i])
		if err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// maxCountLines bounds the lines diffed to count an update's changed
// lines; past it every line counts as removed and added.
const maxCountLines = 20000

// changedLines counts the lines added and removed going from before to
// after.
func changedLines(before, after []byte) (added, removed int) {
	if len(before) == 0 || len(after) == 0 || !isText(before) || !isText(after) {
		return countLines(after), countLines(before)
	}
	a, b := splitKeep(before), splitKeep(after)
	if len(a)+len(b) > maxCountLines {
		return len(b), len(a)
	}
	for _, op := range diffLines(a, b) {
		switch op.kind {
		case '+':
			added++
		case '-':
			removed++
		}
	}
	return added, removed
}

// specialBits names the set-user-ID, set-group-ID and sticky bits of m.
func specialBits(m fs.FileMode) string {
	var out string
	for _, b := range []struct {
		bit  fs.FileMode
		name string
	}{{fs.ModeSetuid, " setuid"}, {fs.ModeSetgid, " setgid"}, {fs.ModeSticky, " sticky"}} {
		if m&b.bit != 0 {
			out += b.name
		}
	}
	return out
}
