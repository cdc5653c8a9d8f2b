package project

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/devspace-dev/devspace/internal/fault"
)

// ErrPathDenied is returned (as a *PathError, which says its reason) for
// every path that must not be touched: path_denied. This package owns it.
var ErrPathDenied = fault.New("path_denied", "path denied")

// Path denial reasons (bounded: they label path_denials_total).
const (
	ReasonAbsolute    = "absolute"
	ReasonParent      = "parent_escape"
	ReasonNUL         = "nul_byte"
	ReasonInvalidUTF8 = "invalid_utf8"
	ReasonSymlink     = "symlink_escape"
	ReasonSensitive   = "sensitive"
	ReasonSpecial     = "special_file"
	ReasonTooLong     = "too_long"
	// ReasonRepository: the path is repository metadata (IsRepositoryMetadata),
	// or a directory that is a Git directory whatever its name.
	ReasonRepository = "repository_metadata"
)

// MaxPathBytes bounds a model-supplied path.
const MaxPathBytes = 4096

// PathError says why a path was denied. Its message never contains the
// path or anything outside the Project.
type PathError struct {
	Reason string
}

func (e *PathError) Error() string { return "path denied: " + e.Reason }

// Is makes errors.Is(err, ErrPathDenied) true.
func (e *PathError) Is(target error) bool { return target == ErrPathDenied }

// Code is path_denied.
func (e *PathError) Code() string { return "path_denied" }

// Details give the reason: details.reason.
func (e *PathError) Details() map[string]any { return map[string]any{"reason": e.Reason} }

func denied(reason string) error { return &PathError{Reason: reason} }

// CleanRel validates a model-supplied Project-relative path and returns it
// cleaned, slash-separated, without a leading "./"; "" and "." become ".".
// The bytes are otherwise kept exactly (no Unicode normalization): a name
// with RTL-override or zero-width characters is a different name.
// Symlinks are not resolved here; opening through the Project's *os.Root
// enforces that they stay inside (see Classify).
func CleanRel(p string) (string, error) {
	switch {
	case len(p) > MaxPathBytes:
		return "", denied(ReasonTooLong)
	case strings.IndexByte(p, 0) >= 0:
		return "", denied(ReasonNUL)
	case !utf8.ValidString(p):
		return "", denied(ReasonInvalidUTF8)
	case strings.HasPrefix(p, "/"), strings.HasPrefix(p, `\`), len(p) >= 2 && p[1] == ':' && isLetter(p[0]):
		return "", denied(ReasonAbsolute)
	}
	if p == "" {
		return ".", nil
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", denied(ReasonParent)
	}
	// Cleaning may bring a backslash or drive-letter first element forward
	// ("./C:", "./\\x"): refuse them in every spelling, so that the result
	// is a fixed point.
	if strings.HasPrefix(c, `\`) || len(c) >= 2 && c[1] == ':' && isLetter(c[0]) {
		return "", denied(ReasonAbsolute)
	}
	return c, nil
}

func isLetter(b byte) bool { return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') }

// Classify turns an error from an *os.Root operation into ErrPathDenied
// when the root refused to follow a path outside itself (a symlink leading
// out, absolute, or dangling beyond the root), so callers give one answer
// whether or not the outside target exists. Other errors pass through.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	msg := err.Error()
	if errors.As(err, &pe) {
		msg = pe.Err.Error()
	}
	if strings.Contains(msg, "path escapes from parent") || errors.Is(err, syscall.ELOOP) && strings.Contains(msg, "escape") {
		return denied(ReasonSymlink)
	}
	return err
}

// Scrub removes host paths from a filesystem error for a client message:
// it keeps the kind of failure (not found, permission, not a directory…)
// and drops the *fs.PathError's path.
func Scrub(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
