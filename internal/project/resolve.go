package project

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
)

// maxSymlinks matches os.Root's limit on symlinks followed in one path, so
// the resolver here and an open through the root agree on what resolves.
const maxSymlinks = 8

// ErrSensitive is returned by Open when the path as written, or the real
// path it leads to, names a file IsSensitive flags and the caller did not
// allow sensitive files. This package owns it.
var ErrSensitive = errors.New("sensitive file")

// Open is the one way a tool opens a Project path it reads or returns. It
// opens the clean Project-relative path rel inside root element by
// element, from the root's directory descriptor, each element with
// O_NOFOLLOW: a symlink is read and its target walked with os.Root's
// rules (absolute targets and targets climbing above the root escape,
// whether or not they exist; ".." goes to the parent of the directory
// reached so far; at most 8 links). What is returned is what was opened,
// and real is the path of the names actually opened, so a swap of any
// element for a link after a check cannot change what the caller reads:
// classify the file by File.Stat, never by looking the path up again.
//
// The rules are judged on rel and on real: repository metadata
// (IsRepositoryMetadata) is a *PathError with ReasonRepository; a
// sensitive file (IsSensitive) is ErrSensitive unless allowSensitive.
// Entering or opening a directory that is a Git directory (IsGitDir),
// whatever its name and the root included, is repository metadata too:
// a .git file's gitdir: target or a bare repository holds the same
// config and hooks as a .git directory.
//
// The file is opened read-only, non-blocking (a FIFO does not block the
// open) and without becoming a controlling terminal; directories too. The
// caller closes it.
//
// Errors: a *PathError (symlink_escape, repository_metadata), ErrSensitive,
// syscall.ELOOP past 8 links, or the errno of the failing open (ENOENT,
// ENOTDIR, EACCES, ENXIO for a socket…), none of which holds a host path.
func Open(root *os.Root, rel string, allowSensitive bool) (f *os.File, real string, err error) {
	if err := judge(rel, allowSensitive); err != nil {
		return nil, "", err
	}
	w, err := startWalk(root, true)
	if err != nil {
		return nil, "", err
	}
	defer w.close()
	f, _, err = w.resolveElems(strings.Split(rel, "/"), true)
	if err != nil {
		return nil, "", Classify(err)
	}
	real = w.real()
	if err := judge(real, allowSensitive); err != nil {
		f.Close()
		return nil, "", err
	}
	return f, real, nil
}

// judge applies the repository-metadata and sensitive-file rules to a
// Project-relative path.
func judge(rel string, allowSensitive bool) error {
	switch {
	case IsRepositoryMetadata(rel):
		return &PathError{Reason: ReasonRepository}
	case !allowSensitive && IsSensitive(rel):
		return ErrSensitive
	}
	return nil
}

// RealPath returns the real path of the clean Project-relative path rel
// inside root (Open's walk, without its rules) and the Stat of what it
// names, which is never a symlink. Every element must exist. It is for
// classifying a path (undo snapshots); to read, use Open.
//
// Errors: as Open's, without the rules.
func RealPath(root *os.Root, rel string) (string, fs.FileInfo, error) {
	w, err := startWalk(root, false)
	if err != nil {
		return "", nil, err
	}
	defer w.close()
	f, _, err := w.resolveElems(strings.Split(rel, "/"), true)
	if err != nil {
		return "", nil, Classify(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", nil, err
	}
	return w.real(), fi, nil
}

// DirResolver finds where Project-relative paths lead inside root when
// they may not exist yet, as the targets of a patch: each directory is
// walked like Open's (element by element, O_NOFOLLOW, links read and
// judged), except that the first missing element and the rest are kept as
// written, so a directory about to be created resolves too. Entering a
// directory that is a Git directory (IsGitDir), whatever its name, is
// refused, as for Open. It caches each directory, so the many files of a
// patch in a few directories cost a few walks. Results describe the tree
// at one moment; writes still go through root, which stays contained
// whatever changed since, and DevSpace's writers hold the Project's root
// lock. A DirResolver is not safe for concurrent use.
type DirResolver struct {
	root *os.Root
	dirs map[string]resolvedDir // by directory as written
}

type resolvedDir struct {
	real string
	err  error
}

// NewDirResolver returns a resolver of paths inside root.
func NewDirResolver(root *os.Root) *DirResolver {
	return &DirResolver{root: root, dirs: map[string]resolvedDir{}}
}

// Path returns the clean Project-relative path ph with its directory
// resolved (Dir) and its last element as written. The repository-metadata
// rule applies to ph and to the result.
func (r *DirResolver) Path(ph string) (string, error) {
	if IsRepositoryMetadata(ph) {
		return "", &PathError{Reason: ReasonRepository}
	}
	dir, err := r.Dir(path.Dir(ph))
	if err != nil {
		return "", err
	}
	real := path.Join(dir, path.Base(ph))
	if IsRepositoryMetadata(real) {
		return "", &PathError{Reason: ReasonRepository}
	}
	return real, nil
}

// Dir returns the directory d with every symlink among its existing
// elements replaced by its target, the first missing element (or the
// first that is not a directory) and the rest as written.
//
// Errors: a *PathError (symlink_escape, repository_metadata),
// syscall.ELOOP past 8 links, or the classified error of a failing open
// other than "does not exist".
func (r *DirResolver) Dir(d string) (string, error) {
	if res, ok := r.dirs[d]; ok {
		return res.real, res.err
	}
	real, err := r.walkDir(d)
	r.dirs[d] = resolvedDir{real: real, err: err}
	return real, err
}

func (r *DirResolver) walkDir(d string) (string, error) {
	w, err := startWalk(r.root, true)
	if err != nil {
		return "", err
	}
	defer w.close()
	_, missing, err := w.resolveElems(strings.Split(d, "/"), false)
	if err != nil {
		return "", Classify(err)
	}
	real := path.Join(append([]string{w.real()}, missing...)...)
	if IsRepositoryMetadata(real) {
		return "", &PathError{Reason: ReasonRepository}
	}
	return real, nil
}

// joinElems joins path elements that are names (no "", "." or ".."); no
// elements is the root, ".".
func joinElems(elems []string) string {
	if len(elems) == 0 {
		return "."
	}
	return strings.Join(elems, "/")
}

// hasName reports whether elems holds a path element other than "" and ".".
func hasName(elems []string) bool {
	for _, e := range elems {
		if e != "" && e != "." {
			return true
		}
	}
	return false
}
