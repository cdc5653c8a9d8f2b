package search

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// maxIgnoreFileBytes bounds how much of one .gitignore (or
// .git/info/exclude) is read; rules past it are dropped.
const maxIgnoreFileBytes = 256 << 10

// maxRuleBytes bounds one rule; longer lines are dropped.
const maxRuleBytes = 4096

// ignoreRule is one parsed line of a .gitignore file.
type ignoreRule struct {
	negate   bool     // "!pattern": re-include
	dirOnly  bool     // "pattern/": directories only
	anchored bool     // the pattern holds a slash: matched against the path relative to the file's directory
	kind     ruleKind // fast paths for the common shapes
	lit      string   // kindLiteral: the name; kindSuffix: the suffix
	glob     string   // kindGlob on a base name
	segs     []string // kindGlob on an anchored path, split at "/"
}

type ruleKind uint8

const (
	kindGlob    ruleKind = iota
	kindLiteral          // no wildcard: equality
	kindSuffix           // "*.ext" without other wildcards: suffix test on the base name
)

// ignoreFile holds the rules of one ignore file, in file order; dir is the
// Project-relative directory the rules are relative to ("." for the root).
type ignoreFile struct {
	dir   string
	rules []ignoreRule
}

// ignoreStack is the ignore files that apply in a directory, outermost
// first (.git/info/exclude, then the root .gitignore, then nested ones).
// It is shared read-only between walk levels: push never mutates it.
type ignoreStack []*ignoreFile

func (s ignoreStack) push(f *ignoreFile) ignoreStack {
	if f == nil || len(f.rules) == 0 {
		return s
	}
	return append(s[:len(s):len(s)], f)
}

// ignored reports whether the Project-relative path rel (never "."), a
// directory when isDir, is excluded. Git's precedence: the deepest file
// wins over outer ones, and within a file the last matching line wins. A
// path inside an excluded directory is never asked about, because the
// walk does not descend into it (git's "cannot re-include a file if a
// parent directory is excluded").
func (s ignoreStack) ignored(rel string, isDir bool) bool {
	base := rel[strings.LastIndexByte(rel, '/')+1:]
	for i := len(s) - 1; i >= 0; i-- {
		f := s[i]
		sub := rel
		if f.dir != "." {
			if len(rel) <= len(f.dir) || rel[len(f.dir)] != '/' || rel[:len(f.dir)] != f.dir {
				continue // not below f.dir (the walk never asks; be safe)
			}
			sub = rel[len(f.dir)+1:]
		}
		for j := len(f.rules) - 1; j >= 0; j-- {
			r := &f.rules[j]
			if r.dirOnly && !isDir {
				continue
			}
			if r.match(sub, base) {
				return !r.negate
			}
		}
	}
	return false
}

func (r *ignoreRule) match(sub, base string) bool {
	subject := base
	if r.anchored {
		subject = sub
	}
	switch r.kind {
	case kindLiteral:
		return subject == r.lit
	case kindSuffix:
		return strings.HasSuffix(subject, r.lit)
	}
	if r.anchored {
		return matchSegs(r.segs, sub)
	}
	return wildSeg(r.glob, base)
}

// parseIgnore parses a gitignore-format file whose rules are relative to
// the Project-relative directory dir. Supported: comments, blank lines,
// escaped leading "#" and "!", trailing-space trimming (unless escaped),
// negation "!", directory-only "dir/", anchoring by a leading or inner
// slash, "*", "?", "[...]" (with "!" or "^" negation and ranges), "\"
// escapes, and "**" as a leading, inner or trailing path element.
func parseIgnore(data []byte, dir string) *ignoreFile {
	if len(data) > maxIgnoreFileBytes {
		data = data[:maxIgnoreFileBytes]
	}
	f := &ignoreFile{dir: dir}
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		if r, ok := parseIgnoreLine(string(line)); ok {
			f.rules = append(f.rules, r)
		}
	}
	return f
}

func parseIgnoreLine(line string) (ignoreRule, bool) {
	line = strings.TrimSuffix(line, "\r")
	line = strings.TrimPrefix(line, "\ufeff")
	// Trailing spaces are dropped unless escaped with a backslash.
	for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, `\ `) {
		line = line[:len(line)-1]
	}
	if line == "" || line[0] == '#' || len(line) > maxRuleBytes || !utf8.ValidString(line) {
		return ignoreRule{}, false
	}
	var r ignoreRule
	if line[0] == '!' {
		r.negate = true
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if strings.HasPrefix(line, "/") {
		r.anchored = true
		line = strings.TrimLeft(line, "/")
	}
	if line == "" {
		return ignoreRule{}, false
	}
	if strings.Contains(line, "/") {
		r.anchored = true
	}
	line = escapeOpenClasses(line)
	switch {
	case !hasMeta(line):
		r.kind, r.lit = kindLiteral, line
	case !r.anchored && line[0] == '*' && !hasMeta(line[1:]):
		r.kind, r.lit = kindSuffix, line[1:]
	case r.anchored:
		r.kind, r.segs = kindGlob, splitSegs(line)
	default:
		r.kind, r.glob = kindGlob, line
	}
	return r, true
}

