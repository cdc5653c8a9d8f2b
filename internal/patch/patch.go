// Package patch parses Codex-format patches ("*** Begin Patch" …
// "*** End Patch") and applies them atomically to a Project through its
// *os.Root: every target is staged to a temp file in its own directory,
// committed by rename and rolled back completely on any failure. With an
// Intents directory each commit is also recorded durably outside the
// Project, so that a crash is finished or undone at the next start
// (Intents.Recover).
//
// The package knows nothing about MCP: callers pass plain types and map
// the sentinels below to tool errors (docs/design.md §8). Errors never contain a
// host path; Project-relative paths appear where they help the caller.
//
// Format decisions beyond the Codex grammar:
//
//   - "@@ text" anchors are located in order after the previous hunk; the
//     first anchor of a hunk must be unique there, later anchors and the
//     hunk body take the first occurrence after it. A body may repeat its
//     anchor line as its first context line.
//   - A hunk without anchors must match exactly once after the previous
//     hunk, at the first fuzz level that matches at all: exact, then
//     trailing whitespace ignored, then runs of whitespace collapsed.
//     Context lines keep the file's own text whatever the fuzz.
//   - A hunk with only '+' lines appends at the end of the file, or
//     inserts after its last anchor.
//   - "@@ -a,b +c,d @@" unified headers are plain hunk starts; their
//     numbers are never read.
//   - Untouched lines keep their line endings; new lines take the file's
//     dominant one. The final-newline state is kept unless a hunk carries
//     git's "\ No newline at end of file" marker. A UTF-8 BOM is kept.
//   - Repeated Update sections for one file apply in turn; any other
//     second mention of a path is an error. Add over an existing file and
//     a move onto one replace it, which the precondition on that path
//     (its current hash) must allow.
package patch

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/devspace-dev/devspace/internal/fault"
)

// Limits (docs/design.md §9). They are checked before anything proportional to a
// size claimed by the patch is allocated.
const (
	// MaxPatchBytes bounds the patch text.
	MaxPatchBytes = 4 << 20
	// MaxFiles bounds the file operations in one patch.
	MaxFiles = 1000
	// MaxHunks bounds the hunks of all Update sections together.
	MaxHunks = 10000
	// MaxFileBytes bounds one target file read into memory.
	MaxFileBytes = 16 << 20
	// MaxTotalBytes bounds the original plus new contents one Apply holds
	// in memory.
	MaxTotalBytes = 64 << 20
	// maxMatchWork bounds line comparisons while locating hunks, so an
	// adversarial patch against a large file cannot pin a CPU.
	maxMatchWork = 1 << 26
)

// Sentinel errors. This package owns them, each with its code (the
// types below wrap them and say their details); callers test with
// errors.Is.
var (
	// ErrInvalidPatch: the text is not a well-formed patch (*ParseError
	// says where). Path denials found while parsing are reported as
	// project.ErrPathDenied instead.
	ErrInvalidPatch = fault.New("invalid_patch", "invalid patch")
	// ErrTooLarge: a limit above was exceeded; nothing was written.
	ErrTooLarge = fault.New("patch_too_large", "patch too large")
	// ErrPreconditionMissing: a touched path has no ifMatch entry
	// (*PreconditionMissingError lists them); nothing was written.
	ErrPreconditionMissing = fault.New("if_match_required", "precondition missing")
	// ErrVersionConflict: a file is not in the state its precondition
	// names (*VersionConflict says which); nothing was written, or the
	// commit was rolled back.
	ErrVersionConflict = fault.New("file_version_conflict", "file version conflict")
	// ErrBinaryTarget: an Update target holds a NUL byte in its first
	// 8 KiB or is not valid UTF-8.
	ErrBinaryTarget = fault.New("binary_target", "binary or non-UTF-8 target")
	// ErrTargetMissing: an Update or Delete names a file that does not
	// exist.
	ErrTargetMissing = fault.New("patch_target_missing", "file does not exist")
	// ErrContextNotFound: a hunk's context or removed lines are not in the
	// file (*HunkError says which hunk).
	ErrContextNotFound = fault.New("patch_context_not_found", "hunk context not found")
	// ErrAmbiguous: a hunk matches more than one place at the fuzz level
	// it needed (*HunkError says which hunk).
	ErrAmbiguous = fault.New("patch_ambiguous", "hunk matches more than one place")
	// ErrRollbackIncomplete is joined to the cause, first, when a failed
	// commit could not restore every file: the tree may be partly patched,
	// so its code (operation_outcome_unknown) is the answer's.
	ErrRollbackIncomplete = fault.New("operation_outcome_unknown", "rollback incomplete")
)

// ParseError locates a syntax error in the patch text.
type ParseError struct {
	Line int    // 1-based line of the patch text
	Msg  string // what is wrong and what would be valid
	Err  error  // the cause when it is not a syntax error (a path denial)
}

