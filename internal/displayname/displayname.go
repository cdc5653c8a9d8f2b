// Package displayname cleans names that a client chose for itself (an
// OAuth client_name from dynamic registration or a client ID metadata
// document) before they are stored or shown to the owner. It is the one
// place where that rule lives.
package displayname

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxRunes bounds a cleaned name.
const MaxRunes = 64

// maxMarks bounds the combining marks kept after one base character, so a
// name cannot smear over the text around it.
const maxMarks = 2

// Clean returns s without what could disguise it on the consent page:
// invalid UTF-8, control characters, format characters (bidi embeddings,
// overrides and isolates, zero-width spaces and joiners, the BOM, tags),
// line and paragraph separators, private-use and default-ignorable code
// points (fillers, variation selectors) and combining marks beyond two per
// character. Runs of white space become one space; the result is trimmed
// and cut to MaxRunes runes. Clean is idempotent.
func Clean(s string) string {
	var b strings.Builder
	runes, marks := 0, 0
	space := false
	for _, r := range s {
		if runes >= MaxRunes {
			break
		}
		switch {
		case r == utf8.RuneError, invisible(r):
			continue
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case unicode.In(r, unicode.Mn, unicode.Me):
			if marks >= maxMarks || b.Len() == 0 {
				continue
			}
			marks++
		default:
			marks = 0
		}
		if space {
			b.WriteByte(' ')
			runes++
			space = false
			if runes >= MaxRunes {
				break
			}
		}
		b.WriteRune(r)
		runes++
	}
	return strings.TrimSpace(b.String())
}

func invisible(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs, unicode.Zl, unicode.Zp,
		unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
}
