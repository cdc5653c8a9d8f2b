package search

import (
	"bytes"
	"errors"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// regexOverlap is how many bytes of a long line's window are searched
// again with the next window when a regular expression (rather than a
// literal, whose overlap is exact) is used. See scanner.
const regexOverlap = 4 << 10

// matcher finds the lines of a buffer that match a grep pattern. Lines are
// searched one at a time semantically: a match never spans a newline, "^"
// and "$" (also "\A" and "\z") match at line boundaries, and character
// classes never match "\n". It is immutable and safe for concurrent use;
// per-goroutine scratch memory is passed in.
type matcher struct {
	// exact is a case-sensitive literal: every occurrence is a match.
	exact []byte
	// needle is a literal every match contains (lowered ASCII when fold):
	// lines holding it are verified with re.
	needle []byte
	fold   bool
	// re verifies candidate lines, or searches whole regions when there
	// is neither exact nor needle.
	re *regexp.Regexp
	// never is set when the pattern cannot match inside one line (a
	// literal newline).
	never bool
}

// compileMatcher builds the matcher for a literal (isRegex false) or RE2
// pattern, case-insensitive when ignoreCase (Unicode simple case folding).
// Its errors describe what is wrong with the pattern, for the caller.
func compileMatcher(pattern string, isRegex, ignoreCase bool) (*matcher, error) {
	if pattern == "" {
		return nil, errors.New("pattern is required")
	}
	if !utf8.ValidString(pattern) {
		return nil, errors.New("pattern is not valid UTF-8")
	}
	if !isRegex {
		if strings.Contains(pattern, "\n") {
			return &matcher{never: true}, nil
		}
		if !ignoreCase {
			return &matcher{exact: []byte(pattern)}, nil
		}
		pattern = regexp.QuoteMeta(pattern)
	}
	flags := syntax.Perl &^ syntax.OneLine
	if ignoreCase {
		flags |= syntax.FoldCase
	}
	// The parser's message quotes only the pattern: safe to show.
	tree, err := syntax.Parse(pattern, flags)
	if err != nil {
		return nil, err
	}
	if !lineLocal(tree) {
		return &matcher{never: true}, nil
	}
	tree = tree.Simplify()
	if tree.Op == syntax.OpLiteral && tree.Flags&syntax.FoldCase == 0 {
		return &matcher{exact: []byte(string(tree.Rune))}, nil
	}
	re, err := regexp.Compile(tree.String())
	if err != nil {
		return nil, err
	}
	m := &matcher{re: re}
	if lit, fold := requiredLiteral(tree); lit != "" {
		if fold {
			m.needle, m.fold = foldSafeRun(lit), true
		} else {
			m.needle = []byte(lit)
		}
		if len(m.needle) == 0 {
			m.needle, m.fold = nil, false
		}
	}
	return m, nil
}

// lineLocal rewrites tree in place so that it matches within one line:
// text anchors become line anchors, classes and "." lose "\n". It reports
// false when a literal newline makes a match impossible.
func lineLocal(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginText:
		re.Op = syntax.OpBeginLine
	case syntax.OpEndText:
		re.Op = syntax.OpEndLine
		re.Flags &^= syntax.WasDollar
	case syntax.OpAnyChar:
		re.Op = syntax.OpAnyCharNotNL
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if r == '\n' {
				re.Op, re.Rune = syntax.OpNoMatch, nil
				break
			}
		}
	case syntax.OpCharClass:
		re.Rune = withoutNL(re.Rune)
		if len(re.Rune) == 0 {
			re.Op = syntax.OpNoMatch
		}
	}
	for _, sub := range re.Sub {
		lineLocal(sub)
	}
	// A top-level no-match is the only case worth short-circuiting; deeper
	// ones are handled by the engine.
	return re.Op != syntax.OpNoMatch
}

// withoutNL removes '\n' from a class given as sorted [lo, hi] pairs.
func withoutNL(ranges []rune) []rune {
	out := make([]rune, 0, len(ranges)+2)
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		if lo > '\n' || hi < '\n' {
			out = append(out, lo, hi)
			continue
		}
		if lo < '\n' {
			out = append(out, lo, '\n'-1)
		}
		if hi > '\n' {
			out = append(out, '\n'+1, hi)
		}
	}
	return out
}

