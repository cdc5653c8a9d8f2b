package project

import (
	"strings"
	"unicode/utf8"
)

// IsRepositoryMetadata reports whether the Project-relative path rel is
// repository metadata: any of its elements is one that Git, on some file
// system, takes for ".git". Such an element is compared without case, with
// the trailing dots and spaces Windows drops and the code points HFS+
// ignores removed (what Git's verify_path guards against), and the 8.3
// short name "git~1". No tool writes there, and no tool reads there except
// show_changes' Git review: hooks, config (core.fsmonitor, filters,
// include.path) and pointers (commondir, alternates) are how a repository
// runs code or reaches outside its root.
func IsRepositoryMetadata(rel string) bool {
	for rel != "" {
		elem, rest, _ := strings.Cut(rel, "/")
		if isDotGit(elem) {
			return true
		}
		rel = rest
	}
	return false
}

// isDotGit reports whether one path element names ".git".
func isDotGit(elem string) bool {
	if len(elem) < 4 {
		return false
	}
	if strings.EqualFold(elem, "git~1") {
		return true
	}
	var b strings.Builder
	for _, r := range elem {
		if r == utf8.RuneError || !hfsIgnored(r) {
			b.WriteRune(r)
		}
	}
	s := strings.TrimRight(b.String(), ". ")
	return strings.EqualFold(s, ".git")
}

// hfsIgnored reports whether HFS+ ignores r in a file name (Git's
// next_hfs_char list).
func hfsIgnored(r rune) bool {
	switch r {
	case 0x200c, 0x200d, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e,
		0x206a, 0x206b, 0x206c, 0x206d, 0x206e, 0x206f, 0xfeff:
		return true
	}
	return false
}
