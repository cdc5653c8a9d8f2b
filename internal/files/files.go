// Package files is the domain logic of the read_files tool: it reads line
// windows of Project files through the Project's *os.Root and reports each
// file's Version (content hash and mtime) for apply_patch's ifMatch. It knows
// nothing about MCP; its result types carry json tags so the tool layer can
// return them as structuredContent.
//
// Decisions the contract leaves open:
//
//   - Lines are split on "\n". A "\r" right before the "\n" belongs to the
//     line ending: Content returns the window's lines joined with "\n", each
//     line followed by "\n" when the file has a terminator after it (so the
//     last line of a file without a final newline has none), and CRLF
//     endings are returned as "\n". Item.LineEnding tells the file's real
//     endings ("lf", "crlf" or "mixed") over the whole file. A lone "\r"
//     elsewhere is content.
//   - Character caps count Unicode code points of Content, "\n" included.
//     A window stops before the first line that does not fit (Truncated, and
//     NextOffset points at that line). A single line longer than
//     MaxCharsPerItem can never fit: when the item has its full allowance it
//     is cut to MaxCharsPerItem characters and the window ends with it
//     (Truncated; the rest of that line is not reachable by line offsets).
//     When the total cap leaves an item less than its full allowance, a line
//     that does not fit is not cut: the item returns no lines, Truncated and
//     NextOffset = Offset, so the same line reads the same way in any batch.
//   - A file is binary when its first 8 KiB or its requested window contain
//     a NUL byte, or its window is not valid UTF-8. Binary items carry
//     Version and Size but no Content, Lines or TotalLines.
//   - Every read hashes the whole file in the same pass that collects the
//     window (bounded memory), so Content and Version always come from the
//     same bytes; a read whose size or mtime changed is retried (3 attempts,
//     then unreadable). A same-size rewrite within one mtime tick can still
//     give a torn read; its hash matches no state on disk, so an ifMatch
//     built from it fails rather than overwriting. Files larger than
//     Limits.MaxFileBytes (default 1 GiB, which streams and hashes in one to
//     three seconds) are refused with too_large rather than returned
//     without a Version.
//   - Sensitive-file refusal applies to the requested path and to its real
//     path inside the root (symlinks resolved), so an innocent-looking
//     symlink to .env is refused too. The message never names the target.
package files

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"

	"github.com/devspace-dev/devspace/internal/project"
)

// Default limits (docs/design.md §9).
const (
	DefaultMaxItems        = 8
	DefaultDefaultLines    = 400
	DefaultMaxLines        = 2000
	DefaultMaxCharsPerItem = 16000
	DefaultMaxCharsTotal   = 48000
	DefaultMaxFileBytes    = 1 << 30
)

// Item error codes (ItemError.Code). They are stable and listed in
// docs/errors.md by the tool layer.
const (
	CodePathDenied    = "path_denied"
	CodeNotFound      = "not_found"
	CodeIsDirectory   = "is_directory"
	CodeSensitiveFile = "sensitive_file"
	CodeTooLarge      = "too_large"
	CodeNotRegular    = "not_regular"
	CodeUnreadable    = "unreadable"
	// CodeSkillNotLoaded: a skill:// path of a skill this execution has
	// not loaded (the tool layer reads skill files).
	CodeSkillNotLoaded = "skill_not_loaded"
)

// Line endings reported in Item.LineEnding.
const (
	LineEndingLF    = "lf"
	LineEndingCRLF  = "crlf"
	LineEndingMixed = "mixed"
)

// Errors. The files package owns them. Read returns ErrTooManyItems and
// ErrInvalidRequest (wrapped) for the whole call; the others are what Stat
// returns (wrapped) and what Read reports per item as an ItemError.
var (
	// ErrTooManyItems: a Read request has more than Limits.MaxItems items.
	ErrTooManyItems = errors.New("too many items")
	// ErrInvalidRequest: a Read request has no items, a negative offset or a
	// negative limit.
	ErrInvalidRequest = errors.New("invalid read request")
	// ErrSensitive: the path or its real path names a sensitive file and the
	// caller did not allow sensitive files.
	ErrSensitive = project.ErrSensitive
	// ErrIsDirectory: the path names a directory.
	ErrIsDirectory = errors.New("is a directory")
	// ErrNotRegular: the path names a FIFO, socket, device or other
	// non-regular file; it is never opened for reading.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: the file is larger than Limits.MaxFileBytes.
	ErrTooLarge = errors.New("file too large")
	// ErrUnstable: the file changed during every attempt to read it.
	ErrUnstable = errors.New("file kept changing")
)

