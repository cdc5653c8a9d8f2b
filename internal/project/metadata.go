package project

import "strings"

// IsRepositoryMetadata reports whether the Project-relative path rel is
// repository metadata: any of its elements is one that Git, on some file
// system, takes for ".git". Such an element is compared as
// case-insensitive filesystems compare names (fold: case, canonical
// decomposition, and the default-ignorable code points HFS+ and Linux
// casefold drop, which include those Git's verify_path skips for HFS+),
// with the trailing dots and spaces Windows drops removed, and the 8.3
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
	return strings.TrimRight(fold(elem), ". ") == ".git"
}
