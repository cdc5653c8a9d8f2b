package patch

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/devspace-dev/devspace/internal/project"
)

// Precondition is the caller's ifMatch entry for one path: MustNotExist
// (ifMatch null) or ContentHash ("sha256:…", from a read_files version).
// The zero value (Set false) counts as a missing entry.
type Precondition struct {
	Set          bool
	MustNotExist bool
	ContentHash  string
}

// Hooks inject faults in tests. Each hook that returns an error makes
// Apply fail at that point and roll back everything. Nil hooks are
// skipped.
type Hooks struct {
	// AfterStage runs once every new content is staged in its temp file,
	// before the first commit step.
	AfterStage func() error
	// BeforeRename runs before commit step i (0-based; writes in patch
	// order, then removals) changes the directory entry of path.
	BeforeRename func(i int, path string) error
	// AfterCommit runs after the last commit step, before leftover temps
	// are removed and the transaction is marked done.
	AfterCommit func() error
	// Crash is asked at each point of the commit protocol, numbered from
	// 0 in the order reached (rollback points included). When it returns
	// true the transaction stops there as if the process had been killed:
	// nothing is rolled back, cleaned up or removed from Intents, and Apply
	// or Restore returns an error. Intents.Recover then does what a
	// restart would.
	Crash func(point int) bool
}

// Options tune Apply and Restore. The zero value refuses sensitive
// targets, does not fsync and keeps no intent record.
type Options struct {
	// AllowSensitive permits targets that project.IsSensitive flags, on
	// the path as written or on the path it leads to inside the root.
	AllowSensitive bool
	// Sync fsyncs each staged file before its rename and each touched
	// directory after the commit.
	Sync bool
	// Intents, when set, records each transaction durably outside the
	// Project before it touches anything, so that Intents.Recover can
	// finish or undo it after a crash and remove its staging files. Nil
	// keeps a transaction atomic only while the process lives.
	Intents *Intents
	// Hooks are for tests only.
	Hooks *Hooks
}

// Actions reported in FileResult.Action.
const (
	ActionAdd    = "add"
	ActionDelete = "delete"
	ActionUpdate = "update"
	ActionMove   = "move"
)

// FileResult describes what happened to one file section. Hashes are
// content hashes ("sha256:…"); "" means the file did not exist (Before)
// or no longer exists (After). Contents are kept for the journal and
// undo; Before/After contents are nil when the file did not exist.
type FileResult struct {
	Path      string `json:"path"`
	Action    string `json:"action"`
	MovedFrom string `json:"movedFrom,omitempty"`
	Fuzz      string `json:"fuzz,omitempty"`
	Added     int    `json:"added"`
	Removed   int    `json:"removed"`

	Before        string      `json:"-"` // of Path (of MovedFrom for a move)
	After         string      `json:"-"` // of Path
	BeforeMode    fs.FileMode `json:"-"`
	AfterMode     fs.FileMode `json:"-"`
	BeforeContent []byte      `json:"-"`
	AfterContent  []byte      `json:"-"`
	// Replaced and ReplacedContent describe the file a move overwrote at
	// Path ("" / nil when there was none).
	Replaced        string      `json:"-"`
	ReplacedMode    fs.FileMode `json:"-"`
	ReplacedContent []byte      `json:"-"`
	// Sensitive says the path (or MovedFrom) is a sensitive file, as
	// written or where it really leads, patched with AllowSensitive: no
	// record keeps its content (the journal shows a stub with the hashes;
	// undo keeps no snapshot of it).
	Sensitive bool `json:"-"`
}

// Result is the outcome of a successful Apply or Restore.
type Result struct {
	Files []FileResult `json:"files"`
	Bytes int64        `json:"bytes"` // bytes written, for patch_bytes_total

	// CreatedDirs are the parent directories the call created, parents
	// first (Project-relative). Undo passes them back to Restore as
	// removeDirs.
	CreatedDirs []string `json:"-"`
	// RemovedDirs are the directories Restore removed because they were
	// empty once it had committed, deepest first. Apply leaves it nil.
	RemovedDirs []string `json:"-"`
}

// fileState is a path's state when Apply looked at it.
type fileState struct {
	exists  bool
	mode    fs.FileMode
	content []byte
	hash    string
	// sensitive: the file read is a sensitive one by its real path.
	sensitive bool
}

