package instructions

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// headerMark starts every header line. Content lines that could read as a
// header (see escapeLine) are escaped so only real headers start with it.
const headerMark = "=== devspace instructions "

// Set is a rendered, paged set of instruction files. A Set is immutable once
// built; it is safe for concurrent reads.
type Set struct {
	Files    []File   // in delivery order; nil when there are none
	Revision string   // "sha256:" + hex SHA-256 of the rendered text; "" when there are no files
	Pages    []string // the rendered text cut into pages; nil when there are no files
}

// NewSet renders files in the given order and pages the text. pageBytes of 0
// or less means PageBytes; a positive value below MinPageBytes is raised to
// MinPageBytes. With no files it returns an empty Set (no pages, Revision "").
// Callers use it to put server-configured files (TrustUser, TrustAdmin) in
// front of the repository's, or to page a nested delta.
func NewSet(files []File, pageBytes int) *Set {
	if len(files) == 0 {
		return &Set{}
	}
	switch {
	case pageBytes <= 0:
		pageBytes = PageBytes
	case pageBytes < MinPageBytes:
		pageBytes = MinPageBytes
	}
	text := Render(files)
	return &Set{
		Files:    append([]File(nil), files...),
		Revision: digest(text),
		Pages:    paginate(text, pageBytes),
	}
}

// Render returns the text of files as NewSet pages it: for each file a
// header line
//
//	=== devspace instructions "<path>" trust=<trust> ===
//
// (the path quoted as by strconv.Quote) followed by its content, ending in a
// newline, with a blank line between files. Content lines that could be read
// as a header are prefixed with a backslash.
func Render(files []File) string {
	var b strings.Builder
	for i, f := range files {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(headerMark)
		b.WriteString(strconv.Quote(f.Path))
		b.WriteString(" trust=")
		b.WriteString(string(f.Trust))
		b.WriteString(" ===\n")
		for line := range strings.Lines(f.Content) {
			if looksLikeHeader(line) {
				b.WriteByte('\\')
			}
			b.WriteString(line)
		}
		if f.Content != "" && !strings.HasSuffix(f.Content, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// looksLikeHeader reports whether line, ignoring leading blanks, is one or
// more '=' then optional blanks then "devspace" in any ASCII case: broad
// enough to catch near-copies of a header, narrow enough to leave Markdown
// setext underlines ("=====") alone.
func looksLikeHeader(line string) bool {
	s := strings.TrimLeft(line, " \t")
	if !strings.HasPrefix(s, "=") {
		return false
	}
	s = strings.TrimLeft(s, "=")
	s = strings.TrimLeft(s, " \t")
	const word = "devspace"
	return len(s) >= len(word) && asciiEqualFold(s[:len(word)], word)
}

// paginate cuts text into pages of at most max bytes (max ≥ utf8.UTFMax).
// A page ends after the last newline within its limit when that newline lies
// in the second half of the page; otherwise it is cut at the limit, moved
// back to the start of a UTF-8 sequence. text must be valid UTF-8.
func paginate(text string, max int) []string {
	var pages []string
	for len(text) > max {
		cut := strings.LastIndexByte(text[:max], '\n') + 1
		if cut <= max/2 {
			cut = max
			for cut > 0 && !utf8.RuneStart(text[cut]) {
				cut--
			}
		}
		pages = append(pages, text[:cut])
		text = text[cut:]
	}
	if text != "" {
		pages = append(pages, text)
	}
	return pages
}
