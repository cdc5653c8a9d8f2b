package patch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/devspace-dev/devspace/internal/project"
)

// tx stages and commits a plan, and undoes it on failure.
type tx struct {
	root *os.Root
	opts Options

	dirs    map[string]bool // directories known to exist
	created []string        // directories we created, in order
	removed []string        // empty directories removed after the commit
	temps   []string        // staged temps not yet consumed
	done    []step          // committed steps, for rollback

	intent *intent // the durable record; nil without opts.Intents
	points int     // protocol points reached, for Hooks.Crash

	// held are the targets as recheck opened them, kept open until the
	// transaction is over (see hold).
	held []*os.File
}

// maxHeld bounds the files one transaction keeps open (see tx.hold).
const maxHeld = 1024

type stepKind int

const (
	stepReplaced stepKind = iota // path now holds new content; expect holds the original
	stepCreated                  // path did not exist
	stepRemoved                  // path was unlinked; expect holds the original
)

type step struct {
	kind   stepKind
	path   string
	aside  string     // where rollback stages the original (not for stepCreated)
	expect *fileState // the original, content and mode in memory
}

// errCrashed is what a transaction stopped by Hooks.Crash returns.
var errCrashed = errors.New("transaction stopped by Hooks.Crash")

// run commits pl. With an intent record the protocol is (Intents):
// record "staging" → stage → "committing" (the commit point) → renames
// and unlinks → cleanup → record removed; a failure after the commit
// point marks the record "rolling_back" before undoing.
func (t *tx) run(ctx context.Context, pl *plan) (err error) {
	defer t.closeHeld() // last, after any rollback
	t.name(pl)
	if t.opts.Intents != nil && len(pl.writes)+len(pl.removals) > 0 {
		if t.intent, err = t.opts.Intents.begin(t.record(pl)); err != nil {
			return err
		}
	}
	defer func() {
		if err == nil || errors.Is(err, errCrashed) {
			return
		}
		if t.intent != nil && t.intent.phase != phaseStaging {
			// A crash while undoing must go on undoing. Should the record
			// stay "committing", Recover finishes the patch instead.
			_ = t.intent.advance(phaseRollingBack)
			if t.crashed() {
				err = errCrashed
				return
			}
		}
		err = t.rollback(err)
		if errors.Is(err, errCrashed) {
			return
		}
		if t.intent != nil {
			if errors.Is(err, ErrRollbackIncomplete) {
				// Left for Recover at the next start, which finishes
				// what it safely can.
				t.intent.release()
			} else {
				t.intent.finish()
			}
		}
	}()
	if t.crashed() {
		return errCrashed
	}
	for _, w := range pl.writes {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := t.stage(w); err != nil {
			return err
		}
		if t.crashed() {
			return errCrashed
		}
	}
	if h := t.hooks(); h.AfterStage != nil {
		if err := h.AfterStage(); err != nil {
			return err
		}
	}
	if t.intent != nil {
		// The commit point: from here a crash is finished, not undone.
		if err := t.intent.advance(phaseCommitting); err != nil {
			return err
		}
		if t.crashed() {
			return errCrashed
		}
	}
	i := 0
	for _, w := range pl.writes {
		if err := t.before(ctx, i, w.path); err != nil {
			return err
		}
		if err := t.commitWrite(w); err != nil {
			return err
		}
		if t.crashed() {
			return errCrashed
		}
		i++
	}
	for _, r := range pl.removals {
		if err := t.before(ctx, i, r.path); err != nil {
			return err
		}
		if err := t.commitRemoval(r); err != nil {
			return err
		}
		if t.crashed() {
			return errCrashed
		}
		i++
	}
	if h := t.hooks(); h.AfterCommit != nil {
		if err := h.AfterCommit(); err != nil {
			return err
		}
	}
	if t.opts.Sync {
		if err := t.syncDirs(pl); err != nil {
			return err
		}
	}
	// Committed. Only a create's temp can remain (its removal after the
	// link failed); a failure here leaves a hidden leftover that Recover
	// removes at the next start if the record is still there, but the
	// patch itself stands.
	for _, tmp := range t.temps {
		_ = t.root.Remove(tmp)
	}
	// Past the commit, a directory that cannot go simply stays.
	t.removeEmptyDirs(pl.rmdirs)
	if t.crashed() {
		return errCrashed
	}
	if t.intent != nil {
		t.intent.finish()
	}
	return nil
}