// maxAttempts bounds the stable-read retries of one file.
const maxAttempts = 3

// sniffBytes is how much of a file's head is searched for a NUL byte.
const sniffBytes = 8 << 10

// chunkBytes is the read buffer size.
const chunkBytes = 64 << 10

// Limits bounds a Read. A zero or negative field means its default.
type Limits struct {
	// MaxItems is the most items one Read accepts. Default 8.
	MaxItems int
	// DefaultLines is the window size when a Request has no Limit.
	// Default 400.
	DefaultLines int
	// MaxLines is the largest window; larger Limits are clamped. Default 2000.
	MaxLines int
	// MaxCharsPerItem caps one item's Content, in Unicode code points.
	// Default 16,000.
	MaxCharsPerItem int
	// MaxCharsTotal caps the Content of all items of one Read together.
	// Default 48,000.
	MaxCharsTotal int
	// MaxFileBytes is the largest file read (and hashed); larger files are
	// refused with too_large. Default 1 GiB.
	MaxFileBytes int64
}

// DefaultLimits returns the limits of docs/design.md §9.
func DefaultLimits() Limits {
	return Limits{
		MaxItems:        DefaultMaxItems,
		DefaultLines:    DefaultDefaultLines,
		MaxLines:        DefaultMaxLines,
		MaxCharsPerItem: DefaultMaxCharsPerItem,
		MaxCharsTotal:   DefaultMaxCharsTotal,
		MaxFileBytes:    DefaultMaxFileBytes,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxItems <= 0 {
		l.MaxItems = d.MaxItems
	}
	if l.DefaultLines <= 0 {
		l.DefaultLines = d.DefaultLines
	}
	if l.MaxLines <= 0 {
		l.MaxLines = d.MaxLines
	}
	l.DefaultLines = min(l.DefaultLines, l.MaxLines)
	if l.MaxCharsPerItem <= 0 {
		l.MaxCharsPerItem = d.MaxCharsPerItem
	}
	if l.MaxCharsTotal <= 0 {
		l.MaxCharsTotal = d.MaxCharsTotal
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = d.MaxFileBytes
	}
	return l
}

// Request names one file window to read.
type Request struct {
	// Path is Project-relative, slash-separated.
	Path string `json:"path"`
	// Offset is the 0-based first line of the window.
	Offset int `json:"offset,omitempty"`
	// Limit is the number of lines; 0 means Limits.DefaultLines, larger than
	// Limits.MaxLines means MaxLines.
	Limit int `json:"limit,omitempty"`
}

// Version identifies the state of a file: the SHA-256 of its exact bytes and
// its modification time, both from the same read.
type Version struct {
	// ContentHash is "sha256:" and the lowercase hex digest of the whole file.
	ContentHash string `json:"contentHash"`
	// MtimeNs is the modification time in nanoseconds since the Unix epoch.
	MtimeNs int64 `json:"mtimeNs"`
}

// Item is the result of one Request. Exactly one of Error and the content
// fields is meaningful.
type Item struct {
	// Path is the cleaned Project-relative path, or the request's path as
	// given when it was denied before cleaning.
	Path string `json:"path"`
	// Content is the window's lines (see the package doc for line endings).
	// Empty for binary files and errors.
	Content string `json:"content,omitempty"`
	// Offset is the window's first line, as requested.
	Offset int `json:"offset"`
	// Lines is the number of lines in Content (a cut line counts).
	Lines int `json:"lines"`
	// TotalLines is the number of lines in the file; a last line without a
	// terminator counts, an empty file has none.
	TotalLines int `json:"totalLines"`
	// NextOffset is the first line after the window when lines remain.
	NextOffset *int `json:"nextOffset,omitempty"`
	// Truncated says the character caps cut the window short: it ends before
	// Offset+limit lines, or its last line was cut.
	Truncated bool `json:"truncated,omitempty"`
	// Version is the file's state the content was read from.
	Version *Version `json:"version,omitempty"`
	// Binary says the file is not text; Content is then empty.
	Binary bool `json:"binary,omitempty"`
	// Size is the file's size in bytes.
	Size int64 `json:"size"`
	// LineEnding is "lf", "crlf" or "mixed"; empty when the file has no line
	// terminator or is binary.
	LineEnding string `json:"lineEnding,omitempty"`
	// Error says why the item could not be read.
	Error *ItemError `json:"error,omitempty"`
}

// ItemError is a per-item failure. Message never contains a host path nor
// any path other than the one the request gave.
type ItemError struct {
	// Code is one of the Code* constants.
	Code string `json:"code"`
	// Message is a short client-safe explanation.
	Message string `json:"message"`
	// DenyReason is the project.Reason* constant of a path_denied item, for
	// the path_denials_total metric. It is not sent to the client.
	DenyReason string `json:"-"`
}

// Reader reads Project files under fixed Limits. It is safe for concurrent
// use and holds no reference to any root between calls.
type Reader struct {
	limits Limits
	bufs   sync.Pool // *scratch

	// Test hooks: beforeOpen runs between resolving a path and opening it;
	// afterScan after a file was read and before it is stat'ed again.
	beforeOpen, afterScan func()
}

// NewReader returns a Reader enforcing limits (zero fields mean defaults).
func NewReader(limits Limits) *Reader {
	r := &Reader{limits: limits.withDefaults()}
	r.bufs.New = func() any { return &scratch{chunk: make([]byte, chunkBytes)} }
	return r
}

// scratch holds the buffers of one item read, reused across reads.
type scratch struct {
	chunk    []byte // read buffer
	out, cur []byte // window.out and window.cur
}

// Limits returns the effective limits, defaults filled in.
func (r *Reader) Limits() Limits { return r.limits }

// Read reads each item through root, the Project's *os.Root, and returns one
// Item per request in order. One bad item never fails the others: it gets an
// ItemError. Items are read in order; the total character cap is shared, so
// later items may come back Truncated with NextOffset set.
//
// Unless allowSensitive is true, a path whose cleaned form or whose real
// path inside the root (symlinks resolved) project.IsSensitive reports is
// refused with sensitive_file.
//
// The error is non-nil only for the whole call: ErrTooManyItems,
// ErrInvalidRequest (wrapped), or ctx's error.
func (r *Reader) Read(ctx context.Context, root *os.Root, items []Request, allowSensitive bool) ([]Item, error) {
	if root == nil {
		return nil, errors.New("files: nil root")
	}
	switch {
	case len(items) == 0:
		return nil, fmt.Errorf("files: %w: no items", ErrInvalidRequest)
	case len(items) > r.limits.MaxItems:
		return nil, fmt.Errorf("files: %w: %d items, at most %d", ErrTooManyItems, len(items), r.limits.MaxItems)
	}
	for i, it := range items {
		if it.Offset < 0 || it.Limit < 0 {
			return nil, fmt.Errorf("files: %w: item %d: negative offset or limit", ErrInvalidRequest, i)
		}
	}
	// The largest budget an item can get; only an item with it may cut a line.
	fullBudget := min(r.limits.MaxCharsPerItem, r.limits.MaxCharsTotal)
	left := r.limits.MaxCharsTotal
	out := make([]Item, 0, len(items))
	for _, req := range items {
		budget := min(r.limits.MaxCharsPerItem, left)
		it, err := r.readItem(ctx, root, req, allowSensitive, budget, budget == fullBudget)
		if err != nil {
			return nil, err
		}
		left -= it.chars
		out = append(out, it.Item)
	}
	return out, nil
}

type itemResult struct {
	Item
	chars int // characters of Content counted against the caps
}

// readItem reads one request. The error is ctx's only.
func (r *Reader) readItem(ctx context.Context, root *os.Root, req Request, allowSensitive bool, budget int, full bool) (itemResult, error) {
	res := itemResult{Item: Item{Path: req.Path, Offset: req.Offset}}
	clean, err := project.CleanRel(req.Path)
	if err != nil {
		res.Error = itemError(err)
		return res, nil
	}
	res.Path = clean
	limit := req.Limit
	if limit == 0 {
		limit = r.limits.DefaultLines
	}
	limit = min(limit, r.limits.MaxLines)
	end := req.Offset + limit
	if end < req.Offset { // overflow
		end = int(^uint(0) >> 1)
	}
	s := r.bufs.Get().(*scratch)
	defer r.bufs.Put(s)
	w := window{off: req.Offset, end: end, budget: budget, full: full, lineCap: 4*r.limits.MaxCharsPerItem + 4, out: s.out[:0], cur: s.cur[:0]}
	p, err := r.stableRead(ctx, root, clean, !allowSensitive, &w, s.chunk)
	s.out, s.cur = w.out[:0], w.cur[:0] // keep what grew
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		res.Error = itemError(err)
		return res, nil
	}
	res.Version = &p.version
	res.Size = p.size
	if p.win.binary {
		res.Binary = true
		return res, nil
	}
	res.TotalLines = p.totalLines()
	res.LineEnding = p.lineEnding()
	res.Content = string(p.win.out)
	res.Lines = p.win.lines
	res.Truncated = p.win.truncated
	res.chars = budget - p.win.budget
	if next := req.Offset + p.win.lines; next < res.TotalLines && next >= req.Offset {
		res.NextOffset = &next
	}
	return res, nil
}

