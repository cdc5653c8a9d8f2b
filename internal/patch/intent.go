package patch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/devspace-dev/devspace/internal/project"
)

// Intent record phases. The phase is the record's file name suffix, so
// moving to the next phase is one rename in the intents directory.
const (
	phaseStaging     = "staging"      // temps may exist; no target touched
	phaseCommitting  = "committing"   // the commit point: finish the patch
	phaseRollingBack = "rolling_back" // a failure after the commit point: undo it
)

const (
	intentVersion = 1
	opWrite       = "write"
	opRemove      = "remove"
	// maxIntentBytes bounds a record Recover reads (a record lists at
	// most 2*MaxFiles steps of a few hundred bytes).
	maxIntentBytes = 16 << 20
)

// Intents is the directory of durable intent records that makes Apply and
// Restore crash-consistent (Options.Intents). It lives outside every
// Project, in the server's state directory.
//
// The protocol for one transaction, with each record written to a temp
// name, fsynced, renamed and its directory fsynced:
//
//  1. Before anything is created in the Project, a record "<id>.staging"
//     lists the Project root, every temp and aside name the transaction
//     may create, the directories it may create and, per target, the old
//     and new content hash and mode.
//  2. The new contents are staged in those temps.
//  3. The record is renamed to "<id>.committing": the commit point.
//  4. The temps are renamed over their targets and deleted files
//     unlinked (the originals stay only in memory), the record deleted.
//
// A failure after the commit point renames the record to
// "<id>.rolling_back", writes every original it has replaced or removed
// back to its aside (no target touched yet), then renames the asides
// into place and removes the files it created. That is three fsyncs per
// transaction whatever its size (four when it rolls back); staged files
// and asides are fsynced only with Options.Sync.
//
// Recover, run at startup before serving, handles what a crash left:
// "staging" is undone (temps and created directories removed, no target
// touched); "committing" is finished (every rename not done yet is done,
// every removal made), so that all files of the patch end new;
// "rolling_back" is undone from the asides, or finished when the crash
// came before every aside was written (the committed targets are then
// still new and the pending ones still have their temps). Every decision
// rests on the content hashes, so Recover never installs a staged file
// or aside that does not hold the recorded content and never overwrites
// a file that changed since. When the preferred direction is impossible
// for some file it takes the other one for the whole patch; a file that
// fits neither (someone changed it) is left as found and does not weigh
// in that choice. Only when neither direction fits all the other files
// are those that do not fit the chosen one left as found too. Either way
// the outcome is then RecoveredIncomplete. Recover touches only the names
// a record lists, through the Project's *os.Root.
//
// An *Intents is safe for concurrent use by transactions; Recover must
// not run concurrently with them.
type Intents struct {
	dir string
}

// OpenIntents creates dir (0700) if needed, or narrows an existing one to
// 0700, and returns the Intents kept there. Errors are those of creating
// the directory.
func OpenIntents(dir string) (*Intents, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create intents directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create intents directory: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	return &Intents{dir: abs}, nil
}

// intentRecord is the JSON of one record.
type intentRecord struct {
	Version int    `json:"version"`
	Root    string `json:"root"` // absolute host path of the Project root
	// Dirs are the directories the transaction may create, parents first.
	Dirs []string `json:"dirs,omitempty"`
	// RmDirs are removed once committed if they are then empty (Restore).
	RmDirs []string     `json:"rmdirs,omitempty"`
	Steps  []intentStep `json:"steps"`
}

type intentStep struct {
	Op      string `json:"op"` // opWrite or opRemove
	Path    string `json:"path"`
	Tmp     string `json:"tmp,omitempty"`   // write: the staged new content
	Aside   string `json:"aside,omitempty"` // the original while rolling back
	Old     string `json:"old,omitempty"`   // content hash before; "" = absent
	OldMode uint32 `json:"oldMode,omitempty"`
	New     string `json:"new,omitempty"` // write: content hash after
	NewMode uint32 `json:"newMode,omitempty"`
}

// intent is the record of one transaction in flight.
type intent struct {
	root  *os.Root // the intents directory
	id    string
	phase string
}

func recordName(id, phase string) string { return id + "." + phase }

// begin durably writes rec as a new "staging" record.
func (in *Intents) begin(rec *intentRecord) (*intent, error) {
	data, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(in.dir)
	if err != nil {
		return nil, fmt.Errorf("record patch intent: %w", err)
	}
	var r [8]byte
	_, _ = rand.Read(r[:])
	it := &intent{root: root, id: hex.EncodeToString(r[:]), phase: phaseStaging}
	if err := it.write(data); err != nil {
		root.Close()
		return nil, fmt.Errorf("record patch intent: %w", err)
	}
	return it, nil
}

