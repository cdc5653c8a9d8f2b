package skills

import (
	"fmt"
	"strconv"
	"strings"
)

// parsed is what parseSkillFile extracts from a SKILL.md. name and
// description are raw (not yet sanitized or bounded).
type parsed struct {
	name        string
	description string
	body        string
}

// parseSkillFile splits a SKILL.md text (valid UTF-8, "\n" line ends) into
// its frontmatter and body. The frontmatter is a deliberately small subset of
// YAML, enough for the Agent Skills fields we use and strict about anything
// else:
//
//   - the text starts with a "---" line and the frontmatter ends at the next
//     "---" line; everything after it is the body;
//   - each top-level line is "key: value" or "key:" (keys are ASCII letters,
//     digits, '-', '_' and '.'); a key may appear once;
//   - indented lines continue the previous key: folded into its value with
//     single spaces, or, after a "|" or ">" block indicator, kept as lines;
//     this also lets nested maps and lists of keys we ignore (metadata,
//     allowed-tools…) pass without being interpreted;
//   - blank lines and lines starting with "#" are skipped;
//   - a value may be plain (a " #" starts a comment), single-quoted (two
//     quotes inside stand for one) or double-quoted (Go escapes, which
//     cover YAML's common ones).
//
// Only name and description are interpreted; a value of theirs written in
// another YAML form (flow collection, anchor, alias, tag) is an error. The
// error message is safe to show: it names a line number, never content.
func parseSkillFile(text string) (parsed, error) {
	lines := strings.Split(text, "\n")
	if !isFence(lines[0]) {
		return parsed{}, fmt.Errorf("SKILL.md must start with a %q line opening the frontmatter", "---")
	}
	var (
		p       parsed
		seen    = map[string]bool{}
		key     string   // key being collected; "" before the first
		head    string   // its value on the key line
		cont    []string // its continuation lines
		keyLine int
	)
	finish := func() error {
		if key != "name" && key != "description" {
			return nil
		}
		v, err := scalar(head, cont)
		if err != nil {
			return fmt.Errorf("frontmatter line %d: %s", keyLine, err)
		}
		if key == "name" {
			p.name = v
		} else {
			p.description = v
		}
		return nil
	}
	for i := 1; i < len(lines); i++ {
		line, n := lines[i], i+1
		switch {
		case isFence(line):
			if err := finish(); err != nil {
				return parsed{}, err
			}
			p.body = strings.Join(lines[i+1:], "\n")
			return p, nil
		case strings.TrimSpace(line) == "":
			if key != "" {
				cont = append(cont, "")
			}
		case line[0] == ' ' || line[0] == '\t':
			if key == "" {
				return parsed{}, fmt.Errorf("frontmatter line %d: indented line without a key before it", n)
			}
			cont = append(cont, strings.TrimSpace(line))
		case line[0] == '#':
			// A comment.
		default:
			if err := finish(); err != nil {
				return parsed{}, err
			}
			k, v, ok := strings.Cut(line, ":")
			if !ok || !validKey(k) || v != "" && v[0] != ' ' && v[0] != '\t' {
				return parsed{}, fmt.Errorf("frontmatter line %d: expected %q", n, "key: value")
			}
			if seen[k] {
				return parsed{}, fmt.Errorf("frontmatter line %d: duplicate key %q", n, k)
			}
			seen[k] = true
			key, head, cont, keyLine = k, strings.TrimSpace(v), nil, n
		}
	}
	return parsed{}, fmt.Errorf("frontmatter is not closed by a %q line", "---")
}

func isFence(line string) bool { return strings.TrimRight(line, " \t") == "---" }

// validKey reports whether k is a key the parser accepts. Reported keys are
// quoted with %q, so they cannot inject text either way.
func validKey(k string) bool {
	if k == "" || len(k) > 64 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// scalar interprets the value of an interpreted key: head is the trimmed
// text after "key:", cont its continuation lines (trimmed, "" for blank).
func scalar(head string, cont []string) (string, error) {
	switch {
	case isBlockIndicator(head):
		sep := "\n"
		if head[0] == '>' {
			sep = " "
		}
		return strings.TrimSpace(strings.Join(cont, sep)), nil
	case head == "":
		return strings.Join(strings.Fields(strings.Join(cont, " ")), " "), nil
	}
	full := head
	if len(cont) > 0 {
		full += " " + strings.Join(cont, " ")
	}
	full = strings.TrimSpace(full)
	switch full[0] {
	case '#':
		return "", nil // only a comment
	case '"':
		v, err := strconv.Unquote(full)
		if err != nil {
			return "", fmt.Errorf("invalid double-quoted value")
		}
		return v, nil
	case '\'':
		if len(full) < 2 || full[len(full)-1] != '\'' {
			return "", fmt.Errorf("unterminated single-quoted value")
		}
		inner := full[1 : len(full)-1]
		if strings.Contains(strings.ReplaceAll(inner, "''", ""), "'") {
			return "", fmt.Errorf("invalid single-quoted value")
		}
		return strings.ReplaceAll(inner, "''", "'"), nil
	case '[', '{', '&', '*', '!', '%', '@', '`', '|', '>':
		return "", fmt.Errorf("unsupported YAML syntax; write a plain or quoted string")
	}
	if i := strings.Index(full, " #"); i >= 0 {
		full = strings.TrimSpace(full[:i])
	}
	return full, nil
}

// isBlockIndicator reports whether v is a YAML block scalar header: "|" or
// ">" with an optional chomping indicator and indentation digit.
func isBlockIndicator(v string) bool {
	if v == "" || v[0] != '|' && v[0] != '>' {
		return false
	}
	for _, c := range v[1:] {
		if c != '-' && c != '+' && (c < '1' || c > '9') {
			return false
		}
	}
	return len(v) <= 3
}
