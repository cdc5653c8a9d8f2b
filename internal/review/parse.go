package review

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
)

// rawEntry is one record of `--raw -z` output.
type rawEntry struct {
	status  byte // A, C, D, M, R, T, U or X
	path    string
	oldPath string // source of a rename or copy
}

// lineCount is one record of `--numstat -z` output.
type lineCount struct {
	added, removed int
	binary         bool
}

// diffOutput is the parsed output of `-z --raw --numstat [-p]`.
type diffOutput struct {
	entries []rawEntry
	counts  map[string]lineCount // by (new) path
	patch   []byte
	// complete is false when the output was cut inside the listing, so
	// entries or counts may lack records.
	complete bool
}

// tokens reads NUL-terminated fields.
type tokens struct {
	b   []byte
	off int
}

// next returns the next field; ok is false when no terminated field remains.
func (t *tokens) next() (string, bool) {
	i := bytes.IndexByte(t.b[t.off:], 0)
	if i < 0 {
		return "", false
	}
	s := string(t.b[t.off : t.off+i])
	t.off += i + 1
	return s, true
}

// peek reports whether a terminated field remains and its first byte (0 for
// an empty field).
func (t *tokens) peek() (byte, bool) {
	i := bytes.IndexByte(t.b[t.off:], 0)
	if i < 0 {
		return 0, false
	}
	if i == 0 {
		return 0, true
	}
	return t.b[t.off], true
}

// parseDiff parses the output of a plumbing diff run with
// `-z --raw --numstat [-p]`: raw records (":<modes> <ids> <status>\0<path>\0",
// two paths for renames and copies), then numstat records
// ("<added>\t<removed>\t<path>\0", or "<added>\t<removed>\t\0<old>\0<new>\0"),
// then, when a patch follows, an empty field and the patch text. complete says
// whether out is the whole output; when it is not, parsing stops quietly at
// the first incomplete record.
func parseDiff(out []byte, complete bool) (diffOutput, error) {
	d := diffOutput{counts: map[string]lineCount{}, complete: true}
	t := &tokens{b: out}
	incomplete := func() (diffOutput, error) {
		if complete {
			return d, errors.New("output ends inside a record")
		}
		d.complete = false
		return d, nil
	}
	// Raw records.
	for {
		first, ok := t.peek()
		if !ok {
			if t.off == len(out) && complete {
				return d, nil
			}
			return incomplete()
		}
		if first != ':' {
			break
		}
		meta, _ := t.next()
		sp := strings.LastIndexByte(meta, ' ')
		if sp < 0 || sp+1 >= len(meta) {
			return d, errors.New("malformed raw record")
		}
		e := rawEntry{status: meta[sp+1]}
		p, ok := t.next()
		if !ok {
			return incomplete()
		}
		if e.status == 'R' || e.status == 'C' {
			e.oldPath = p
			if p, ok = t.next(); !ok {
				return incomplete()
			}
		}
		e.path = p
		d.entries = append(d.entries, e)
	}
	// Numstat records, up to the empty separator field before the patch.
	for {
		f, ok := t.next()
		if !ok {
			if t.off == len(out) && complete {
				return d, nil
			}
			return incomplete()
		}
		if f == "" {
			d.patch = out[t.off:]
			return d, nil
		}
		parts := strings.SplitN(f, "\t", 3)
		if len(parts) != 3 {
			return d, errors.New("malformed numstat record")
		}
		var c lineCount
		if parts[0] == "-" && parts[1] == "-" {
			c.binary = true
		} else {
			a, err1 := strconv.Atoi(parts[0])
			r, err2 := strconv.Atoi(parts[1])
			if err1 != nil || err2 != nil {
				return d, errors.New("malformed numstat counts")
			}
			c.added, c.removed = a, r
		}
		path := parts[2]
		if path == "" {
			if _, ok := t.next(); !ok {
				return incomplete()
			}
			if path, ok = t.next(); !ok {
				return incomplete()
			}
		}
		d.counts[path] = c
	}
}

// parseNames splits `-z` name output; a trailing unterminated field (output
// cut at its cap) is dropped.
func parseNames(out []byte) []string {
	var names []string
	t := &tokens{b: out}
	for {
		s, ok := t.next()
		if !ok {
			return names
		}
		if s != "" {
			names = append(names, s)
		}
	}
}