// Apply applies p atomically to the tree under root. Every path in
// p.Paths() needs a Set precondition in pre (keys are cleaned with
// project.CleanRel; entries for other paths are ignored).
//
// Nothing is written unless every precondition holds, every hunk is
// placed and every target is allowed (a sensitive target, on its path as
// written or on the path it really leads to inside the root, needs
// opts.AllowSensitive). Then each new content is staged in a temp file
// next to its target and committed by rename (a deleted file is
// unlinked); each target's hash is checked again just before its step.
// On any failure every committed step is undone from the old contents
// and modes Apply holds in memory (a restored file is a new inode with
// the old bytes and permission bits), temps and created directories are
// removed, and the error is returned (joined with ErrRollbackIncomplete
// if the undo itself failed). With opts.Intents the transaction is also
// recorded durably first, so that a crash at any point is finished or
// undone by Intents.Recover (see Intents for the protocol).
//
// Errors: *PreconditionMissingError, *VersionConflict, *HunkError
// (ErrContextNotFound, ErrAmbiguous), *FileError wrapping
// project.ErrPathDenied, ErrBinaryTarget, ErrTargetMissing or a
// filesystem error, ErrTooLarge, ctx.Err(), or the failure to write the
// intent record.
//
// Apply does not coordinate with other writers: the caller holds the
// root's write lock. It may return before the kernel has freed the files
// it replaced or removed: a goroutine closes their last descriptors.
func Apply(ctx context.Context, root *os.Root, p *Patch, pre map[string]Precondition, opts Options) (*Result, error) {
	if root == nil || p == nil || len(p.Files) == 0 {
		return nil, fmt.Errorf("%w: nothing to apply", ErrInvalidPatch)
	}
	paths := p.Paths()
	resolve := project.NewDirResolver(root)
	sensitive := map[string]bool{}
	for _, ph := range paths {
		sens, err := checkTarget(resolve, ph, opts.AllowSensitive)
		if err != nil {
			return nil, err
		}
		if sens {
			sensitive[ph] = true
		}
	}
	pres, err := cleanPreconditions(pre)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, ph := range paths {
		if pr := pres[ph]; !pr.Set || !pr.MustNotExist && pr.ContentHash == "" {
			missing = append(missing, ph)
		}
	}
	if missing != nil {
		return nil, &PreconditionMissingError{Paths: missing}
	}

	// Look at every target, then check every precondition, before doing
	// anything else.
	states := make(map[string]*fileState, len(paths))
	var total int64
	for _, ph := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		st, err := readState(root, ph, MaxTotalBytes-total)
		if err != nil {
			return nil, err
		}
		if st.sensitive {
			// What was read is a secret, whatever the check before saw.
			if !opts.AllowSensitive {
				return nil, &FileError{Path: ph, Err: &project.PathError{Reason: project.ReasonSensitive}}
			}
			sensitive[ph] = true
		}
		total += int64(len(st.content))
		states[ph] = st
	}
	for _, ph := range paths {
		if err := checkPrecondition(ph, pres[ph], states[ph]); err != nil {
			return nil, err
		}
	}

	plan, res, err := compute(ctx, p, states, total)
	if err != nil {
		return nil, err
	}
	t := &tx{root: root, opts: opts, dirs: map[string]bool{}}
	if err := t.run(ctx, plan); err != nil {
		return nil, err
	}
	res.CreatedDirs = t.created
	markSensitive(res, sensitive)
	return res, nil
}

func cleanPreconditions(pre map[string]Precondition) (map[string]Precondition, error) {
	out := make(map[string]Precondition, len(pre))
	for k, v := range pre {
		c, err := project.CleanRel(k)
		if err != nil {
			return nil, &FileError{Path: "ifMatch", Err: err}
		}
		if prev, dup := out[c]; dup && prev != v {
			return nil, fmt.Errorf("%w: two ifMatch entries name %s", ErrInvalidPatch, c)
		}
		out[c] = v
	}
	return out, nil
}

func checkPrecondition(ph string, pre Precondition, st *fileState) error {
	switch {
	case pre.MustNotExist && st.exists:
		return &VersionConflict{Path: ph, Actual: st.hash}
	case !pre.MustNotExist && !strings.EqualFold(pre.ContentHash, st.hash):
		return &VersionConflict{Path: ph, Expected: pre.ContentHash, Actual: st.hash}
	}
	return nil
}

