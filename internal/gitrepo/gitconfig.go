package gitrepo

import (
	"errors"
	"strings"
)

// configEntry is one variable of a Git configuration file.
type configEntry struct {
	section    string // lowercase
	subsection string // as written ("" when none)
	name       string // lowercase
	value      string
	hasValue   bool // false for a bare "name" (boolean true)
}

// parseConfig parses a Git configuration file the way Git's config.c does,
// as far as needed to find every variable: comments (# and ;), section
// headers [section], [section "subsection"] and the legacy
// [section.subsection] (also followed by a variable on the same line),
// variables with or without "= value", quoted value parts, the escapes \\
// \" \n \t \b and backslash-newline continuations, variables before any
// section. Whatever Git itself would reject is an error here too, and so is
// a NUL byte (which Git would cut a value at), so a file this parser cannot
// read is never half understood. TestParseConfigMatchesGit compares it with
// Git.
func parseConfig(data []byte) ([]configEntry, error) {
	if strings.IndexByte(string(data), 0) >= 0 {
		// Git cuts a value at a NUL; refusing is simpler than mimicking.
		return nil, errors.New("NUL byte in configuration")
	}
	p := &configParser{s: strings.ReplaceAll(string(data), "\r\n", "\n")}
	p.s = strings.TrimPrefix(p.s, "\xef\xbb\xbf") // Git skips a UTF-8 BOM
	var out []configEntry
	var section, subsection string // Git accepts variables before any section, with none
	for {
		c, ok := p.next()
		if !ok {
			return out, nil
		}
		switch {
		case c == '\n' || c == ' ' || c == '\t' || c == '\r':
			continue
		case c == '#' || c == ';':
			p.skipLine()
			continue
		case c == '[':
			var err error
			section, subsection, err = p.header()
			if err != nil {
				return nil, err
			}
			continue
		case !isAlpha(c):
			return nil, errors.New("bad config line")
		}
		e, err := p.variable(c)
		if err != nil {
			return nil, err
		}
		e.section, e.subsection = section, subsection
		out = append(out, e)
	}
}

type configParser struct {
	s string
	i int
}

func (p *configParser) next() (byte, bool) {
	if p.i >= len(p.s) {
		return 0, false
	}
	c := p.s[p.i]
	p.i++
	return c, true
}

func (p *configParser) peek() (byte, bool) {
	if p.i >= len(p.s) {
		return 0, false
	}
	return p.s[p.i], true
}

func (p *configParser) skipLine() {
	for {
		c, ok := p.next()
		if !ok || c == '\n' {
			return
		}
	}
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isKeyChar(c byte) bool { return isAlpha(c) || c >= '0' && c <= '9' || c == '-' }

func lower(s string) string { return strings.ToLower(s) }

// header parses a section header after its '['.
func (p *configParser) header() (section, subsection string, err error) {
	var b strings.Builder
	for {
		c, ok := p.next()
		if !ok {
			return "", "", errors.New("unterminated section header")
		}
		switch {
		case c == ']':
			name := b.String()
			if name == "" {
				return "", "", errors.New("empty section name")
			}
			// Legacy [section.subsection]: the subsection is lowercased.
			if sec, sub, ok := strings.Cut(name, "."); ok {
				return lower(sec), lower(sub), nil
			}
			return lower(name), "", nil
		case c == ' ' || c == '\t':
			// [section "subsection"]
			for {
				c, ok = p.next()
				if !ok {
					return "", "", errors.New("unterminated section header")
				}
				if c != ' ' && c != '\t' {
					break
				}
			}
			if c != '"' || b.Len() == 0 {
				return "", "", errors.New("bad section header")
			}
			var sub strings.Builder
			for {
				c, ok = p.next()
				if !ok || c == '\n' {
					return "", "", errors.New("unterminated subsection")
				}
				if c == '"' {
					break
				}
				if c == '\\' {
					if c, ok = p.next(); !ok || c == '\n' {
						return "", "", errors.New("unterminated subsection")
					}
				}
				sub.WriteByte(c)
			}
			if c, ok = p.next(); !ok || c != ']' {
				return "", "", errors.New("bad section header")
			}
			return lower(b.String()), sub.String(), nil
		case isKeyChar(c) || c == '.':
			b.WriteByte(c)
		default:
			return "", "", errors.New("bad section name")
		}
	}
}

// variable parses "name [= value]" whose first character is first.
func (p *configParser) variable(first byte) (configEntry, error) {
	var name strings.Builder
	name.WriteByte(first)
	for {
		c, ok := p.peek()
		if !ok || !isKeyChar(c) {
			break
		}
		name.WriteByte(c)
		p.i++
	}
	e := configEntry{name: lower(name.String())}
	for {
		c, ok := p.peek()
		if !ok || (c != ' ' && c != '\t') {
			break
		}
		p.i++
	}
	c, ok := p.next()
	switch {
	case !ok || c == '\n':
		return e, nil
	case c == '#' || c == ';':
		p.skipLine()
		return e, nil
	case c != '=':
		return e, errors.New("bad config line")
	}
	v, err := p.value()
	if err != nil {
		return e, err
	}
	e.value, e.hasValue = v, true
	return e, nil
}

// value parses a value after '=', up to the end of its (last continued)
// line, like config.c's parse_value.
func (p *configParser) value() (string, error) {
	var b strings.Builder
	quoted, space, comment := false, 0, false
	for {
		c, ok := p.next()
		if !ok {
			if quoted {
				return "", errors.New("unterminated quote")
			}
			return b.String(), nil
		}
		if c == '\n' {
			if quoted {
				return "", errors.New("unterminated quote")
			}
			return b.String(), nil
		}
		if comment {
			continue
		}
		if (c == ' ' || c == '\t') && !quoted {
			if b.Len() > 0 {
				space++
			}
			continue
		}
		if !quoted && (c == ';' || c == '#') {
			comment = true
			continue
		}
		for ; space > 0; space-- {
			b.WriteByte(' ')
		}
		switch c {
		case '\\':
			c, ok = p.next()
			if !ok {
				return b.String(), nil // Git reads end of file as a newline
			}
			switch c {
			case '\n':
				continue
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'n':
				c = '\n'
			case '\\', '"':
			default:
				return "", errors.New("bad escape")
			}
			b.WriteByte(c)
		case '"':
			quoted = !quoted
		default:
			b.WriteByte(c)
		}
	}
}
