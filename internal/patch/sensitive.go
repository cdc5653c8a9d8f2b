package patch

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/devspace-dev/devspace/internal/project"
)

// maxSymlinks matches os.Root's limit on symlinks followed in one path.
const maxSymlinks = 8

// checkSensitive refuses ph unless allow is set when ph, or the path it
// really leads to inside the root (directory symlinks resolved by r), is
// one project.IsSensitive flags: "keys/config" is ".ssh/config" when keys
// is a symlink to .ssh. read_files applies the same rule. The last
// element is taken as written: Apply and Restore refuse a target that is
// itself a symlink.
func checkSensitive(r *resolver, ph string, allow bool) error {
	if allow {
		return nil
	}
	if project.IsSensitive(ph) {
		return &FileError{Path: ph, Err: &project.PathError{Reason: project.ReasonSensitive}}
	}
	real, err := r.realPath(ph)
	if err != nil {
		// The root refuses the path as well; say why now rather than
		// apply anything to a path whose real name is unknown.
		return fileErr(ph, err)
	}
	if real != ph && project.IsSensitive(real) {
		return &FileError{Path: ph, Err: &project.PathError{Reason: project.ReasonSensitive}}
	}
	return nil
}

// resolver finds where Project-relative paths lead inside root, with the
// rules os.Root applies (an absolute symlink target or one climbing above
// the root escapes). It caches each directory, so the many files of a
// patch in a few directories cost a few Lstats. Results describe the tree
// at one moment; writes still go through root, which stays contained
// whatever changed since. A resolver is not safe for concurrent use.
type resolver struct {
	root *os.Root
	dirs map[string]resolved // by directory as written
}

type resolved struct {
	real string
	err  error
}

func newResolver(root *os.Root) *resolver {
	return &resolver{root: root, dirs: map[string]resolved{}}
}

// realPath returns the clean Project-relative path ph with its directory
// resolved (realDir) and its last element as written.
func (r *resolver) realPath(ph string) (string, error) {
	dir, err := r.realDir(path.Dir(ph))
	if err != nil {
		return "", err
	}
	return path.Join(dir, path.Base(ph)), nil
}

// realDir returns the directory d with every symlink among its existing
// elements replaced by its target. The first missing element and the
// rest are kept as written, so a directory about to be created resolves
// too.
//
// Errors: a *project.PathError (symlink_escape) for an escape,
// syscall.ELOOP past maxSymlinks links in one element, or the classified
// error of a failing root operation other than "does not exist".
func (r *resolver) realDir(d string) (string, error) {
	if d == "." {
		return ".", nil
	}
	if res, ok := r.dirs[d]; ok {
		return res.real, res.err
	}
	parent, err := r.realDir(path.Dir(d))
	var real string
	if err == nil {
		real, err = resolveIn(r.root, parent, path.Base(d))
	}
	r.dirs[d] = resolved{real: real, err: err}
	return real, err
}

// resolveIn resolves the element name of dir, a directory already
// resolved (free of symlinks).
func resolveIn(root *os.Root, dir, name string) (string, error) {
	var done []string
	if dir != "." {
		done = strings.Split(dir, "/")
	}
	todo := []string{name}
	links := 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", &project.PathError{Reason: project.ReasonSymlink}
			}
			done = done[:len(done)-1]
			continue
		}
		p := path.Join(append(done, name)...)
		fi, err := root.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			// Nothing below a missing element can be a link.
			return path.Join(append(append(done, name), todo...)...), nil
		}
		if err != nil {
			return "", project.Classify(err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, name)
			continue
		}
		if links++; links > maxSymlinks {
			return "", syscall.ELOOP
		}
		target, err := root.Readlink(p)
		if err != nil {
			return "", project.Classify(err)
		}
		target = filepath.ToSlash(target)
		if target == "" || strings.HasPrefix(target, "/") || filepath.IsAbs(target) || filepath.VolumeName(target) != "" {
			return "", &project.PathError{Reason: project.ReasonSymlink}
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return path.Join(done...), nil
}
