package search

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/devspace-dev/devspace/internal/project"
)

// dirHandle is an open directory shared by the walk and the grep workers
// reading its files. Its entries are opened by name from its descriptor,
// never through a symlink (project.OpenAt), so what the walk saw as a file
// or a directory cannot be swapped for a link to somewhere else. The last
// release closes it.
type dirHandle struct {
	dir  *os.File
	fd   int // dir's descriptor, valid while dir is open
	refs atomic.Int32
}

func newDirHandle(d *os.File) *dirHandle {
	h := &dirHandle{dir: d, fd: project.FD(d)}
	h.refs.Store(1)
	return h
}

func (h *dirHandle) acquire() { h.refs.Add(1) }

func (h *dirHandle) release() {
	if h.refs.Add(-1) == 0 {
		h.dir.Close()
	}
}

// dirent is a directory entry: its name and type bits.
type dirent struct {
	name string
	typ  fs.FileMode
}

// walkEntry is what a walk shows its visitor. dir is valid during the call
// only, unless the visitor acquires it.
type walkEntry struct {
	rel   string // Project-relative path
	name  string
	typ   fs.FileMode // type bits only
	depth int         // 1 for the children of the walk's start
	dir   *dirHandle
}

// size returns a regular file's size (0 when unknown).
func (e *walkEntry) size() int64 {
	if !e.typ.IsRegular() {
		return 0
	}
	_, size, err := project.LstatAt(e.dir.dir, e.name)
	if err != nil {
		return 0
	}
	return size
}

// walker is a depth-first, non-following, ignore-aware walk in Git index
// order. It is used by one goroutine.
type walker struct {
	ctx            context.Context
	budget         int // entries still allowed
	useIgnore      bool
	allowSensitive bool
	maxDepth       int // 0: unlimited
	// descend, when set, says whether a directory (Project-relative) may
	// hold wanted entries.
	descend func(rel string) bool
	// visit is called for every entry kept; it returns false to stop.
	visit func(e *walkEntry) bool
	// onHidden and onUnreadable, when set, are told about each sensitive
	// entry left out and each directory that could not be read.
	onHidden     func()
	onUnreadable func()

	limitHit bool
	stopped  bool
	steps    int
}

// walk visits the tree below the directory h, whose Project-relative path
// is rel, with the ignore rules of stack applying above it.
func (w *walker) walk(h *dirHandle, rel string, stack ignoreStack) {
	w.walkDir(h, rel, 1, stack)
}

func (w *walker) walkDir(h *dirHandle, rel string, depth int, stack ignoreStack) {
	if w.ctx.Err() != nil {
		w.stopped = true
		return
	}
	entries, err := w.readDir(h)
	if err != nil {
		w.unreadable()
		return
	}
	slices.SortFunc(entries, func(a, b dirent) int { return cmpKey(a.name, a.typ.IsDir(), b.name, b.typ.IsDir()) })
	if w.useIgnore {
		if i, ok := slices.BinarySearchFunc(entries, ".gitignore", func(e dirent, n string) int {
			return cmpKey(e.name, e.typ.IsDir(), n, false)
		}); ok && entries[i].typ.IsRegular() {
			if data, err := readSmallAt(h.dir, ".gitignore", maxIgnoreFileBytes); err == nil {
				stack = stack.push(parseIgnore(data, rel))
			}
		}
	}
	for _, d := range entries {
		if w.steps++; w.steps%ctxCheckEveryEntries == 0 && w.ctx.Err() != nil {
			w.stopped = true
		}
		if w.stopped {
			return
		}
		name := d.name
		if project.IsRepositoryMetadata(name) {
			continue
		}
		child := name
		if rel != "." {
			child = rel + "/" + name
		}
		typ := d.typ
		isDir := typ.IsDir()
		if w.useIgnore && len(stack) > 0 && stack.ignored(child, isDir) {
			continue
		}
		if !w.allowSensitive && project.IsSensitive(child) {
			if w.onHidden != nil {
				w.onHidden()
			}
			continue
		}
		enter := isDir && !w.limitHit && (w.maxDepth == 0 || depth < w.maxDepth) && (w.descend == nil || w.descend(child))
		// A Git directory under another name (a gitdir: target, a bare
		// repository) is skipped like a .git entry, name included. A
		// directory to enter is judged on its open descriptor, so what is
		// entered is what was judged; one only shown costs one probe.
		var sub *os.File
		var subErr error
		switch {
		case enter:
			// Never through a link: a directory swapped for a link after
			// the directory was read is not entered.
			sub, subErr = project.OpenAt(h.dir, name, true)
			if subErr == nil && project.IsGitDir(sub) {
				sub.Close()
				continue
			}
		case isDir && project.IsGitDirAt(h.dir, name):
			continue
		}
		e := walkEntry{rel: child, name: name, typ: typ, depth: depth, dir: h}
		if !w.visit(&e) {
			if sub != nil {
				sub.Close()
			}
			w.stopped = true
			return
		}
		if !enter {
			continue
		}
		if subErr != nil {
			w.unreadable()
			continue
		}
		sh := newDirHandle(sub)
		w.walkDir(sh, child, depth+1, stack)
		sh.release()
	}
}

