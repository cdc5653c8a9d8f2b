//go:build unix

package project

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Open flags. O_NOFOLLOW makes a symlink fail with ELOOP instead of being
// followed, so the walk reads the link itself and judges its target.
// O_NONBLOCK keeps a FIFO from blocking the open (it does not change reads
// of regular files or directories); O_NOCTTY keeps a terminal from becoming
// the controlling one.
const (
	dirFlags   = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK
	finalFlags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY
)

// raceRetries bounds how often one element is opened again when it changed
// between the open that said "symlink" and the readlink (or back).
const raceRetries = 8

// fdWalk is a walk in progress: the directories opened so far, from the
// root down, each by a name that was not a symlink when it was opened.
type fdWalk struct {
	base   *os.File // the root, opened through the *os.Root
	baseFD int
	fds    []int // fds[i] is names[i]'s directory, opened from fds[i-1] (or base)
	names  []string
	links  int
	// refuseGitDirs makes entering or opening a directory that is a Git
	// directory (whatever its name), the root included, a *PathError
	// (repository_metadata).
	refuseGitDirs bool
}

// startWalk starts a walk at root. With refuseGitDirs, a root that is a
// Git directory is refused at once.
func startWalk(root *os.Root, refuseGitDirs bool) (*fdWalk, error) {
	// O_NONBLOCK spares the *os.File's own flag round trips: it is only
	// ever used as the directory descriptor of openat.
	base, err := root.OpenFile(".", os.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, Classify(err)
	}
	w := &fdWalk{base: base, baseFD: FD(base), refuseGitDirs: refuseGitDirs}
	if refuseGitDirs && isGitDir(w.baseFD) {
		base.Close()
		return nil, &PathError{Reason: ReasonRepository}
	}
	return w, nil
}

func (w *fdWalk) close() {
	for _, fd := range w.fds {
		unix.Close(fd)
	}
	w.fds = nil
	w.base.Close()
}

// top is the descriptor of the directory reached so far.
func (w *fdWalk) top() int {
	if len(w.fds) == 0 {
		return w.baseFD
	}
	return w.fds[len(w.fds)-1]
}

// FD returns f's descriptor without the side effects of (*os.File).Fd,
// which switches a non-blocking descriptor to blocking mode with a system
// call each time it is asked. The descriptor is valid while f is open.
func FD(f *os.File) int {
	fd := -1
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(d uintptr) { fd = int(d) })
	}
	return fd
}

// real is the real Project-relative path of the directory reached so far.
func (w *fdWalk) real() string { return joinElems(w.names) }

// up leaves the directory reached so far for its parent; above the root
// is an escape.
func (w *fdWalk) up() error {
	if len(w.fds) == 0 {
		return &PathError{Reason: ReasonSymlink}
	}
	unix.Close(w.fds[len(w.fds)-1])
	w.fds = w.fds[:len(w.fds)-1]
	w.names = w.names[:len(w.names)-1]
	return nil
}

// follow reads the symlink name in the directory reached so far and returns
// its target's elements, with os.Root's rules: an absolute target escapes,
// an empty one does not exist, more than maxSymlinks links in one walk is
// ELOOP. errNotLink says the entry is no longer a symlink (it changed
// since the open that said it was).
func (w *fdWalk) follow(name string) ([]string, error) {
	if w.links++; w.links > maxSymlinks {
		return nil, syscall.ELOOP
	}
	target, err := readlinkat(w.top(), name)
	if err != nil {
		if errors.Is(err, unix.EINVAL) {
			w.links--
			return nil, errNotLink
		}
		return nil, err
	}
	switch {
	case target == "":
		return nil, syscall.ENOENT
	case strings.HasPrefix(target, "/"):
		return nil, &PathError{Reason: ReasonSymlink}
	}
	return strings.Split(target, "/"), nil
}

var errNotLink = errors.New("not a symlink any more")