// name chooses every staging and aside name before anything is written,
// so that the intent record can list them. Asides are only written by a
// rollback.
func (t *tx) name(pl *plan) {
	for _, w := range pl.writes {
		w.tmp = asideName(w.path, "tmp")
		if w.expect.exists {
			w.aside = asideName(w.path, "orig")
		}
		if w.hash == "" {
			w.hash = HashContent(w.content)
		}
	}
	for _, r := range pl.removals {
		r.aside = asideName(r.path, "del")
	}
}

// record describes pl for the intent record: every name the transaction
// may create, with the old and new state of each target.
func (t *tx) record(pl *plan) *intentRecord {
	rec := &intentRecord{Version: intentVersion, Root: rootPath(t.root), Dirs: t.missingDirs(pl), RmDirs: pl.rmdirs}
	for _, w := range pl.writes {
		rec.Steps = append(rec.Steps, intentStep{Op: opWrite, Path: w.path, Tmp: w.tmp, Aside: w.aside,
			Old: w.expect.hash, OldMode: uint32(w.expect.mode), New: w.hash, NewMode: uint32(w.mode.Perm())})
	}
	for _, r := range pl.removals {
		rec.Steps = append(rec.Steps, intentStep{Op: opRemove, Path: r.path, Aside: r.aside,
			Old: r.expect.hash, OldMode: uint32(r.expect.mode)})
	}
	return rec
}

// missingDirs lists the parent directories of pl's writes that do not
// exist yet, parents first: those mkdirs will create.
func (t *tx) missingDirs(pl *plan) []string {
	known := map[string]bool{".": true}
	var out []string
	var walk func(dir string)
	walk = func(dir string) {
		if known[dir] {
			return
		}
		known[dir] = true
		walk(path.Dir(dir))
		if _, err := t.root.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			out = append(out, dir)
		}
	}
	for _, w := range pl.writes {
		walk(path.Dir(w.path))
	}
	return out
}

// crashed reports whether Hooks.Crash stops the transaction at this
// point.
func (t *tx) crashed() bool {
	h := t.hooks()
	if h.Crash == nil {
		return false
	}
	t.points++
	return h.Crash(t.points - 1)
}

func (t *tx) hooks() *Hooks {
	if t.opts.Hooks == nil {
		return &Hooks{}
	}
	return t.opts.Hooks
}

func (t *tx) before(ctx context.Context, i int, ph string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if h := t.hooks(); h.BeforeRename != nil {
		return h.BeforeRename(i, ph)
	}
	return nil
}

// stage writes w's content to its temp file in w's directory, creating
// missing parent directories.
func (t *tx) stage(w *write) error {
	if err := t.mkdirs(w.path, path.Dir(w.path)); err != nil {
		return err
	}
	return t.createTemp(w.tmp, w.path, w.content, w.mode)
}

// createTemp creates tmp, which must not exist, with content and mode.
func (t *tx) createTemp(tmp, ph string, content []byte, mode fs.FileMode) error {
	f, err := t.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fileErr(ph, err)
	}
	t.temps = append(t.temps, tmp)
	err = f.Chmod(mode) // the umask may have narrowed it
	if err == nil {
		_, err = f.Write(content)
	}
	if err == nil && t.opts.Sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fileErr(ph, err)
	}
	return nil
}

// mkdirs creates the missing directories of dir, remembering them.
func (t *tx) mkdirs(ph, dir string) error {
	if dir == "." || t.dirs[dir] {
		return nil
	}
	if err := t.mkdirs(ph, path.Dir(dir)); err != nil {
		return err
	}
	fi, err := t.root.Stat(dir)
	switch {
	case err == nil && fi.IsDir():
	case err == nil:
		return &FileError{Path: ph, Err: fmt.Errorf("%s: %w", dir, syscall.ENOTDIR)}
	case errors.Is(err, fs.ErrNotExist):
		if err := t.root.Mkdir(dir, 0o755); err != nil {
			return fileErr(ph, err)
		}
		t.created = append(t.created, dir)
		if t.crashed() {
			return errCrashed
		}
	default:
		return fileErr(ph, err)
	}
	t.dirs[dir] = true
	return nil
}

