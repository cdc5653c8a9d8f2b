package review

import (
	"strings"
	"unicode/utf8"
)

// Page returns the page of diff that starts at byte offset and holds at most
// pageBytes bytes (DefaultPageBytes when pageBytes is not positive), the
// offset of the next page, and whether this page reaches the end.
//
// A page ends after the last newline that fits; a line longer than a page is
// split at a UTF-8 character boundary, so no page ever holds part of a
// character. Every page holds at least one character, even when pageBytes is
// smaller, so paging always advances. An offset before the start counts as
// 0; an offset at or past the end returns "", len(diff), true; an offset
// inside a character (a cursor for another text) moves forward to the next
// character. The pages of a walk from 0 concatenate to diff.
func Page(diff string, offset, pageBytes int) (text string, next int, done bool) {
	if pageBytes <= 0 {
		pageBytes = DefaultPageBytes
	}
	offset = max(offset, 0)
	if offset < len(diff) {
		if start, size := runeAround(diff, offset); start != offset {
			offset = start + size
		}
	}
	if offset >= len(diff) {
		return "", len(diff), true
	}
	if len(diff)-offset <= pageBytes {
		return diff[offset:], len(diff), true
	}
	end := offset + pageBytes
	if i := strings.LastIndexByte(diff[offset:end], '\n'); i >= 0 {
		end = offset + i + 1
	} else {
		end, _ = runeAround(diff, end)
		if end <= offset {
			_, size := utf8.DecodeRuneInString(diff[offset:])
			end = offset + size
		}
	}
	return diff[offset:end], end, end >= len(diff)
}

// runeAround returns the start and size of the valid multi-byte character
// that byte i lies strictly inside, or (i, 0) when cutting before i splits no
// valid character. Invalid bytes are characters of their own.
func runeAround(s string, i int) (start, size int) {
	for j := i - 1; j >= 0 && j > i-utf8.UTFMax; j-- {
		if !utf8.RuneStart(s[j]) {
			continue
		}
		r, n := utf8.DecodeRuneInString(s[j:])
		if r != utf8.RuneError || n > 1 {
			if j+n > i {
				return j, n
			}
		}
		break
	}
	return i, 0
}
