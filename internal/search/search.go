// Package search implements the inspect tool's operations over one
// Project: ls (list a directory tree), glob (match paths with a doublestar
// pattern) and grep (search file contents for a literal or an RE2 pattern).
// It knows nothing of MCP: results are plain structs with JSON tags.
//
// Every model-supplied path is checked with project.CleanRel first, then
// opened with project.Open: element by element from the Project root's
// descriptor, links read and judged, never followed blindly. An explicit
// operation path may pass through links that stay inside the Project; it
// is judged (sensitive files, repository metadata) by its real path, and
// results name what the caller asked for. Walks:
//
//   - never follow symbolic links: every entry is opened by name from its
//     directory's descriptor with O_NOFOLLOW (project.OpenAt), so a link
//     swapped in after the directory was read is not followed; a link is
//     listed as a "symlink" entry by ls and glob, and grep neither
//     descends into linked directories nor reads linked files (like
//     ripgrep without --follow);
//   - skip every entry that is repository metadata (.git in any spelling,
//     project.IsRepositoryMetadata, or a directory that is a Git directory
//     under another name, project.IsGitDir: a gitdir: target, a bare
//     repository), and refuse explicit paths inside one;
//   - honour .gitignore files (the Project root's and nested ones, which
//     need no Git repository) and .git/info/exclude, unless the operation
//     sets includeIgnored. Ignore files above the Project root are never
//     read. An explicit operation path is walked even when it is itself
//     ignored; what is below it still follows the rules;
//   - include hidden files (dot files) unless an ignore rule excludes them;
//   - hide sensitive files (project.IsSensitive) unless the caller allows
//     them, counting what was hidden;
//   - visit entries in byte order of their paths, a directory sorting as
//     if its name ended in "/" (Git's index order), so results are
//     deterministic whatever the parallelism;
//   - stop after Limits.MaxEntries directory entries (walkLimitHit).
//
// grep reports each matching line once, with its 1-based number. A regular
// expression is matched within single lines ("^", "$", "\A", "\z" match at
// line boundaries; classes never match a newline). Files with a NUL byte in
// their first 8 KiB are skipped as binary, and files over
// Limits.MaxFileBytes are not read at all (counted in Result.TooLarge): a
// sparse file of a terabyte with a text head would otherwise be read for an
// hour under the Project's read lock. Memory does not depend on file
// or line sizes: files are read through a 256 KiB buffer, and a longer line
// is searched in overlapping windows. Files are searched in parallel
// (Limits.Workers), and the results taken in walk order.
//
// The equivalent ripgrep invocation, used as the benchmark baseline, is
// `rg --hidden --no-require-git --no-ignore-global --no-ignore-dot
// --no-ignore-parent --glob '!.git'`.
package search

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/devspace-dev/devspace/internal/project"
)

// Default limits (docs/design.md §9). Each is a field of Limits, so the operator
// can override it through the configuration.
const (
	DefaultMaxOps          = 8
	DefaultMaxEntries      = 100_000
	DefaultMatchLimit      = 100
	DefaultMaxMatches      = 5_000
	DefaultListEntryLimit  = 1_000
	DefaultMaxListEntries  = 5_000
	DefaultMaxLineChars    = 500
	DefaultMaxContext      = 10
	DefaultMaxOutputBytes  = 256 << 10
	DefaultMaxFileBytes    = 1 << 30
	minOutputBytes         = 1 << 10
	minLineChars           = 16
	binaryProbeBytes       = 8 << 10
	bufferBytes            = 256 << 10
	inFlightFilesPerWorker = 64
	ctxCheckEveryEntries   = 256
	resultOverheadBytes    = 32
)

// Operation kinds.
const (
	KindLs   = "ls"
	KindGlob = "glob"
	KindGrep = "grep"
)

// Error codes of OpError.Code. They are stable and snake_case; the tool
// edge documents them in docs/errors.md.
const (
	CodePathDenied      = "path_denied"      // outside the Project, inside .git, or otherwise refused
	CodeNotFound        = "not_found"        // the operation path does not exist
	CodeNotDirectory    = "not_directory"    // glob's path is a file
	CodeInvalidPattern  = "invalid_pattern"  // missing or malformed pattern or include
	CodeInvalidArgument = "invalid_argument" // unknown op, negative depth, limit or context
	CodeUnreadable      = "unreadable"       // the operation path exists but cannot be read
	CodeTooLarge        = "too_large"        // grep's file is over Limits.MaxFileBytes
)

// Entry types.
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
	TypeOther   = "other"
)