func (it *intent) write(data []byte) error {
	tmp := it.id + ".tmp"
	f, err := it.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = it.root.Rename(tmp, recordName(it.id, it.phase))
	}
	if err != nil {
		_ = it.root.Remove(tmp)
		return err
	}
	return it.syncDir()
}

// advance durably moves the record to phase.
func (it *intent) advance(phase string) error {
	if err := it.root.Rename(recordName(it.id, it.phase), recordName(it.id, phase)); err != nil {
		return fmt.Errorf("record patch intent: %w", err)
	}
	it.phase = phase
	if err := it.syncDir(); err != nil {
		return fmt.Errorf("record patch intent: %w", err)
	}
	return nil
}

func (it *intent) syncDir() error {
	d, err := it.root.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// finish deletes the record: the transaction is complete or undone. The
// deletion is not synced; should it be lost, Recover finds every step
// done and only deletes the record again.
func (it *intent) finish() {
	_ = it.root.Remove(recordName(it.id, it.phase))
	it.root.Close()
}

// release leaves the record for Recover.
func (it *intent) release() { it.root.Close() }

// rootPath is the absolute host path of root, for the record.
func rootPath(root *os.Root) string {
	if abs, err := filepath.Abs(root.Name()); err == nil {
		return abs
	}
	return root.Name()
}

// Recovery outcomes (RecoveredPatch.Outcome).
const (
	// RecoveredForward: the patch was finished; every file is new.
	RecoveredForward = "rolled_forward"
	// RecoveredBack: the patch was undone (or had not reached its commit
	// point); every file is old.
	RecoveredBack = "rolled_back"
	// RecoveredIncomplete: some file had changed since the record was
	// written (or its staged copy was damaged) and was left as found;
	// the others are new, or old when finishing was impossible.
	RecoveredIncomplete = "incomplete"
	// RecoveredKept: the record stays for the next start, which tries
	// again: it or its Project could not be opened, or a file could not be
	// read (nothing was done) or changed (Err says why).
	RecoveredKept = "kept"
	// RecoveredDropped: the record was discarded unapplied: its Project
	// is gone or no longer configured, or the record is not valid.
	RecoveredDropped = "dropped"
)

// Recovery reports what Recover did.
type Recovery struct {
	// Patches has one entry per record found.
	Patches []RecoveredPatch
	// Removed counts the staging temps and asides removed from Projects.
	Removed int
}

// RecoveredPatch is the recovery of one record.
type RecoveredPatch struct {
	Root    string // the Project's host path (never shown to clients)
	Phase   string // the phase the crash left: staging, committing, rolling_back
	Outcome string // one of the Recovered* constants
	Files   int    // targets in the record
	Err     error  // why the outcome is RecoveredKept, RecoveredDropped or RecoveredIncomplete
}

// Count returns how many patches had outcome.
func (r *Recovery) Count(outcome string) int {
	n := 0
	for _, p := range r.Patches {
		if p.Outcome == outcome {
			n++
		}
	}
	return n
}

// Recover finishes or undoes every transaction a crash left recorded
// (see Intents), then deletes its record. open opens a record's Project
// root; an error wrapping fs.ErrNotExist (the directory is gone or is no
// longer a Project) drops the record, any other error keeps it for the
// next start. Recover reads only the intents directory and the names the
// records list: it never walks a Project.
//
// The error is non-nil only when the intents directory cannot be read;
// each record's problems are in its RecoveredPatch.
func (in *Intents) Recover(ctx context.Context, open func(root string) (*os.Root, error)) (*Recovery, error) {
	dir, err := os.OpenRoot(in.dir)
	if err != nil {
		return nil, fmt.Errorf("open intents directory: %w", err)
	}
	defer dir.Close()
	d, err := dir.Open(".")
	if err != nil {
		return nil, fmt.Errorf("read intents directory: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("read intents directory: %w", err)
	}
	slices.Sort(names)
	res := &Recovery{}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		_, phase, ok := strings.Cut(name, ".")
		if !ok {
			continue
		}
		switch phase {
		case "tmp":
			// A record that was never renamed into place: its
			// transaction had not started.
			_ = dir.Remove(name)
			continue
		case phaseStaging, phaseCommitting, phaseRollingBack:
		default:
			continue
		}
		rp := RecoveredPatch{Phase: phase}
		rec, err := readRecord(dir, name)
		if err == nil {
			rp.Root, rp.Files = rec.Root, len(rec.Steps)
			var root *os.Root
			if root, err = open(rec.Root); err == nil {
				var removed int
				rp.Outcome, removed, err = recoverRecord(root, phase, rec)
				res.Removed += removed
				root.Close()
			} else if errors.Is(err, fs.ErrNotExist) {
				rp.Outcome = RecoveredDropped
			} else {
				rp.Outcome = RecoveredKept
			}
		} else if errors.Is(err, errBadRecord) {
			rp.Outcome = RecoveredDropped
		} else {
			rp.Outcome = RecoveredKept
		}
		rp.Err = err
		if rp.Outcome != RecoveredKept {
			_ = dir.Remove(name)
		}
		res.Patches = append(res.Patches, rp)
	}
	if d, err := dir.Open("."); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return res, nil
}

// errBadRecord marks a record that cannot be parsed or fails validation.
var errBadRecord = errors.New("invalid intent record")

// readRecord reads and validates a record: every name it lists must be a
// clean Project-relative path, each temp and aside a staging name next to
// its target, so that a damaged record cannot make Recover touch
// anything else. A record that is not valid yields errBadRecord.
func readRecord(dir *os.Root, name string) (*intentRecord, error) {
	f, err := dir.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := readLimited(f, 0, maxIntentBytes)
	if err != nil {
		return nil, err
	}
	if len(data) > maxIntentBytes {
		return nil, fmt.Errorf("%w: too large", errBadRecord)
	}
	var rec intentRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("%w: %w", errBadRecord, err)
	}
	if rec.Version != intentVersion || !filepath.IsAbs(rec.Root) {
		return nil, fmt.Errorf("%w: unknown version or root", errBadRecord)
	}
	bad := errBadRecord
	clean := func(p string) bool {
		c, err := project.CleanRel(p)
		return err == nil && c == p && p != "."
	}
	for _, d := range append(slices.Clone(rec.Dirs), rec.RmDirs...) {
		if !clean(d) {
			return nil, bad
		}
	}
	staging := func(target, name string, kinds ...string) bool {
		if name == "" {
			return true
		}
		if !clean(name) || path.Dir(name) != path.Dir(target) {
			return false
		}
		base := path.Base(name)
		i := strings.LastIndex(base, ".devspace-")
		if !strings.HasPrefix(base, ".") || i < 0 {
			return false
		}
		hexPart, kind, ok := strings.Cut(base[i+len(".devspace-"):], ".")
		if _, err := hex.DecodeString(hexPart); !ok || err != nil || len(hexPart) != 12 {
			return false
		}
		return slices.Contains(kinds, kind)
	}
	seen := map[string]bool{}
	for _, s := range rec.Steps {
		if !clean(s.Path) || seen[s.Path] {
			return nil, bad
		}
		seen[s.Path] = true
		switch s.Op {
		case opWrite:
			if s.Tmp == "" || s.New == "" || !staging(s.Path, s.Tmp, "tmp") || !staging(s.Path, s.Aside, "orig") {
				return nil, bad
			}
		case opRemove:
			if s.Aside == "" || s.Old == "" || !staging(s.Path, s.Aside, "del") {
				return nil, bad
			}
		default:
			return nil, bad
		}
	}
	return &rec, nil
}