// requiredLiteral returns the longest literal that every match of re
// contains, preferring case-sensitive ones, and whether it is to be
// matched case-insensitively. "" when there is none.
func requiredLiteral(re *syntax.Regexp) (lit string, fold bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return string(re.Rune), re.Flags&syntax.FoldCase != 0
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			l, f := requiredLiteral(sub)
			if betterLiteral(l, f, lit, fold) {
				lit, fold = l, f
			}
		}
	}
	return lit, fold
}

func betterLiteral(l string, f bool, cur string, curFold bool) bool {
	score := func(s string, fold bool) int {
		if fold {
			return len(foldSafeRun(s))
		}
		return len(s) * 2 // a case-sensitive needle is more selective
	}
	return score(l, f) > score(cur, curFold)
}

// foldSafeRun returns, lowered, the longest run of lit's characters whose
// case variants are all ASCII, so that an ASCII-lowered copy of the text
// holds the run wherever a case-insensitive match of lit occurs. 'k' and
// 's' are left out (the Kelvin sign and the long s fold to them), and so
// is every non-ASCII character.
func foldSafeRun(lit string) []byte {
	best, start := "", 0
	for i := 0; i <= len(lit); i++ {
		if i < len(lit) && foldSafe(lit[i]) {
			continue
		}
		if i-start > len(best) {
			best = lit[start:i]
		}
		start = i + 1
	}
	return []byte(strings.ToLower(best))
}

func foldSafe(c byte) bool {
	if c >= utf8.RuneSelf {
		return false
	}
	l := lowerTable[c]
	return l != 'k' && l != 's'
}

var lowerTable = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if 'A' <= i && i <= 'Z' {
			t[i] = byte(i + 'a' - 'A')
		}
	}
	return t
}()

// lowerASCII writes src with ASCII letters lowered into *scratch (grown
// as needed) and returns it; other bytes are copied, so offsets agree.
func lowerASCII(scratch *[]byte, src []byte) []byte {
	if cap(*scratch) < len(src) {
		*scratch = make([]byte, len(src), len(src)+len(src)/4)
	}
	dst := (*scratch)[:len(src)]
	for i, c := range src {
		dst[i] = lowerTable[c]
	}
	return dst
}

// each calls fn for every matching line of region, a run of complete
// lines separated by '\n' (no trailing one), in order: ls and le bound the
// line (le excludes the newline) and at is the offset of the match within
// the line. fn returns false to stop.
func (m *matcher) each(region []byte, scratch *[]byte, fn func(ls, le, at int) bool) {
	if m.never {
		return
	}
	hay, needle := region, m.exact
	if needle == nil {
		needle = m.needle
	}
	if m.fold {
		hay = lowerASCII(scratch, region)
	}
	if needle == nil {
		for pos := 0; pos <= len(region); {
			loc := m.re.FindIndex(region[pos:])
			if loc == nil {
				return
			}
			i := pos + loc[0]
			ls, le := lineBounds(region, i)
			if !fn(ls, le, i-ls) {
				return
			}
			pos = le + 1
		}
		return
	}
	for pos := 0; pos < len(hay); {
		i := bytes.Index(hay[pos:], needle)
		if i < 0 {
			return
		}
		i += pos
		ls, le := lineBounds(region, i)
		at := i - ls
		if m.exact == nil {
			loc := m.re.FindIndex(region[ls:le])
			if loc == nil {
				pos = le + 1
				continue
			}
			at = loc[0]
		}
		if !fn(ls, le, at) {
			return
		}
		pos = le + 1
	}
}

func lineBounds(region []byte, i int) (ls, le int) {
	ls = bytes.LastIndexByte(region[:i], '\n') + 1
	le = bytes.IndexByte(region[i:], '\n')
	if le < 0 {
		return ls, len(region)
	}
	return ls, i + le
}

// overlap is how many trailing bytes of a long line's window are searched
// again with the next one, so that a match across the cut is found.
func (m *matcher) overlap() int {
	switch {
	case m.exact != nil:
		return len(m.exact) - 1
	default:
		return regexOverlap
	}
}