// recheck verifies that ph is still in the state validation saw: content,
// mode and type (see drift). It holds the file it read open (see hold).
func (t *tx) recheck(ph string, expect *fileState) error {
	cur, f, err := openState(t.root, ph, MaxFileBytes)
	if f != nil {
		t.hold(f)
	}
	return drift(ph, expect, cur, err, true)
}

// hold keeps f open until closeHeld. Renaming over or unlinking the last
// name of a file that is still open leaves freeing its inode and blocks
// (with a synchronous discard on a filesystem mounted with -o discard)
// to its last close: about half of the cost of each commit step on our
// disk. closeHeld pays it after the transaction, off the caller's path.
// Past maxHeld files, f is closed at once.
func (t *tx) hold(f *os.File) {
	if len(t.held) >= maxHeld {
		f.Close()
		return
	}
	t.held = append(t.held, f)
}

// closeHeld closes the held files in a goroutine of its own: they are
// descriptors of files the transaction replaced, removed or left alone,
// which nothing else uses.
func (t *tx) closeHeld() {
	held := t.held
	t.held = nil
	if len(held) == 0 {
		return
	}
	go func() {
		for _, f := range held {
			f.Close()
		}
	}()
}

func (t *tx) commitWrite(w *write) error {
	if err := t.recheck(w.path, w.expect); err != nil {
		return err
	}
	if w.expect.exists {
		// Renaming the temp over the path never writes into the original
		// (a hard link elsewhere keeps its content). The original is not
		// kept on disk: a rollback writes it back from w.expect, and a
		// crash from here on is finished by Recover from the temps.
		if err := t.root.Rename(w.tmp, w.path); err != nil {
			return fileErr(w.path, err)
		}
		t.consumed(w.tmp)
		t.done = append(t.done, step{kind: stepReplaced, path: w.path, aside: w.aside, expect: w.expect})
		return nil
	}
	// Linking fails if the path appeared since validation, which a rename
	// would silently overwrite.
	err := t.root.Link(w.tmp, w.path)
	switch {
	case err == nil:
		t.done = append(t.done, step{kind: stepCreated, path: w.path})
		if t.crashed() {
			return errCrashed
		}
		if t.root.Remove(w.tmp) == nil {
			t.consumed(w.tmp)
		}
		return nil
	case errors.Is(err, fs.ErrExist):
		cur, rerr := readState(t.root, w.path, MaxFileBytes)
		if rerr != nil {
			return rerr
		}
		return &VersionConflict{Path: w.path, Actual: cur.hash}
	case errors.Is(project.Classify(err), project.ErrPathDenied):
		return fileErr(w.path, err)
	}
	if cur, err := readState(t.root, w.path, MaxFileBytes); err != nil || cur.exists {
		if err != nil {
			return err
		}
		return &VersionConflict{Path: w.path, Actual: cur.hash}
	}
	if err := t.root.Rename(w.tmp, w.path); err != nil {
		return fileErr(w.path, err)
	}
	t.consumed(w.tmp)
	t.done = append(t.done, step{kind: stepCreated, path: w.path})
	return nil
}

func (t *tx) commitRemoval(r *removal) error {
	if err := t.recheck(r.path, r.expect); err != nil {
		return err
	}
	// As for a replaced file, a rollback recreates the original from
	// r.expect.
	if err := t.root.Remove(r.path); err != nil {
		return fileErr(r.path, err)
	}
	t.done = append(t.done, step{kind: stepRemoved, path: r.path, aside: r.aside, expect: r.expect})
	return nil
}

func (t *tx) consumed(tmp string) {
	for i, s := range t.temps {
		if s == tmp {
			t.temps = append(t.temps[:i], t.temps[i+1:]...)
			return
		}
	}
}

func (t *tx) syncDirs(pl *plan) error {
	seen := map[string]bool{}
	var dirs []string
	for _, w := range pl.writes {
		dirs = append(dirs, path.Dir(w.path))
	}
	for _, r := range pl.removals {
		dirs = append(dirs, path.Dir(r.path))
	}
	for _, c := range t.created {
		dirs = append(dirs, path.Dir(c))
	}
	for _, d := range dirs {
		if seen[d] {
			continue
		}
		seen[d] = true
		f, err := t.root.Open(d)
		if err != nil {
			return fileErr(d, err)
		}
		err = f.Sync()
		f.Close()
		if err != nil && !errors.Is(err, syscall.EINVAL) {
			return fileErr(d, err)
		}
	}
	return nil
}