// readState looks at ph without following a final symlink. budget bounds
// the bytes it may read.
func readState(root *os.Root, ph string, budget int64) (*fileState, error) {
	st, f, err := openState(root, ph, budget)
	if f != nil {
		f.Close()
	}
	return st, err
}

// openState is readState that also returns the file it read, still open,
// for the caller to close; nil when the file does not exist or on error.
func openState(root *os.Root, ph string, budget int64) (_ *fileState, _ *os.File, err error) {
	fi, err := root.Lstat(ph)
	if err != nil {
		if err = project.Classify(err); errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return &fileState{}, nil, nil
		}
		return nil, nil, fileErr(ph, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		// Renaming over a link would replace the link, not its target.
		reason := project.ReasonSpecial
		if _, err := root.Stat(ph); err != nil && errors.Is(project.Classify(err), project.ErrPathDenied) {
			reason = project.ReasonSymlink
		}
		return nil, nil, &FileError{Path: ph, Err: &project.PathError{Reason: reason}}
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, &FileError{Path: ph, Err: &project.PathError{Reason: project.ReasonSpecial}}
	}
	if fi.Size() > MaxFileBytes || fi.Size() > budget {
		return nil, nil, &FileError{Path: ph, Err: fmt.Errorf("%w: file of %d bytes", ErrTooLarge, fi.Size())}
	}
	// The resolver opens what the path really names (no link followed
	// unjudged, never repository metadata); the caller learns whether that
	// is a sensitive file from the state.
	f, real, err := project.Open(root, ph, true)
	if err != nil {
		return nil, nil, fileErr(ph, err)
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	if ofi, err := f.Stat(); err != nil || !os.SameFile(fi, ofi) {
		return nil, nil, &FileError{Path: ph, Err: fmt.Errorf("%w: the file changed while it was read", ErrVersionConflict)}
	}
	limit := min(MaxFileBytes, budget)
	content, err := readLimited(f, fi.Size(), limit)
	if err != nil {
		return nil, nil, fileErr(ph, err)
	}
	if int64(len(content)) > limit {
		return nil, nil, &FileError{Path: ph, Err: fmt.Errorf("%w: the file grew past the limit", ErrTooLarge)}
	}
	return &fileState{exists: true, mode: fi.Mode().Perm(), content: content, hash: HashContent(content),
		sensitive: project.IsSensitive(ph) || project.IsSensitive(real)}, f, nil
}

// readLimited reads f, expected to hold size bytes, up to limit+1 bytes.
func readLimited(f io.Reader, size, limit int64) ([]byte, error) {
	buf := make([]byte, 0, min(size, limit)+1)
	for int64(len(buf)) <= limit {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):min(int64(cap(buf)), limit+1)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// fileErr classifies a filesystem error from a root operation and drops
// its host-path details.
func fileErr(ph string, err error) error {
	err = project.Classify(err)
	if errors.Is(err, project.ErrPathDenied) {
		return &FileError{Path: ph, Err: err}
	}
	return &FileError{Path: ph, Err: project.Scrub(err)}
}

// isText reports whether b is valid UTF-8 without a NUL in its first
// 8 KiB.
func isText(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), 8<<10)], 0) < 0 && utf8.Valid(b)
}

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

// recheck verifies that ph is still in the state validation saw. It
// holds the file it read open (see hold).
func (t *tx) recheck(ph string, expect *fileState) error {
	cur, f, err := openState(t.root, ph, MaxFileBytes)
	if err != nil {
		return err
	}
	if f != nil {
		t.hold(f)
	}
	if cur.exists != expect.exists || cur.hash != expect.hash {
		return &VersionConflict{Path: ph, Expected: expect.hash, Actual: cur.hash}
	}
	return nil
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

// rollback undoes the committed steps, removes temps and the directories
// it created (deepest first), and returns cause, joined with
// ErrRollbackIncomplete when something could not be restored. It returns
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
				return errors.Join(append([]error{cause, ErrRollbackIncomplete}, errs...)...)
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
	return errors.Join(append([]error{cause, ErrRollbackIncomplete}, errs...)...)
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