// Stat returns the current Version of the Project file rel, read through
// root (the content is hashed in full; see HashFile). It does not refuse
// sensitive files. Errors wrap project.ErrPathDenied (a *project.PathError),
// fs.ErrNotExist, ErrIsDirectory, ErrNotRegular, ErrTooLarge, ErrUnstable
// or ctx's error; they never contain a host path.
func (r *Reader) Stat(ctx context.Context, root *os.Root, rel string) (*Version, error) {
	if root == nil {
		return nil, errors.New("files: nil root")
	}
	clean, err := project.CleanRel(rel)
	if err != nil {
		return nil, fmt.Errorf("files: stat: %w", err)
	}
	s := r.bufs.Get().(*scratch)
	defer r.bufs.Put(s)
	w := window{} // empty window: hash only
	p, err := r.stableRead(ctx, root, clean, false, &w, s.chunk)
	if err != nil {
		// Scrub: errors of the opened file carry its host path.
		return nil, fmt.Errorf("files: stat %q: %w", clean, project.Scrub(err))
	}
	return &p.version, nil
}

func formatHash(sum []byte) string { return "sha256:" + hex.EncodeToString(sum) }

// itemError maps a read error to the client-safe ItemError.
func itemError(err error) *ItemError {
	if pe, ok := errors.AsType[*project.PathError](err); ok {
		return &ItemError{Code: CodePathDenied, Message: denyMessage(pe.Reason), DenyReason: pe.Reason}
	}
	switch {
	case errors.Is(err, ErrSensitive):
		return &ItemError{Code: CodeSensitiveFile, Message: "refused: the file may hold secrets (.env, private key, credentials); send allowSensitive: true to read it"}
	case errors.Is(err, ErrIsDirectory):
		return &ItemError{Code: CodeIsDirectory, Message: "the path is a directory; list it with inspect"}
	case errors.Is(err, ErrNotRegular), errors.Is(err, syscall.ENXIO): // ENXIO: opening a socket
		return &ItemError{Code: CodeNotRegular, Message: "not a regular file (FIFO, socket or device); it was not read"}
	case errors.Is(err, ErrTooLarge):
		return &ItemError{Code: CodeTooLarge, Message: "the file is too large to read and hash; inspect it with a command such as head, tail or sed"}
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return &ItemError{Code: CodeNotFound, Message: "no such file in the Project"}
	case errors.Is(err, ErrUnstable):
		return &ItemError{Code: CodeUnreadable, Message: "the file kept changing while it was read; retry later"}
	case errors.Is(err, fs.ErrPermission):
		return &ItemError{Code: CodeUnreadable, Message: "permission denied"}
	}
	return &ItemError{Code: CodeUnreadable, Message: "cannot read the file: " + project.Scrub(err).Error()}
}

func denyMessage(reason string) string {
	switch reason {
	case project.ReasonAbsolute:
		return "absolute paths are refused; use a path relative to the Project root"
	case project.ReasonParent:
		return "the path leaves the Project root"
	case project.ReasonSymlink:
		return "the path leads outside the Project root through a symbolic link"
	case project.ReasonNUL:
		return "the path contains a NUL byte"
	case project.ReasonInvalidUTF8:
		return "the path is not valid UTF-8"
	case project.ReasonTooLong:
		return fmt.Sprintf("the path is longer than %d bytes", project.MaxPathBytes)
	case project.ReasonRepository:
		return "repository metadata (.git) is not Project content; review changes with show_changes"
	}
	return "the path is not allowed"
}
