package project

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// maxSymlinks matches os.Root's limit on symlinks followed in one path, so
// the resolvers here and an open through the root agree on what resolves.
const maxSymlinks = 8

// RealPath returns the real path of the clean Project-relative path rel
// inside root: every symlink replaced by its target, with the rules
// os.Root applies (absolute targets and targets climbing above the root
// escape, whether or not they exist; ".." in a target goes to the parent
// of the directory reached so far). It also returns the Lstat of the final
// element, which is never a symlink. Every element must exist.
//
// Errors: a *PathError (symlink_escape) for an escape, or the error of the
// failing root operation (not found, not a directory, permission), passed
// through Classify; syscall.ELOOP past maxSymlinks.
//
// The result describes the tree at one moment; the caller opens the real
// path through root (which stays contained whatever changed since) and
// checks the opened file is the one resolved.
func RealPath(root *os.Root, rel string) (string, fs.FileInfo, error) {
	if rel == "." {
		fi, err := root.Lstat(".")
		return ".", fi, Classify(err)
	}
	done, last, err := walk(root, nil, strings.Split(rel, "/"), true)
	if err != nil {
		return "", nil, err
	}
	real := joinElems(done)
	if last == nil { // rel resolved to a directory reached through ".."
		fi, err := root.Lstat(real)
		if err != nil {
			return "", nil, Classify(err)
		}
		return real, fi, nil
	}
	return real, last, nil
}

// DirResolver finds where Project-relative paths lead inside root when
// they may not exist yet, as the targets of a patch: each directory is
// resolved like RealPath, except that the first missing element and the
// rest are kept as written, so a directory about to be created resolves
// too. It caches each directory, so the many files of a patch in a few
// directories cost a few Lstats. Results describe the tree at one
// moment; writes still go through root, which stays contained whatever
// changed since. A DirResolver is not safe for concurrent use.
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
// resolved (Dir) and its last element as written.
func (r *DirResolver) Path(ph string) (string, error) {
	dir, err := r.Dir(path.Dir(ph))
	if err != nil {
		return "", err
	}
	return path.Join(dir, path.Base(ph)), nil
}

// Dir returns the directory d with every symlink among its existing
// elements replaced by its target, the first missing element and the rest
// as written.
//
// Errors: a *PathError (symlink_escape) for an escape, syscall.ELOOP past
// maxSymlinks links in one element, or the classified error of a failing
// root operation other than "does not exist".
func (r *DirResolver) Dir(d string) (string, error) {
	if d == "." {
		return ".", nil
	}
	if res, ok := r.dirs[d]; ok {
		return res.real, res.err
	}
	parent, err := r.Dir(path.Dir(d))
	var real string
	if err == nil {
		var done []string
		if parent != "." {
			done = strings.Split(parent, "/")
		}
		var elems []string
		if elems, _, err = walk(r.root, done, []string{path.Base(d)}, false); err == nil {
			real = path.Join(append([]string{"."}, elems...)...)
		}
	}
	r.dirs[d] = resolvedDir{real: real, err: err}
	return real, err
}

// walk resolves the path elements todo below done, the elements of a
// directory inside root that holds no symlink (none: the root itself),
// following symlinks with os.Root's rules, and returns the real path's
// elements with the Lstat of the last one (nil when the walk ended on
// "..", or on a missing element when not strict).
//
// strict: every element must exist, and only directories may have names
// after them (syscall.ENOTDIR). Otherwise, at the first element that does
// not exist or sits below a non-directory, that element and the rest are
// returned as written.
func walk(root *os.Root, done, todo []string, strict bool) ([]string, fs.FileInfo, error) {
	done = append(make([]string, 0, len(done)+len(todo)), done...)
	var last fs.FileInfo
	links := 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return nil, nil, &PathError{Reason: ReasonSymlink}
			}
			done = done[:len(done)-1]
			last = nil
			continue
		}
		p := joinElems(append(done, name))
		fi, err := root.Lstat(p)
		if err != nil {
			if !strict && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)) {
				// Nothing below a missing element can be a link.
				return append(append(done, name), todo...), nil, nil
			}
			return nil, nil, Classify(err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if links++; links > maxSymlinks {
				return nil, nil, syscall.ELOOP
			}
			target, err := root.Readlink(p)
			if err != nil {
				return nil, nil, Classify(err)
			}
			target = filepath.ToSlash(target)
			if target == "" {
				return nil, nil, syscall.ENOENT
			}
			if strings.HasPrefix(target, "/") || filepath.IsAbs(target) || filepath.VolumeName(target) != "" {
				return nil, nil, &PathError{Reason: ReasonSymlink}
			}
			todo = append(strings.Split(target, "/"), todo...)
			continue
		}
		if strict && !fi.IsDir() && hasName(todo) {
			return nil, nil, syscall.ENOTDIR
		}
		done = append(done, name)
		last = fi
	}
	return done, last, nil
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