// ErrTooManyOps is returned (wrapped) by Searcher.Run when more than
// Limits.MaxOps operations are sent; ErrNoOps when none is. This package
// owns them; the tool edge maps them to an input error.
var (
	ErrTooManyOps = errors.New("too many operations")
	ErrNoOps      = errors.New("no operation")
)

// Limits bounds the work and the output of one Run. A zero field means its
// default (the Default* constant of the same name).
type Limits struct {
	// MaxOps is the most operations one Run accepts. Default 8.
	MaxOps int
	// MaxEntries is the most directory entries one operation's walk reads;
	// the walk then stops and the result says walkLimitHit. Default 100,000.
	MaxEntries int
	// DefaultMatches is grep's limit when the operation sets none; MaxMatches
	// caps what it may set. Defaults 100 and 5,000.
	DefaultMatches int
	MaxMatches     int
	// DefaultListEntries is the ls and glob limit when the operation sets
	// none; MaxListEntries caps what it may set. Defaults 1,000 and 5,000.
	DefaultListEntries int
	MaxListEntries     int
	// MaxLineChars is the longest line (in characters) a match or a
	// context line shows; longer ones are cut around the match and marked
	// with "…". Default 500.
	MaxLineChars int
	// MaxContext caps grep's context lines before and after. Default 10.
	MaxContext int
	// MaxOutputBytes bounds the size of one operation's result (paths and
	// texts); past it the result is truncated. Default 256 KiB.
	MaxOutputBytes int
	// Workers is how many files grep reads in parallel. Default GOMAXPROCS.
	Workers int
	// MaxFileBytes is the largest file grep reads; a larger one in a walk
	// is skipped and counted in Result.TooLarge, and one named by the
	// operation's path is too_large. Default 1 GiB, read_files' bound:
	// what read_files would not read, grep does not search either.
	MaxFileBytes int64
}

