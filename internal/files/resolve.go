package files

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/devspace-dev/devspace/internal/project"
)

// maxSymlinks matches os.Root's limit on symlinks followed in one path, so
// resolve and the open through the root agree on what resolves.
const maxSymlinks = 8

// resolve returns the real path of the clean Project-relative path rel inside
// root: every symlink replaced by its target, with the same rules os.Root
// applies (absolute targets and targets climbing above the root escape,
// whether or not they exist; ".." in a target goes to the parent of the
// directory reached so far). It also returns the Lstat of the final element,
// which is never a symlink.
//
// Errors: a *project.PathError (symlink_escape) for an escape, or the error
// of the failing root operation (not found, not a directory, permission),
// passed through project.Classify; syscall.ELOOP past maxSymlinks.
//
// The result describes the tree at one moment; the caller opens the real
// path through root (which stays contained whatever changed since) and
// checks the opened file is the one resolved.
func resolve(root *os.Root, rel string) (string, fs.FileInfo, error) {
	if rel == "." {
		fi, err := root.Lstat(".")
		return ".", fi, project.Classify(err)
	}
	todo := strings.Split(rel, "/")
	done := make([]string, 0, len(todo))
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
				return "", nil, &project.PathError{Reason: project.ReasonSymlink}
			}
			done = done[:len(done)-1]
			last = nil
			continue
		}
		p := strings.Join(append(done, name), "/")
		fi, err := root.Lstat(p)
		if err != nil {
			return "", nil, project.Classify(err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			links++
			if links > maxSymlinks {
				return "", nil, syscall.ELOOP
			}
			target, err := root.Readlink(p)
			if err != nil {
				return "", nil, project.Classify(err)
			}
			target = filepath.ToSlash(target)
			if target == "" {
				return "", nil, syscall.ENOENT
			}
			if strings.HasPrefix(target, "/") || filepath.IsAbs(target) || filepath.VolumeName(target) != "" {
				return "", nil, &project.PathError{Reason: project.ReasonSymlink}
			}
			todo = append(strings.Split(target, "/"), todo...)
			continue
		}
		if !fi.IsDir() && hasName(todo) {
			return "", nil, syscall.ENOTDIR
		}
		done = append(done, name)
		last = fi
	}
	if last == nil { // rel resolved to a directory reached through ".."
		real := "."
		if len(done) > 0 {
			real = strings.Join(done, "/")
		}
		fi, err := root.Lstat(real)
		if err != nil {
			return "", nil, project.Classify(err)
		}
		return real, fi, nil
	}
	return strings.Join(done, "/"), last, nil
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
