package instructions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/devspace-dev/devspace/internal/project"
)

// Candidate names in priority order, before the configured fallbacks.
const (
	OverrideName = "AGENTS.override.md"
	DefaultName  = "AGENTS.md"
)

// readDirChunk bounds the directory entries held in memory at once while a
// directory is scanned for candidates.
const readDirChunk = 256

// maxNameBytes is the longest fallback name New accepts (NAME_MAX on Linux).
const maxNameBytes = 255

// ErrBadPath is returned, wrapped, by Batch.ForPath when its argument is not
// a clean Project-relative path: empty, absolute, with "." (other than the
// whole path), ".." or empty elements, a trailing slash, a NUL byte or
// invalid UTF-8. The instructions package owns it; the tool edge maps it to
// path_denied.
var ErrBadPath = errors.New("bad project path")

// Options configures a Finder. The zero value means the defaults.
type Options struct {
	// Fallbacks are extra file names tried, in order, after AGENTS.override.md
	// and AGENTS.md (for example "CLAUDE.md"). Each must be a plain file name:
	// no slash, backslash, NUL or control character, not "." or "..", valid
	// UTF-8, at most 255 bytes. Matching is ASCII case-insensitive; names equal
	// to an earlier candidate are dropped. Default: none.
	Fallbacks []string
	// PageBytes is the maximum size of a page of Finder.Root's Set. Default
	// (0): PageBytes. Otherwise it must be at least MinPageBytes.
	PageBytes int
}

// Finder discovers instruction files below one Project root. It is safe for
// concurrent use. It borrows the *os.Root: the caller keeps ownership and
// closes it after the last call.
type Finder struct {
	root      *os.Root
	names     []string // candidate names in priority order
	pageBytes int
}

// New returns a Finder reading through root. It fails when root is nil or an
// option is invalid (see Options).
func New(root *os.Root, opts Options) (*Finder, error) {
	if root == nil {
		return nil, errors.New("instructions: nil root")
	}
	pageBytes := opts.PageBytes
	switch {
	case pageBytes == 0:
		pageBytes = PageBytes
	case pageBytes < MinPageBytes:
		return nil, fmt.Errorf("instructions: page size %d is below the minimum of %d bytes", pageBytes, MinPageBytes)
	}
	names := []string{OverrideName, DefaultName}
	for _, n := range opts.Fallbacks {
		if err := checkName(n); err != nil {
			return nil, fmt.Errorf("instructions: fallback name %q: %w", n, err)
		}
		if !slices.ContainsFunc(names, func(m string) bool { return asciiEqualFold(m, n) }) {
			names = append(names, n)
		}
	}
	return &Finder{root: root, names: names, pageBytes: pageBytes}, nil
}