// DefaultLimits returns the limits of docs/design.md §9.
func DefaultLimits() Limits {
	return Limits{
		MaxOps:             DefaultMaxOps,
		MaxEntries:         DefaultMaxEntries,
		DefaultMatches:     DefaultMatchLimit,
		MaxMatches:         DefaultMaxMatches,
		DefaultListEntries: DefaultListEntryLimit,
		MaxListEntries:     DefaultMaxListEntries,
		MaxLineChars:       DefaultMaxLineChars,
		MaxContext:         DefaultMaxContext,
		MaxOutputBytes:     DefaultMaxOutputBytes,
		MaxFileBytes:       DefaultMaxFileBytes,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	for _, f := range []struct{ v, def *int }{
		{&l.MaxOps, &d.MaxOps}, {&l.MaxEntries, &d.MaxEntries}, {&l.DefaultMatches, &d.DefaultMatches},
		{&l.MaxMatches, &d.MaxMatches}, {&l.DefaultListEntries, &d.DefaultListEntries},
		{&l.MaxListEntries, &d.MaxListEntries}, {&l.MaxLineChars, &d.MaxLineChars},
		{&l.MaxContext, &d.MaxContext}, {&l.MaxOutputBytes, &d.MaxOutputBytes},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = d.MaxFileBytes
	}
	l.DefaultMatches = min(l.DefaultMatches, l.MaxMatches)
	l.DefaultListEntries = min(l.DefaultListEntries, l.MaxListEntries)
	l.MaxLineChars = max(l.MaxLineChars, minLineChars)
	l.MaxOutputBytes = max(l.MaxOutputBytes, minOutputBytes)
	return l
}

// Op is one inspect operation.
type Op struct {
	// Kind is "ls", "glob" or "grep".
	Kind string `json:"op"`
	// Path is the Project-relative directory to list (ls) or to search
	// below (glob, grep; grep also accepts a file). Default ".".
	Path string `json:"path,omitempty"`
	// Pattern is the doublestar pattern (glob), matched against paths
	// relative to Path, or what grep looks for. Required for both.
	Pattern string `json:"pattern,omitempty"`
	// Regex makes grep's Pattern an RE2 expression, matched line by line;
	// otherwise it is a literal string.
	Regex bool `json:"regex,omitempty"`
	// IgnoreCase makes glob and grep case-insensitive.
	IgnoreCase bool `json:"ignoreCase,omitempty"`
	// Include restricts grep to files matching this doublestar pattern:
	// against the base name when it holds no "/", otherwise against the
	// path relative to Path.
	Include string `json:"include,omitempty"`
	// Context is how many lines grep shows before and after each match
	// (capped by Limits.MaxContext).
	Context int `json:"context,omitempty"`
	// Limit is the most matches (grep) or entries (ls, glob) returned.
	// Default and cap come from Limits.
	Limit int `json:"limit,omitempty"`
	// Depth is how deep ls lists (default 1: Path's children only); for
	// glob and grep, a maximum depth (default unlimited).
	Depth int `json:"depth,omitempty"`
	// IncludeIgnored also walks what .gitignore files exclude (.git is
	// still skipped).
	IncludeIgnored bool `json:"includeIgnored,omitempty"`
}

// Result is the outcome of one Op. Exactly one of Entries (ls, glob),
// Matches (grep) or Error is meaningful.
type Result struct {
	Op string `json:"op"`
	// Path is the operation's cleaned Project-relative path.
	Path    string  `json:"path,omitempty"`
	Entries []Entry `json:"entries,omitempty"`
	Matches []Match `json:"matches,omitempty"`
	// FilesSearched counts the files grep read (binary ones excluded).
	FilesSearched int `json:"filesSearched,omitempty"`
	// Truncated says that more entries or matches exist than returned
	// (the limit or the output size was reached).
	Truncated bool `json:"truncated,omitempty"`
	// WalkLimitHit says the walk stopped at Limits.MaxEntries entries:
	// parts of the tree were not looked at.
	WalkLimitHit bool `json:"walkLimitHit,omitempty"`
	// SensitiveHidden counts sensitive files left out because the caller
	// did not allow them.
	SensitiveHidden int `json:"sensitiveHidden,omitempty"`
	// Unreadable counts directories and files that could not be read.
	Unreadable int `json:"unreadable,omitempty"`
	// TooLarge counts files grep did not read because they are larger
	// than Limits.MaxFileBytes.
	TooLarge int      `json:"tooLarge,omitempty"`
	Error    *OpError `json:"error,omitempty"`
}

// Entry is a file system entry found by ls or glob.
type Entry struct {
	// Path is Project-relative.
	Path string `json:"path"`
	// Type is "file", "dir", "symlink" (never followed) or "other".
	Type string `json:"type"`
	// Size is a file's size in bytes.
	Size int64 `json:"size,omitempty"`
}

// Match is a line grep found.
type Match struct {
	// Path is Project-relative.
	Path string `json:"path"`
	// Line is 1-based.
	Line int `json:"line"`
	// Text is the line without its terminator, cut to Limits.MaxLineChars
	// around the match ("…" marks a cut).
	Text string `json:"text"`
	// Before and After are context lines, cut from their start.
	Before []string `json:"before,omitempty"`
	After  []string `json:"after,omitempty"`
}

// OpError is a per-operation failure. Message never holds a host path.
type OpError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Searcher runs inspect operations. It is safe for concurrent use.
type Searcher struct {
	limits   Limits
	scanners sync.Pool // *scanner buffers, reused across operations
}

// New returns a Searcher with the given limits (zero fields mean defaults).
func New(limits Limits) *Searcher {
	return &Searcher{limits: limits.withDefaults()}
}

// Limits returns the effective limits.
func (s *Searcher) Limits() Limits { return s.limits }

// Run performs ops in order through root (which the caller keeps and
// closes) and returns one Result per Op. A failing operation carries its
// Error and does not stop the others. Run fails only for a bad call:
// no operation (ErrNoOps), too many (ErrTooManyOps), a nil root, or a
// cancelled ctx (ctx.Err()). allowSensitive lets sensitive files appear.
func (s *Searcher) Run(ctx context.Context, root *os.Root, ops []Op, allowSensitive bool) ([]Result, error) {
	switch {
	case root == nil:
		return nil, errors.New("search: nil root")
	case len(ops) == 0:
		return nil, fmt.Errorf("search: %w", ErrNoOps)
	case len(ops) > s.limits.MaxOps:
		return nil, fmt.Errorf("search: %w: %d sent, at most %d", ErrTooManyOps, len(ops), s.limits.MaxOps)
	}
	results := make([]Result, len(ops))
	for i, op := range ops {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		results[i] = s.run(ctx, root, op, allowSensitive)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return results, nil
}

func (s *Searcher) run(ctx context.Context, root *os.Root, op Op, allowSensitive bool) Result {
	res := Result{Op: op.Kind}
	base, err := project.CleanRel(op.Path)
	if err != nil {
		return failed(res, opError(err))
	}
	res.Path = base
	switch {
	case op.Kind != KindLs && op.Kind != KindGlob && op.Kind != KindGrep:
		return failed(res, &OpError{CodeInvalidArgument, `op must be "ls", "glob" or "grep"`})
	case op.Depth < 0, op.Limit < 0, op.Context < 0:
		return failed(res, &OpError{CodeInvalidArgument, "depth, limit and context must not be negative"})
	}
	st, e := openStart(root, base, allowSensitive)
	switch {
	case e == errHidden:
		res.SensitiveHidden = 1
		return res
	case e != nil:
		return failed(res, e)
	}
	switch op.Kind {
	case KindLs:
		e = s.ls(ctx, root, op, st, allowSensitive, &res)
	case KindGlob:
		e = s.glob(ctx, root, op, st, allowSensitive, &res)
	default:
		e = s.grep(ctx, root, op, st, allowSensitive, &res)
	}
	if e != nil {
		return failed(Result{Op: res.Op, Path: res.Path}, e)
	}
	if st.real != base {
		for i := range res.Entries {
			res.Entries[i].Path = displayPath(base, st.real, res.Entries[i].Path)
		}
		for i := range res.Matches {
			res.Matches[i].Path = displayPath(base, st.real, res.Matches[i].Path)
		}
	}
	return res
}

// start is the path an operation starts from, opened by the resolver: the
// operation owns file and closes it.
type start struct {
	file *os.File
	real string // the real Project-relative path of file
	info fs.FileInfo
}

// errHidden says an operation's own path is a sensitive file the caller
// did not allow: the operation shows nothing and counts it as hidden.
var errHidden = &OpError{Code: "sensitive_hidden"}

// errRepository is the path_denied of a path that is repository metadata:
// a .git element, or a Git directory under another name.
var errRepository = &OpError{CodePathDenied, "repository metadata (.git) is not Project content; review changes with show_changes"}

// openStart opens base with project.Open's rules (no link followed
// unjudged; .git and sensitive real paths refused).
func openStart(root *os.Root, base string, allowSensitive bool) (start, *OpError) {
	f, real, err := project.Open(root, base, allowSensitive)
	switch {
	case errors.Is(err, project.ErrSensitive):
		return start{}, errHidden
	case err != nil:
		return start{}, opError(err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return start{}, opError(err)
	}
	return start{file: f, real: real, info: fi}, nil
}

// displayPath returns the path p found below the real path real of an
// operation's base as the caller named it: below base. Results name what
// the caller asked for; the rules were judged on the real path.
func displayPath(base, real, p string) string {
	switch {
	case p == real:
		return base
	case real == ".":
		return base + "/" + p
	case strings.HasPrefix(p, real+"/"):
		return base + p[len(real):]
	}
	return p
}

func failed(res Result, e *OpError) Result {
	res.Error = e
	return res
}

// opError maps a file system error from the root to an OpError whose
// message holds no host path.
func opError(err error) *OpError {
	err = project.Classify(err)
	switch {
	case errors.Is(err, project.ErrPathDenied):
		if pe, ok := errors.AsType[*project.PathError](err); ok && pe.Reason == project.ReasonRepository {
			return errRepository
		}
		return &OpError{CodePathDenied, err.Error()}
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return &OpError{CodeNotFound, "no such file or directory"}
	case errors.Is(err, fs.ErrPermission):
		return &OpError{CodeUnreadable, "permission denied"}
	}
	return &OpError{CodeUnreadable, project.Scrub(err).Error()}
}

func (s *Searcher) workers() int {
	if s.limits.Workers > 0 {
		return s.limits.Workers
	}
	return runtime.GOMAXPROCS(0)
}

func clampLimit(v, def, maxV int) int {
	if v == 0 {
		return def
	}
	return min(v, maxV)
}

func entryType(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return TypeDir
	case m&fs.ModeSymlink != 0:
		return TypeSymlink
	case m.IsRegular():
		return TypeFile
	}
	return TypeOther
}

// TouchedPaths returns the Project-relative paths the results point the
// model at, for finding nested instruction files (instructions.Finder's
// ForPath takes files and directories): each successful operation's path,
// grep's matching files and glob's hits. A path that is an ancestor of
// another in the set is left out, since whatever applies to it applies to
// the deeper one too. Sorted; ls entries do not count (a listing is not a
// visit).
func TouchedPaths(results []Result) []string {
	set := map[string]bool{}
	for _, r := range results {
		if r.Error != nil {
			continue
		}
		set[r.Path] = true
		for _, m := range r.Matches {
			set[m.Path] = true
		}
		if r.Op == KindGlob {
			for _, e := range r.Entries {
				set[e.Path] = true
			}
		}
	}
	delete(set, "")
	paths := make([]string, 0, len(set))
	for p := range set {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if p == "." {
			if len(paths) == 1 {
				out = append(out, p)
			}
			continue
		}
		// Descendants of p sort contiguously from p+"/".
		i, _ := slices.BinarySearch(paths, p+"/")
		if i < len(paths) && strings.HasPrefix(paths[i], p+"/") {
			continue
		}
		out = append(out, p)
	}
	return out
}
