package patch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
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
	mode    fs.FileMode // permission bits
	special fs.FileMode // set-user-ID, set-group-ID and sticky bits
	content []byte
	hash    string
	// sensitive: the file read is a sensitive one by its real path.
	sensitive bool
}

// notRegular is openState's refusal of a path that holds something other
// than a regular file. Apply reports err; Restore and the commit's
// re-check, which want a regular file or nothing there, report a
// conflict naming what is there instead (see drift).
type notRegular struct {
	typ fs.FileMode // fs.FileMode.Type() of what is there
	err error       // the *project.PathError Apply answers
}

func (e *notRegular) Error() string { return e.err.Error() }
func (e *notRegular) Unwrap() error { return e.err }

// drift compares the state found at ph (cur, or the error of reading it)
// with want. A file gone or appeared, other content, something other than
// a regular file, and, with modes, other permission bits or a different
// set of set-user-ID, set-group-ID and sticky bits are a
// *VersionConflict; other errors are returned as they are.
func drift(ph string, want, cur *fileState, err error, modes bool) error {
	if nr, ok := errors.AsType[*notRegular](err); ok {
		return &VersionConflict{Path: ph, Expected: want.describe(modes), Actual: typeName(nr.typ)}
	}
	switch {
	case err != nil:
		return err
	case want.exists != cur.exists || !strings.EqualFold(want.hash, cur.hash):
		return &VersionConflict{Path: ph, Expected: want.hash, Actual: cur.hash}
	case modes && want.exists && (want.mode != cur.mode || want.special != cur.special):
		return &VersionConflict{Path: ph, Expected: want.describe(true), Actual: cur.describe(true)}
	}
	return nil
}

// describe is st for a conflict: its content hash ("" when absent), with
// its mode when modes are compared.
func (st *fileState) describe(modes bool) string {
	if !modes || !st.exists {
		return st.hash
	}
	return fmt.Sprintf("%s mode %04o%s", st.hash, st.mode, specialBits(st.special))
}

// typeName names a file type that is not a regular file.
func typeName(t fs.FileMode) string {
	switch {
	case t&fs.ModeSymlink != 0:
		return "symlink"
	case t.IsDir():
		return "directory"
	case t&fs.ModeNamedPipe != 0:
		return "fifo"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
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
		return nil, nil, &FileError{Path: ph, Err: &notRegular{typ: fi.Mode().Type(), err: &project.PathError{Reason: reason}}}
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, &FileError{Path: ph, Err: &notRegular{typ: fi.Mode().Type(), err: &project.PathError{Reason: project.ReasonSpecial}}}
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
	return &fileState{exists: true, mode: fi.Mode().Perm(), special: fi.Mode() & (fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky),
		content: content, hash: HashContent(content),
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