// enter opens the directory name below the one reached so far, or
// returns the elements of its target when it is a symlink. A name that is
// neither is ENOTDIR.
func (w *fdWalk) enter(name string) (target []string, err error) {
	for range raceRetries {
		fd, err := openat(w.top(), name, dirFlags)
		switch {
		case err == nil:
			w.fds = append(w.fds, fd)
			w.names = append(w.names, name)
			if w.refuseGitDirs && isGitDir(fd) {
				return nil, &PathError{Reason: ReasonRepository}
			}
			return nil, nil
		case errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP):
			// O_DIRECTORY|O_NOFOLLOW on a symlink is ENOTDIR (or ELOOP):
			// the readlink tells a link from a file.
			target, err := w.follow(name)
			if errors.Is(err, errNotLink) {
				// Not a link (any more): a file is ENOTDIR, a directory that
				// replaced the link is opened again.
				st, serr := fstatat(w.top(), name)
				if serr != nil {
					return nil, serr
				}
				if st.Mode&unix.S_IFMT != unix.S_IFDIR {
					return nil, syscall.ENOTDIR
				}
				continue
			}
			return target, err
		default:
			return nil, err
		}
	}
	return nil, errUnstablePath
}

// errUnstablePath: an element kept changing between a symlink and
// something else while it was resolved.
var errUnstablePath = errors.New("path kept changing while it was resolved")

// openFinal opens the last element name below the directory reached so
// far, or returns the elements of its target when it is a symlink.
func (w *fdWalk) openFinal(name string) (f *os.File, target []string, err error) {
	for range raceRetries {
		fd, err := openat(w.top(), name, finalFlags)
		switch {
		case err == nil:
			if w.refuseGitDirs && isGitDir(fd) {
				unix.Close(fd)
				return nil, nil, &PathError{Reason: ReasonRepository}
			}
			w.names = append(w.names, name)
			return os.NewFile(uintptr(fd), name), nil, nil
		case errors.Is(err, unix.ELOOP):
			target, err := w.follow(name)
			if errors.Is(err, errNotLink) {
				continue
			}
			return nil, target, err
		default:
			return nil, nil, err
		}
	}
	return nil, nil, errUnstablePath
}

// reopen opens the directory reached so far for reading (the walk ended on
// "." or "..").
func (w *fdWalk) reopen() (*os.File, error) {
	fd, err := openat(w.top(), ".", dirFlags)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), "."), nil
}

// resolveElems walks todo from the directory reached so far. With open
// set, the last element is opened (any kind of file) and returned; without
// it, every element is entered as a directory and the walk stops at the
// first one that does not exist, returning it and the rest as written in
// missing.
func (w *fdWalk) resolveElems(todo []string, open bool) (f *os.File, missing []string, err error) {
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			if err := w.up(); err != nil {
				return nil, nil, err
			}
			continue
		}
		if open && !hasName(todo) {
			f, target, err := w.openFinal(name)
			if err != nil || f != nil {
				return f, nil, err
			}
			todo = append(target, todo...)
			continue
		}
		target, err := w.enter(name)
		if err != nil {
			if !open && (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)) {
				return nil, append([]string{name}, todo...), nil
			}
			return nil, nil, err
		}
		todo = append(target, todo...)
	}
	if open {
		f, err := w.reopen()
		return f, nil, err
	}
	return nil, nil, nil
}

func openat(dir int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dir, name, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func fstatat(dir int, name string) (*unix.Stat_t, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil {
			return &st, nil
		}
		if err != unix.EINTR {
			return nil, err
		}
	}
}

func readlinkat(dir int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dir, name, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
		if size >= 1<<16 {
			return "", syscall.ENAMETOOLONG
		}
	}
}