// stepView is what Recover finds of one step.
type stepView struct {
	s          *intentStep
	cur        *fileState // the target
	tmp, aside *fileState // absent when the step has no such name
}

// isOld reports whether the target is as it was before the transaction.
func (v *stepView) isOld() bool {
	if v.s.Old == "" {
		return !v.cur.exists
	}
	return v.cur.exists && v.cur.hash == v.s.Old && uint32(v.cur.mode) == v.s.OldMode
}

// isNew reports whether the target is as the transaction leaves it.
func (v *stepView) isNew() bool {
	if v.s.Op == opRemove {
		return !v.cur.exists
	}
	return v.cur.exists && v.cur.hash == v.s.New && uint32(v.cur.mode) == v.s.NewMode
}

func (v *stepView) canNew() bool {
	if v.isNew() {
		return true
	}
	if v.s.Op == opRemove {
		return v.isOld()
	}
	return v.isOld() && v.tmp.exists && v.tmp.hash == v.s.New && uint32(v.tmp.mode) == v.s.NewMode
}

func (v *stepView) canOld() bool {
	if v.isOld() {
		return true
	}
	if !v.isNew() {
		return false
	}
	if v.s.Op == opWrite && v.s.Old == "" {
		return true // remove the created file
	}
	return v.aside.exists && v.aside.hash == v.s.Old && uint32(v.aside.mode) == v.s.OldMode
}