// escapeOpenClasses escapes each "[" that starts no complete class (it is
// then a literal), so that matching never rescans an unterminated class.
// Once one "[" is open to the end, every later one is too.
func escapeOpenClasses(p string) string {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '[':
			if _, end, ok := matchClass(p, i, 0); ok {
				i = end - 1
				continue
			}
			var b strings.Builder
			b.WriteString(p[:i])
			for j := i; j < len(p); j++ {
				switch p[j] {
				case '\\':
					b.WriteByte('\\')
					if j++; j == len(p) {
						return b.String()
					}
				case '[':
					b.WriteByte('\\')
				}
				b.WriteByte(p[j])
			}
			return b.String()
		}
	}
	return p
}

func hasMeta(s string) bool { return strings.ContainsAny(s, `*?[\`) }

// splitSegs splits an anchored pattern into elements for matchSegs:
// runs of "**" collapse into one, and a trailing "**" (which must match at
// least one element: "dir/**" is what is inside dir, not dir) becomes
// "*", "**".
func splitSegs(pattern string) []string {
	var segs []string
	for _, s := range strings.Split(pattern, "/") {
		if s == "**" && len(segs) > 0 && segs[len(segs)-1] == "**" {
			continue
		}
		segs = append(segs, s)
	}
	if segs[len(segs)-1] == "**" {
		segs = append(segs[:len(segs)-1], "*", "**")
	}
	return segs
}

// matchSegs matches a slash-separated, non-empty name against pattern
// elements, a "**" element matching zero or more whole name elements. Like
// wildSeg with "*", it backtracks only to the last "**", so it runs in
// O(len(segs) × elements of name) element matches.
func matchSegs(segs []string, name string) bool {
	// Offsets into name; past len(name) means every element is consumed.
	next := func(at int) (elem string, after int) {
		if i := strings.IndexByte(name[at:], '/'); i >= 0 {
			return name[at : at+i], at + i + 1
		}
		return name[at:], len(name) + 1
	}
	px, nx := 0, 0
	starP, starN := -1, -1
	for px < len(segs) || nx <= len(name) {
		if px < len(segs) {
			if segs[px] == "**" {
				starP, starN = px, nx
				px++
				continue
			}
			if nx <= len(name) {
				if elem, after := next(nx); wildSeg(segs[px], elem) {
					px, nx = px+1, after
					continue
				}
			}
		}
		if starP >= 0 && starN <= len(name) {
			_, starN = next(starN)
			px, nx = starP+1, starN
			continue
		}
		return false
	}
	return true
}

// wildSeg matches one path element against a shell pattern: "*" any run,
// "?" one character, "[...]" a class, "\" escapes the next character.
// Neither wildcard matches "/" (names passed here hold none).
func wildSeg(pat, name string) bool {
	px, nx := 0, 0
	starP, starN := -1, -1
	for px < len(pat) || nx < len(name) {
		if px < len(pat) {
			switch c := pat[px]; c {
			case '*':
				starP, starN = px, nx
				px++
				continue
			case '?':
				if nx < len(name) {
					_, w := utf8.DecodeRuneInString(name[nx:])
					px++
					nx += w
					continue
				}
			case '[':
				if nx < len(name) {
					r, w := utf8.DecodeRuneInString(name[nx:])
					if ok, end, valid := matchClass(pat, px, r); valid {
						if ok {
							px = end
							nx += w
							continue
						}
						break
					}
				}
				// An unterminated class is a literal "[".
				if nx < len(name) && name[nx] == '[' && !classClosed(pat, px) {
					px++
					nx++
					continue
				}
			default:
				if c == '\\' && px+1 < len(pat) {
					if nx < len(name) && name[nx] == pat[px+1] {
						px += 2
						nx++
						continue
					}
					break
				}
				if nx < len(name) && name[nx] == c {
					px++
					nx++
					continue
				}
			}
		}
		// Mismatch: let the last star swallow one more character.
		if starP >= 0 && starN < len(name) {
			_, w := utf8.DecodeRuneInString(name[starN:])
			starN += w
			px, nx = starP+1, starN
			continue
		}
		return false
	}
	return true
}

func classClosed(pat string, px int) bool {
	_, _, valid := matchClass(pat, px, 0)
	return valid
}

// matchClass matches r against the class starting at pat[px] == '['. It
// returns whether r is in it, the index after the closing ']', and
// whether the class is well formed.
func matchClass(pat string, px int, r rune) (ok bool, end int, valid bool) {
	i := px + 1
	negate := false
	if i < len(pat) && (pat[i] == '!' || pat[i] == '^') {
		negate = true
		i++
	}
	first := true
	for i < len(pat) {
		if pat[i] == ']' && !first {
			return ok != negate, i + 1, true
		}
		first = false
		lo, w := classChar(pat, i)
		if w == 0 {
			return false, 0, false
		}
		i += w
		hi := lo
		if i+1 < len(pat) && pat[i] == '-' && pat[i+1] != ']' {
			var w2 int
			hi, w2 = classChar(pat, i+1)
			if w2 == 0 {
				return false, 0, false
			}
			i += 1 + w2
		}
		if lo <= r && r <= hi {
			ok = true
		}
	}
	return false, 0, false
}

func classChar(pat string, i int) (rune, int) {
	if pat[i] == '\\' {
		if i+1 >= len(pat) {
			return 0, 0
		}
		r, w := utf8.DecodeRuneInString(pat[i+1:])
		return r, w + 1
	}
	r, w := utf8.DecodeRuneInString(pat[i:])
	return r, w
}