func (w *walker) unreadable() {
	if w.onUnreadable != nil {
		w.onUnreadable()
	}
}

// readDir reads h's entries within the walk budget.
func (w *walker) readDir(h *dirHandle) ([]dirent, error) {
	entries, truncated, err := readDirents(h.dir, w.budget)
	w.budget -= len(entries)
	if truncated {
		w.limitHit = true
	}
	return entries, err
}

// cmpKey orders directory entries by name, a directory's name compared as
// if it ended in "/": then a depth-first walk yields paths in byte order
// with that convention (Git's index order).
func cmpKey(a string, aDir bool, b string, bDir bool) int {
	n := min(len(a), len(b))
	if c := strings.Compare(a[:n], b[:n]); c != 0 {
		return c
	}
	next := func(s string, dir bool) int {
		switch {
		case len(s) > n:
			return int(s[n])
		case dir:
			return '/'
		}
		return -1
	}
	ca, cb := next(a, aDir), next(b, bDir)
	switch {
	case ca < cb:
		return -1
	case ca > cb:
		return 1
	}
	return strings.Compare(a, b)
}

// readSmallAt reads the regular file name of the directory dir (not
// through a link), at most limit bytes.
func readSmallAt(dir *os.File, name string, limit int64) ([]byte, error) {
	f, err := project.OpenAt(dir, name, false)
	if err != nil {
		return nil, err
	}
	return readSmallFile(f, limit)
}

// readSmallFile reads the regular file f, at most limit bytes, and closes
// it.
func readSmallFile(f *os.File, limit int64) ([]byte, error) {
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

// ignoreAbove returns the ignore rules that apply inside the directory
// base (not including base's own .gitignore, which the walk reads):
// .git/info/exclude, then each ancestor's .gitignore from the root down.
func ignoreAbove(root *os.Root, base string) ignoreStack {
	var stack ignoreStack
	if data, err := readIgnoreAt(root, ".git/info/exclude"); err == nil {
		stack = stack.push(parseIgnore(data, "."))
	}
	if base == "." {
		return stack
	}
	dir := "."
	for _, elem := range strings.Split(base, "/") {
		if data, err := readIgnoreAt(root, path.Join(dir, ".gitignore")); err == nil {
			stack = stack.push(parseIgnore(data, dir))
		}
		dir = path.Join(dir, elem)
	}
	return stack
}

// readIgnoreAt reads an ignore file by a path on which no element is a
// link. Its rules shape what a walk shows; its content is never returned.
func readIgnoreAt(root *os.Root, rel string) ([]byte, error) {
	d, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	elems := strings.Split(rel, "/")
	for _, e := range elems[:len(elems)-1] {
		sub, err := project.OpenAt(d, e, true)
		d.Close()
		if err != nil {
			return nil, err
		}
		d = sub
	}
	defer d.Close()
	return readSmallAt(d, elems[len(elems)-1], maxIgnoreFileBytes)
}