// isGitDir reports whether the directory fd may be what Git accepts as a
// repository directory (setup.c's is_git_directory): a HEAD, and either
// objects and refs or a commondir file (a linked worktree's gitdir, whose
// objects and refs live in the common directory). Any such directory is
// repository metadata, whatever its name: a worktree's .git file or a
// core.worktree setting can point Git at it. It is the one rule for both
// reads (Open, IsGitDir in walks) and writes (DirResolver).
//
// Git tests the markers with access(), which follows symlinks, so a
// marker counts when an entry of that name exists at all, of any type: a
// symlink to anything (even a dangling one, whose target may appear
// later) counts. Only ENOENT says a marker is missing; any other failure
// counts it as present, so that a doubt refuses. The price is that a
// plain directory holding user files named HEAD and objects and refs (or
// HEAD and commondir) is refused too.
//
// HEAD is asked first and alone: most directories have none, so they
// cost one fstatat. ENOTDIR there is exact, not a doubt: HEAD holds no
// slash, so only an fd that is not a directory (a file Open opened) gives
// it, and a file is no Git directory.
func isGitDir(fd int) bool {
	switch _, err := fstatat(fd, "HEAD"); {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return false
	}
	return hasEntry(fd, "commondir") || hasEntry(fd, "objects") && hasEntry(fd, "refs")
}

// IsGitDir reports whether the open directory dir is a Git directory
// (a HEAD with objects and refs, or with a commondir, each of any type),
// whatever its name: repository metadata, like a .git entry. Walks that
// open entries themselves (OpenAt) ask it of each directory they open,
// before showing or entering it; Open and DirResolver refuse such
// directories already. A file that is not a directory is not one.
func IsGitDir(dir *os.File) bool { return isGitDir(FD(dir)) }

// IsGitDirAt reports whether the entry name of the open directory dir is
// a directory that IsGitDir refuses, for a walk that shows the entry
// without entering it. Most directories have no HEAD: one fstatat of
// name/HEAD says so without opening them. Otherwise name is opened (never
// through a link) and judged by IsGitDir; a name that cannot be opened
// then counts as one (a doubt hides it). The probe follows name if it was
// swapped for a link since it was listed; that can only show or hide the
// name, which the caller does not enter.
func IsGitDirAt(dir *os.File, name string) bool {
	dirfd := FD(dir)
	switch _, err := fstatat(dirfd, name+"/HEAD"); {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return false
	}
	fd, err := openat(dirfd, name, dirFlags)
	if err != nil {
		return true
	}
	defer unix.Close(fd)
	return isGitDir(fd)
}

// hasEntry reports whether the directory fd has an entry name of any type,
// a symlink not followed; only ENOENT is "no".
func hasEntry(fd int, name string) bool {
	_, err := fstatat(fd, name)
	return !errors.Is(err, unix.ENOENT)
}

// OpenAt opens the entry name of the open directory dir as Open opens an
// element: read-only, non-blocking, without becoming a controlling
// terminal, and never through a symlink (a link is syscall.ELOOP). With
// wantDir, anything but a directory fails (ENOTDIR or ELOOP). It is the
// step of a walk that names entries one by one: the caller joins and
// judges the path (IsRepositoryMetadata, IsSensitive) of what it opened.
func OpenAt(dir *os.File, name string, wantDir bool) (*os.File, error) {
	fd, err := OpenAtFD(FD(dir), name, wantDir)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// OpenAtFD is OpenAt on the directory descriptor dirfd, returning the bare
// descriptor: for walks that open many files and need no *os.File (whose
// creation costs system calls of its own). The caller closes it.
func OpenAtFD(dirfd int, name string, wantDir bool) (int, error) {
	flags := finalFlags
	if wantDir {
		flags = dirFlags
	}
	return openat(dirfd, name, flags)
}

// LstatAt returns the type bits and size of the entry name of the open
// directory dir, without following a symlink.
func LstatAt(dir *os.File, name string) (fs.FileMode, int64, error) {
	st, err := fstatat(FD(dir), name)
	if err != nil {
		return 0, 0, err
	}
	var m fs.FileMode
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		m = fs.ModeDir
	case unix.S_IFLNK:
		m = fs.ModeSymlink
	case unix.S_IFIFO:
		m = fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m = fs.ModeSocket
	case unix.S_IFCHR:
		m = fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m = fs.ModeDevice
	default:
		m = fs.ModeIrregular
	}
	return m, st.Size, nil
}
