package skills

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/devspace-dev/devspace/internal/project"
)

// source is one directory of skill directories, open for one call.
type source struct {
	kind   string   // SourceRepository or SourceConfigured
	index  int      // position among the sources of its kind
	trust  string   // TrustRepository or TrustAdmin
	root   *os.Root // the Project's root, or the trusted directory's
	prefix string   // path of the source directory inside root, "" for root itself
}

func (s *source) path(dir string) string {
	if s.prefix == "" {
		return dir
	}
	return s.prefix + "/" + dir
}

// id returns the skillId of directory dir of s.
func (s *source) id(dir string) string {
	sum := sha256.Sum256([]byte(s.kind + "\x00" + strconv.Itoa(s.index) + "\x00" + dir))
	return "sk_" + base64.RawURLEncoding.EncodeToString(sum[:])[:16]
}

// visitFunc is called for each skill directory, in source order and then
// name order; skillRoot is open for the call only. Returning stop ends the
// visit.
type visitFunc func(src *source, dir string, skillRoot *os.Root) (stop bool, err error)

// visit calls fn for every skill of every source (see the package doc for
// what counts as one).
func (c *Catalog) visit(ctx context.Context, projectRoot *os.Root, fn visitFunc) error {
	for i, d := range c.trusted {
		r, err := os.OpenRoot(d)
		if err != nil {
			continue // gone since New: contributes nothing
		}
		stop, err := visitSource(ctx, &source{kind: SourceConfigured, index: i, trust: TrustAdmin, root: r}, fn)
		r.Close()
		if err != nil || stop {
			return err
		}
	}
	if projectRoot == nil {
		return nil
	}
	_, err := visitSource(ctx, &source{kind: SourceRepository, trust: TrustRepository, root: projectRoot, prefix: RepositoryDir}, fn)
	return err
}

func visitSource(ctx context.Context, src *source, fn visitFunc) (bool, error) {
	names, err := scanSource(ctx, src)
	if err != nil {
		return false, err
	}
	found := 0
	for _, name := range names {
		if found == MaxSkillsPerSource {
			break
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
		// OpenRoot follows a symlinked skill directory only while it stays
		// inside src.root; it refuses non-directories.
		sr, err := src.root.OpenRoot(src.path(name))
		if err != nil {
			continue
		}
		if fi, err := sr.Stat(SkillFile); err != nil || !fi.Mode().IsRegular() {
			sr.Close()
			continue
		}
		found++
		stop, err := fn(src, name, sr)
		sr.Close()
		if err != nil || stop {
			return stop, err
		}
	}
	return false, nil
}

// scanSource returns the sorted names of the source directory's entries
// that may be skill directories: directories and symlinks, not hidden, valid
// UTF-8. A source directory that does not exist or cannot be opened yields
// none; a failure while listing an opened one is an error.
func scanSource(ctx context.Context, src *source) ([]string, error) {
	dir := src.prefix
	if dir == "" {
		dir = "."
	}
	// Stat first so that only directories are opened; dirOpenFlags guard
	// against a swap between the two calls where the platform allows.
	if fi, err := src.root.Stat(dir); err != nil || !fi.IsDir() {
		return nil, nil
	}
	d, err := src.root.OpenFile(dir, dirOpenFlags, 0)
	if err != nil {
		return nil, nil
	}
	defer d.Close()
	var names []string
	for len(names) < MaxScanEntries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		entries, err := d.ReadDir(min(256, MaxScanEntries-len(names)))
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") || !validUTF8(name) {
				continue
			}
			if t := e.Type(); t.IsDir() || t&fs.ModeSymlink != 0 {
				names = append(names, name)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("skills: list %s source: %w", src.kind, project.Scrub(err))
		}
	}
	slices.Sort(names)
	return names, nil
}

// find calls fn for the skill with skillId id, or returns an error wrapping
// ErrNotFound.
func (c *Catalog) find(ctx context.Context, projectRoot *os.Root, id string, fn func(src *source, dir string, skillRoot *os.Root) error) error {
	if !validID(id) {
		return fmt.Errorf("skills: %w", ErrNotFound)
	}
	found := false
	err := c.visit(ctx, projectRoot, func(src *source, dir string, sr *os.Root) (bool, error) {
		if src.id(dir) != id {
			return false, nil
		}
		found = true
		return true, fn(src, dir, sr)
	})
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("skills: %w", ErrNotFound)
	}
	return nil
}