func (e *ParseError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("patch line %d: %s: %v", e.Line, e.Msg, e.Err)
	}
	return fmt.Sprintf("patch line %d: %s", e.Line, e.Msg)
}

// Unwrap returns the path denial that caused e, or ErrInvalidPatch.
func (e *ParseError) Unwrap() error {
	if e.Err != nil {
		return e.Err
	}
	return ErrInvalidPatch
}

// PreconditionMissingError lists the touched paths without an ifMatch
// entry, in patch order.
type PreconditionMissingError struct {
	Paths []string
}

func (e *PreconditionMissingError) Error() string {
	return "no ifMatch entry for: " + strings.Join(e.Paths, ", ")
}

// Unwrap returns ErrPreconditionMissing.
func (e *PreconditionMissingError) Unwrap() error { return ErrPreconditionMissing }

// Details name the paths: details.paths.
func (e *PreconditionMissingError) Details() map[string]any { return map[string]any{"paths": e.Paths} }

// VersionConflict reports a file whose state differs from its
// precondition. Expected and Actual are content hashes ("sha256:…");
// "" means "does not exist". When only the mode differs, each is the hash
// followed by " mode 0644" (and " setuid", " setgid", " sticky"); when
// something other than a regular file is there, Actual names it
// ("symlink", "directory", "fifo", "socket", "device").
type VersionConflict struct {
	Path     string
	Expected string
	Actual   string
}

func (e *VersionConflict) Error() string {
	return fmt.Sprintf("%s: version conflict: expected %s, found %s", e.Path, orAbsent(e.Expected), orAbsent(e.Actual))
}

// Unwrap returns ErrVersionConflict.
func (e *VersionConflict) Unwrap() error { return ErrVersionConflict }

// Details are details.path, expected and actual; a state that does not
// exist ("") is null.
func (e *VersionConflict) Details() map[string]any {
	return map[string]any{"path": e.Path, "expected": orNull(e.Expected), "actual": orNull(e.Actual)}
}

func orNull(h string) any {
	if h == "" {
		return nil
	}
	return h
}

func orAbsent(h string) string {
	if h == "" {
		return "no file"
	}
	return h
}

// FileError attaches a Project-relative path to a failure (a path denial,
// ErrBinaryTarget, ErrTargetMissing, a scrubbed filesystem error).
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string { return e.Path + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *FileError) Unwrap() error { return e.Err }

// HunkError says which hunk of which file could not be placed.
type HunkError struct {
	Path string
	Hunk int // 1-based among the file's hunks
	Line int // patch line of the hunk
	Err  error
}

func (e *HunkError) Error() string {
	return fmt.Sprintf("%s: hunk %d (patch line %d): %v", e.Path, e.Hunk, e.Line, e.Err)
}

// Unwrap returns ErrContextNotFound or ErrAmbiguous.
func (e *HunkError) Unwrap() error { return e.Err }

// Kind is a file operation.
type Kind uint8

// File operations.
const (
	Add Kind = iota + 1
	Delete
	Update
)

// Patch is a parsed patch. It holds substrings of the text given to
// Parse; its memory is bounded by the limits above.
type Patch struct {
	Files []*FileOp
}

// FileOp is one file section of a patch. Repeated Update sections for
// the same path are merged into one FileOp and applied in order, each to
// the result of the previous one (Codex semantics).
type FileOp struct {
	Kind   Kind
	Path   string // cleaned, Project-relative
	MoveTo string // Update only; "" when not moving
	Line   int    // patch line of the header

	// Add only: the new content (LF line endings) and whether it ends
	// without a final newline ("\ No newline at end of file").
	Content        string
	NoFinalNewline bool

	Hunks []*Hunk // Update only; may be empty for a pure move
}

// Hunk is one "@@" section of an Update.
type Hunk struct {
	Line int // patch line of the "@@" (or of the first hunk line)
	// Anchors are the "@@ text" lines: each is located (first occurrence)
	// after the previous one before the hunk body is matched.
	Anchors []string
	// EndOfFile: the removed/context lines must end at the end of the file
	// ("*** End of File", or a "\ No newline at end of file" marker).
	EndOfFile bool

	body    string // raw hunk lines (prefix included), CR not yet stripped
	section int    // which merged Update section the hunk belongs to
}

// Paths returns every path the patch touches, move targets included, in
// patch order without duplicates. Each needs a Precondition.
func (p *Patch) Paths() []string {
	out := make([]string, 0, len(p.Files))
	for _, f := range p.Files {
		out = append(out, f.Path)
		if f.MoveTo != "" {
			out = append(out, f.MoveTo)
		}
	}
	return out
}

// HashContent returns the content hash used by preconditions and results:
// "sha256:" and the lowercase hex SHA-256 of b.
func HashContent(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