// toNew and toOld bring the step's target to its new or old state; the
// caller has checked it can.
func (v *stepView) toNew(root *os.Root) error {
	switch {
	case v.isNew():
		return nil
	case v.s.Op == opRemove:
		return root.Remove(v.s.Path)
	}
	return root.Rename(v.s.Tmp, v.s.Path)
}

func (v *stepView) toOld(root *os.Root) error {
	switch {
	case v.isOld():
		return nil
	case v.s.Op == opWrite && v.s.Old == "":
		return root.Remove(v.s.Path)
	}
	return root.Rename(v.s.Aside, v.s.Path)
}

// look reads the state of name, keeping only its hash and mode; "" is
// absent.
func look(root *os.Root, name string) (*fileState, error) {
	if name == "" {
		return &fileState{}, nil
	}
	st, err := readState(root, name, MaxFileBytes)
	if err != nil {
		return nil, err
	}
	st.content = nil
	return st, nil
}

// recoverRecord finishes or undoes one recorded transaction in root. It
// returns the outcome and how many staging names it removed.
func recoverRecord(root *os.Root, phase string, rec *intentRecord) (string, int, error) {
	views := make([]*stepView, len(rec.Steps))
	for i := range rec.Steps {
		v := &stepView{s: &rec.Steps[i]}
		var err error
		if v.cur, err = look(root, v.s.Path); err == nil {
			if v.tmp, err = look(root, v.s.Tmp); err == nil {
				v.aside, err = look(root, v.s.Aside)
			}
		}
		if err != nil {
			// Touch nothing: the next start tries again.
			return RecoveredKept, 0, err
		}
		views[i] = v
	}
	forward := phase == phaseCommitting
	// all reports whether every step can go f's way, leaving out the
	// files that fit neither way: someone changed them, and they are left
	// as found whichever way the rest goes.
	all := func(f func(*stepView) bool) bool {
		for _, v := range views {
			if !f(v) && (v.canNew() || v.canOld()) {
				return false
			}
		}
		return true
	}
	switch {
	case forward && !all((*stepView).canNew) && all((*stepView).canOld):
		forward = false
	case !forward && phase == phaseRollingBack && !all((*stepView).canOld) && all((*stepView).canNew):
		forward = true
	}
	outcome := RecoveredBack
	if forward {
		outcome = RecoveredForward
	}
	var errs []error
	var drifted []string
	for _, v := range views {
		var err error
		switch {
		case forward && v.canNew():
			err = v.toNew(root)
		case !forward && v.isOld():
		case !forward && phase != phaseStaging && v.canOld():
			// Before the commit point no target was touched, so one that
			// is not old was changed by someone else: left as found.
			err = v.toOld(root)
		default:
			// Changed since the record was written: left as found.
			drifted = append(drifted, v.s.Path)
			outcome = RecoveredIncomplete
		}
		if err != nil {
			errs = append(errs, fileErr(v.s.Path, err))
		}
	}
	if errs != nil {
		return RecoveredKept, 0, errors.Join(errs...)
	}
	removed := 0
	for _, v := range views {
		for _, name := range []string{v.s.Tmp, v.s.Aside} {
			if name == "" {
				continue
			}
			err := root.Remove(name)
			switch {
			case err == nil:
				removed++
			case !errors.Is(err, fs.ErrNotExist):
				errs = append(errs, fileErr(name, err))
			}
		}
	}
	dirs := rec.RmDirs
	if !forward {
		dirs = slices.Clone(rec.Dirs)
		slices.Reverse(dirs)
	}
	// The directories whose entries changed, synced so that the outcome
	// is as durable as the deletion of the record that follows.
	parents := map[string]bool{}
	for _, d := range dirs {
		if realDir(root, d) && root.Remove(d) == nil {
			parents[path.Dir(d)] = true
		}
	}
	for _, v := range views {
		parents[path.Dir(v.s.Path)] = true
	}
	for d := range parents {
		if f, err := root.Open(d); err == nil {
			_ = f.Sync()
			f.Close()
		}
	}
	if errs != nil {
		return RecoveredKept, removed, errors.Join(errs...)
	}
	if drifted != nil {
		return outcome, removed, fmt.Errorf("changed since the patch was recorded, left as found: %s", strings.Join(drifted, ", "))
	}
	return outcome, removed, nil
}