// validID reports whether id has the shape of a skillId.
func validID(id string) bool {
	if len(id) != 19 || !strings.HasPrefix(id, "sk_") {
		return false
	}
	for _, c := range []byte(id[3:]) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// readSkill reads SKILL.md of a skill directory and returns its metadata and
// sanitized body. A skill that cannot be used gets an Error, its directory
// name as Name, and an empty body.
func readSkill(src *source, dir string, sr *os.Root) (Skill, string) {
	s := Skill{ID: src.id(dir), Name: cleanText(dir, MaxNameRunes), Trust: src.trust, Source: src.kind}
	data, msg := readSkillFile(sr)
	if msg != "" {
		s.Error = msg
		return s, ""
	}
	p, err := parseSkillFile(strings.ReplaceAll(strings.TrimPrefix(strings.ToValidUTF8(string(data), "\uFFFD"), "\uFEFF"), "\r\n", "\n"))
	if err != nil {
		s.Error = "invalid SKILL.md: " + err.Error()
		return s, ""
	}
	if name := cleanText(p.name, MaxNameRunes); name != "" {
		s.Name = name
	} else {
		s.Error = "invalid SKILL.md: the frontmatter has no name"
	}
	s.Description = cleanText(p.description, MaxDescriptionRunes)
	if s.Description == "" && s.Error == "" {
		s.Error = "invalid SKILL.md: the frontmatter has no description"
	}
	if s.Error != "" {
		return s, ""
	}
	return s, cleanBody(p.body)
}

// readSkillFile reads SKILL.md of the skill directory sr. msg, when not
// empty, is the Error of a skill whose file cannot be used.
func readSkillFile(sr *os.Root) (data []byte, msg string) {
	const unreadable = "SKILL.md could not be read"
	tooLarge := fmt.Sprintf("SKILL.md is larger than %d bytes and was not read", MaxFileBytes)
	// fileOpenFlags keep the open from blocking if a FIFO was put in place
	// after the caller's Stat; the Stat of the open file decides.
	h, err := sr.OpenFile(SkillFile, fileOpenFlags, 0)
	if err != nil {
		return nil, unreadable
	}
	defer h.Close()
	fi, err := h.Stat()
	switch {
	case err != nil, !fi.Mode().IsRegular():
		return nil, unreadable
	case fi.Size() > MaxFileBytes:
		return nil, tooLarge
	}
	data, err = io.ReadAll(io.LimitReader(h, MaxFileBytes+1))
	switch {
	case err != nil:
		return nil, unreadable
	case len(data) > MaxFileBytes: // grew since the Stat
		return nil, tooLarge
	}
	return data, ""
}

// cleanText makes a metadata value safe to show on one line: invalid UTF-8
// replaced, control characters removed (white-space ones become spaces),
// white space collapsed, cut to max characters.
func cleanText(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return ' '
		case unicode.IsControl(r):
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > max {
		s = strings.TrimSpace(string([]rune(s)[:max]))
	}
	return s
}

// cleanBody replaces invalid UTF-8 and removes control characters other than
// tab and newline (carriage returns were already normalized away).
func cleanBody(s string) string {
	return strings.Map(func(r rune) rune {
		if r != '\t' && r != '\n' && unicode.IsControl(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// validName reports whether a directory entry name can be listed: valid
// UTF-8 without control characters, so that it survives project.CleanRel
// and shows on one line.
func validName(name string) bool {
	return validUTF8(name) && !strings.ContainsFunc(name, unicode.IsControl)
}

func validUTF8(s string) bool { return utf8.ValidString(s) }

// supportFiles lists the support files of the skill directory sr,
// breadth-first, bounded (see Loaded.Files).
func supportFiles(ctx context.Context, sr *os.Root) (files []string, truncated bool, err error) {
	files = []string{}
	queue := []string{"."}
	seen := 0
	for depth := 0; len(queue) > 0; depth++ {
		var nextLevel []string
		for _, dir := range queue {
			if err := ctx.Err(); err != nil {
				return nil, false, err
			}
			names, types, stopped := readDirNames(sr, dir, maxWalkEntries-seen)
			seen += len(names)
			if stopped {
				truncated = true
			}
			for i, name := range names {
				rel := name
				if dir != "." {
					rel = dir + "/" + name
				}
				if strings.HasPrefix(name, ".") || !validName(name) || rel == SkillFile {
					continue
				}
				switch t := types[i]; {
				case t.IsDir():
					if depth+1 < maxWalkDepth {
						nextLevel = append(nextLevel, rel)
					} else {
						truncated = true
					}
				case t.IsRegular(), t&fs.ModeSymlink != 0:
					if project.IsSensitive(rel) {
						continue
					}
					// A symlink counts when it resolves, inside the skill
					// directory, to a regular file; symlinked directories are
					// not walked (no cycles).
					if t&fs.ModeSymlink != 0 {
						if fi, err := sr.Stat(rel); err != nil || !fi.Mode().IsRegular() {
							continue
						}
					}
					if len(files) == MaxSupportFiles {
						truncated = true
						continue
					}
					files = append(files, rel)
				}
			}
			if seen >= maxWalkEntries {
				truncated = true
				break
			}
		}
		if seen >= maxWalkEntries {
			break
		}
		queue = nextLevel
	}
	slices.Sort(files)
	return files, truncated, nil
}

// readDirNames returns up to max entries of dir (sorted by name) and their
// types; stopped is set when more remained. A directory that cannot be
// opened or read yields what was read.
func readDirNames(sr *os.Root, dir string, max int) (names []string, types []fs.FileMode, stopped bool) {
	if max <= 0 {
		return nil, nil, true
	}
	d, err := sr.OpenFile(dir, dirOpenFlags, 0)
	if err != nil {
		return nil, nil, false
	}
	defer d.Close()
	if fi, err := d.Stat(); err != nil || !fi.IsDir() {
		return nil, nil, false
	}
	entries, err := d.ReadDir(max + 1)
	if err != nil && !errors.Is(err, io.EOF) && len(entries) == 0 {
		return nil, nil, false
	}
	if len(entries) > max {
		entries, stopped = entries[:max], true
	}
	slices.SortFunc(entries, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range entries {
		names = append(names, e.Name())
		types = append(types, e.Type())
	}
	return names, types, stopped
}