func checkName(n string) error {
	switch {
	case n == "", n == ".", n == "..":
		return errors.New("not a file name")
	case len(n) > maxNameBytes:
		return errors.New("too long")
	case !utf8.ValidString(n):
		return errors.New("invalid UTF-8")
	case strings.ContainsAny(n, `/\`):
		return errors.New("contains a path separator")
	case strings.ContainsFunc(n, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return errors.New("contains a control character")
	}
	return nil
}

// Root returns the root instruction set: the file the Project root directory
// contributes, rendered and paged. When there is none it returns an empty
// Set (no files, no pages, Revision ""). Errors are ctx's error or an I/O
// failure while listing the root or reading a chosen file; they never
// contain a host path.
func (f *Finder) Root(ctx context.Context) (*Set, error) {
	file, ok, err := f.chooseIn(ctx, ".")
	if err != nil {
		return nil, err
	}
	if !ok {
		return NewSet(nil, f.pageBytes), nil
	}
	return NewSet([]File{file}, f.pageBytes), nil
}

// Batch returns a Batch for the paths of one call (a tool call touching
// many files).
func (f *Finder) Batch() *Batch {
	return &Batch{f: f, dirs: map[string]choice{}}
}

// Batch answers ForPath for the many paths of one call, listing each
// directory and reading the file it contributes at most once: the work
// grows with the distinct directories, not with the paths (200 files of a
// patch usually share a handful). What a directory contributes is read at its first
// use and then remembered for the Batch's life, so a Batch must not
// outlive the call it serves; failures are not remembered. Get one from
// Finder.Batch (the zero value is not usable). A Batch is not safe for
// concurrent use; the Finder it came from stays so.
type Batch struct {
	f    *Finder
	dirs map[string]choice
}

type choice struct {
	file File
	ok   bool
}

// ForPath returns the nested instruction files that apply to the
// Project-relative path rel, outermost first: the file each directory from
// the root (excluded; see Root) down to rel's parent contributes, and also
// rel's own when rel is a directory. rel need not exist (a file about to be
// created). Directories that do not exist, are not directories or cannot be
// opened inside the root contribute nothing. With no files it returns an
// empty, non-nil slice.
//
// rel must be slash-separated and clean (see ErrBadPath); "." means the root
// itself and yields no files. Directories already looked at by this Batch
// are not read again.
func (b *Batch) ForPath(ctx context.Context, rel string) ([]File, error) {
	return b.f.forPath(ctx, rel, b.chooseIn)
}

func (b *Batch) chooseIn(ctx context.Context, dir string) (File, bool, error) {
	if c, seen := b.dirs[dir]; seen {
		return c.file, c.ok, nil
	}
	file, ok, err := b.f.chooseIn(ctx, dir)
	if err != nil {
		return File{}, false, err
	}
	b.dirs[dir] = choice{file, ok}
	return file, ok, nil
}

// forPath is ForPath with chooseIn as the way to learn what a directory
// contributes.
func (f *Finder) forPath(ctx context.Context, rel string, chooseIn func(context.Context, string) (File, bool, error)) ([]File, error) {
	if strings.IndexByte(rel, 0) >= 0 || !fs.ValidPath(rel) {
		return nil, fmt.Errorf("instructions: %w: %q", ErrBadPath, rel)
	}
	files := []File{}
	if rel == "." {
		return files, nil
	}
	dirs := strings.Split(rel, "/")
	n := len(dirs) - 1 // directories above rel
	if fi, err := f.root.Stat(rel); err == nil && fi.IsDir() {
		n++
	}
	for i := 1; i <= n; i++ {
		file, ok, err := chooseIn(ctx, strings.Join(dirs[:i], "/"))
		if err != nil {
			return nil, err
		}
		if ok {
			files = append(files, file)
		}
	}
	return files, nil
}

// chooseIn returns the file directory dir contributes, with ok false when it
// contributes none.
func (f *Finder) chooseIn(ctx context.Context, dir string) (file File, ok bool, err error) {
	matches, err := f.scan(ctx, dir)
	if err != nil {
		return File{}, false, err
	}
	for _, names := range matches {
		slices.Sort(names) // byte order: AGENTS.md < Agents.md < agents.md
		for _, name := range names {
			rel := name
			if dir != "." {
				rel = dir + "/" + name
			}
			file, ok, err := f.load(rel)
			if err != nil {
				return File{}, false, err
			}
			if !ok {
				continue
			}
			if strings.TrimSpace(file.Content) == "" {
				return File{}, false, nil
			}
			return file, true, nil
		}
	}
	return File{}, false, nil
}

// scan lists dir and returns, for each candidate name in priority order, the
// entry names matching it. A directory that cannot be opened inside the root
// yields no matches; a failure while listing an opened directory is an error.
func (f *Finder) scan(ctx context.Context, dir string) ([][]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// project.Open follows links only to judge where they lead: a
	// directory that is repository metadata yields no matches.
	d, _, err := project.Open(f.root, dir, false)
	if err != nil {
		return nil, nil
	}
	if fi, err := d.Stat(); err != nil || !fi.IsDir() {
		d.Close()
		return nil, nil
	}
	defer d.Close()
	matches := make([][]string, len(f.names))
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		entries, err := d.ReadDir(readDirChunk)
		for _, e := range entries {
			name := e.Name()
			for i, c := range f.names {
				if asciiEqualFold(name, c) {
					matches[i] = append(matches[i], name)
					break
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return matches, nil
		}
		if err != nil {
			return nil, fmt.Errorf("instructions: list %q: %w", dir, hostFree(err))
		}
	}
}

// load reads the candidate rel. ok is false when rel is not usable (see the
// package doc); err reports a read failure of an opened regular file.
func (f *Finder) load(rel string) (file File, ok bool, err error) {
	// project.Open follows symlinks only while they stay inside the root,
	// and refuses a candidate whose real path is repository metadata or a
	// sensitive file (AGENTS.md → .env): instructions are delivered
	// unasked, so they must never carry a secret. The Stat of the open
	// file decides the rest.
	h, _, err := project.Open(f.root, rel, false)
	if err != nil {
		return File{}, false, nil
	}
	defer h.Close()
	if fi, err := h.Stat(); err != nil || !fi.Mode().IsRegular() {
		return File{}, false, nil
	}
	data, err := io.ReadAll(io.LimitReader(h, MaxFileBytes+1))
	if err != nil {
		return File{}, false, fmt.Errorf("instructions: read %q: %w", rel, hostFree(err))
	}
	return NewFile(rel, TrustRepository, data), true, nil
}

// hostFree strips the *fs.PathError wrapper, whose path is a host path.
func hostFree(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	return err
}

// asciiEqualFold is strings.EqualFold restricted to ASCII letters, so that
// for example "AGENTſ.md" (long s) does not match AGENTS.md.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lower(a[i]) != lower(b[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}
