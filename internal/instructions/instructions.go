// Package instructions finds and pages the repository instruction files of a
// Project (AGENTS.md and friends): the root set delivered when an execution
// is opened, resumed or hydrated, and the nested files that apply once a tool
// touches a path below the root (docs/design.md §7, "Instructions").
//
// # Which file a directory contributes
//
// Each directory contributes at most one file, chosen in this order:
//
//  1. AGENTS.override.md
//  2. AGENTS.md
//  3. the configured fallback names (Options.Fallbacks, e.g. CLAUDE.md), in
//     the order given; none unless configured.
//
// As in Codex, an override replaces AGENTS.md of the same directory: when
// both exist only the override is delivered. Names match ASCII
// case-insensitively (agents.md, Agents.md and AGENTS.MD all count as
// AGENTS.md); non-ASCII letters never match. On a case-sensitive filesystem
// several case variants of one name may coexist: they are tried in byte order
// of their names (so AGENTS.md before Agents.md before agents.md) and the
// first usable one is delivered; the others are not.
//
// A candidate is usable when, resolved through the Project's os.Root, it is
// a regular file that can be opened. Everything else is treated as if it did
// not exist, and the next candidate is tried: symlinks leaving the root (the
// os.Root refuses them, as it refuses absolute symlinks even when they point
// inside), dangling symlinks, directories, FIFOs, sockets, devices and
// unreadable files. Symlinks staying inside the root are followed; the File
// keeps the name of the link. A usable file whose content is empty or only
// white space contributes nothing and still hides the lower-priority
// candidates of its directory, so an empty AGENTS.override.md silences
// AGENTS.md (Codex behaves the same).
//
// # Content
//
// Files are read up to MaxFileBytes; a longer file is cut on a UTF-8 boundary
// and ends with a marker saying so (File.Truncated is set). NUL bytes are
// removed and invalid UTF-8 is replaced by U+FFFD, so every Content is valid
// UTF-8. Every file found in a Project is TrustRepository: its text is data
// for the model, never a source of authority (docs/design.md §1).
//
// # Pages
//
// A Set renders its files as one text: each file is preceded by a header line
// naming its Project-relative path and trust class. A content line that could
// be mistaken for such a header is prefixed with a backslash, so repository
// text cannot claim another path or a higher trust class. The text is split
// into pages of at most Options.PageBytes bytes, cut after a newline when one
// lies in the second half of the page and otherwise on a UTF-8 boundary.
// Set.Revision is the SHA-256 of the whole text; it changes whenever a file,
// its path or its trust class changes, and does not depend on the page size.
//
// Nothing is cached across calls: every call reads the filesystem again. A
// Batch, which serves the many paths of one tool call, reads each directory
// once.
package instructions

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// Trust is the trust class every instruction carries (docs/design.md §7).
type Trust string

// Trust classes. Only TrustRepository is produced by this package; the others
// are for server-configured files, combined with repository files by NewSet.
const (
	TrustRepository Trust = "repository_untrusted" // files found in a Project
	TrustUser       Trust = "user_trusted"         // files the owner configured
	TrustAdmin      Trust = "admin_trusted"        // files the deployment configured
)

// Limits (docs/design.md §9).
const (
	// PageBytes is the default maximum size of one page in bytes.
	PageBytes = 12000
	// MinPageBytes is the smallest page size New and NewSet accept; smaller
	// values are refused by New and raised to it by NewSet.
	MinPageBytes = 256
	// MaxFileBytes is how much of one instruction file is read; the rest is
	// replaced by TruncationMarker.
	MaxFileBytes = 256 << 10
)

// TruncationMarker ends the Content of a file longer than MaxFileBytes. The
// number is MaxFileBytes (a test keeps them in step).
const TruncationMarker = "\n[devspace: instruction file truncated at 262144 bytes; the rest was not read]\n"

// File is one instruction file.
type File struct {
	Path      string // Project-relative, slash-separated; the name as found on disk
	Trust     Trust
	Content   string // sanitized: valid UTF-8, no NUL, at most MaxFileBytes plus TruncationMarker
	Truncated bool   // the file was longer than MaxFileBytes
	Hash      string // "sha256:" + hex SHA-256 of Content
}

// NewFile builds a File from raw bytes: data longer than MaxFileBytes is cut
// (Truncated set, TruncationMarker appended), NUL bytes are removed and
// invalid UTF-8 is replaced. path is stored as given; callers pass a
// Project-relative slash-separated path or, for server-configured files, a
// display name that reveals no host path.
func NewFile(path string, trust Trust, data []byte) File {
	truncated := len(data) > MaxFileBytes
	if truncated {
		data = trimPartialRune(data[:MaxFileBytes])
	}
	content := strings.ToValidUTF8(strings.ReplaceAll(string(data), "\x00", ""), "\uFFFD")
	if truncated {
		content += TruncationMarker
	}
	return File{Path: path, Trust: trust, Content: content, Truncated: truncated, Hash: digest(content)}
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b, left
// by a cut in the middle of a character.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}
