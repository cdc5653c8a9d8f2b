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
	"path"
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

// skillDir is where a skill directory really is: its path inside its
// source's root with every link resolved (project.Open). Its SKILL.md and
// support files are opened through that root by their real paths below
// it, so the resolver's rules (no link followed unjudged; repository
// metadata and sensitive files refused) apply to the real path of each
// file a skill shows, whatever the links in between.
type skillDir struct {
	root *os.Root
	real string
}

// path returns the path inside root of rel, relative to the skill directory.
func (d skillDir) path(rel string) string { return path.Join(d.real, rel) }

// inside reports whether the real path real lies below the skill directory.
func (d skillDir) inside(real string) bool {
	return d.real == "." || strings.HasPrefix(real, d.real+"/")
}

// visitFunc is called for each skill directory, in source order and then
// name order. Returning stop ends the visit.
type visitFunc func(src *source, dir string, sd skillDir) (stop bool, err error)

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
		// A symlinked skill directory is followed only while it stays
		// inside src.root, and judged by where it leads.
		d, real, err := project.Open(src.root, src.path(name), false)
		if err != nil {
			continue
		}
		fi, err := d.Stat()
		d.Close()
		if err != nil || !fi.IsDir() {
			continue
		}
		sd := skillDir{root: src.root, real: real}
		if f, fr, err := project.Open(src.root, sd.path(SkillFile), false); err != nil {
			continue
		} else {
			fi, err := f.Stat()
			f.Close()
			if err != nil || !fi.Mode().IsRegular() || !sd.inside(fr) {
				continue
			}
		}
		found++
		stop, err := fn(src, name, sd)
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
	d, _, err := project.Open(src.root, dir, false)
	if err != nil {
		return nil, nil
	}
	if fi, err := d.Stat(); err != nil || !fi.IsDir() {
		d.Close()
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
func (c *Catalog) find(ctx context.Context, projectRoot *os.Root, id string, fn func(src *source, dir string, sd skillDir) error) error {
	if !validID(id) {
		return fmt.Errorf("skills: %w", ErrNotFound)
	}
	found := false
	err := c.visit(ctx, projectRoot, func(src *source, dir string, sd skillDir) (bool, error) {
		if src.id(dir) != id {
			return false, nil
		}
		found = true
		return true, fn(src, dir, sd)
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
func readSkill(src *source, dir string, sd skillDir) (Skill, string) {
	s := Skill{ID: src.id(dir), Name: cleanText(dir, MaxNameRunes), Trust: src.trust, Source: src.kind}
	data, msg := readSkillFile(sd)
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

// readSkillFile reads SKILL.md of the skill directory sd. msg, when not
// empty, is the Error of a skill whose file cannot be used.
func readSkillFile(sd skillDir) (data []byte, msg string) {
	const unreadable = "SKILL.md could not be read"
	tooLarge := fmt.Sprintf("SKILL.md is larger than %d bytes and was not read", MaxFileBytes)
	// The Stat of the open file decides; its real path must stay inside
	// the skill directory.
	h, real, err := project.Open(sd.root, sd.path(SkillFile), false)
	if err != nil {
		return nil, unreadable
	}
	if !sd.inside(real) {
		h.Close()
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

// supportFiles lists the support files of the skill directory sd,
// breadth-first, bounded (see Loaded.Files). Every file is judged by its
// real path inside sd's root: a sensitive file or repository metadata is
// never listed, also behind a link.
func supportFiles(ctx context.Context, sd skillDir) (files []string, truncated bool, err error) {
	files = []string{}
	queue := []string{"."}
	seen := 0
	for depth := 0; len(queue) > 0; depth++ {
		var nextLevel []string
		for _, dir := range queue {
			if err := ctx.Err(); err != nil {
				return nil, false, err
			}
			names, types, stopped := readDirNames(sd, dir, maxWalkEntries-seen)
			seen += len(names)
			if stopped {
				truncated = true
			}
			for i, name := range names {
				rel := name
				if dir != "." {
					rel = dir + "/" + name
				}
				full := sd.path(rel)
				if strings.HasPrefix(name, ".") || !validName(name) || rel == SkillFile ||
					project.IsSensitive(full) || project.IsRepositoryMetadata(full) {
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
					// A symlink counts when it resolves, inside the skill
					// directory, to a regular file that is neither sensitive
					// nor repository metadata; symlinked directories are not
					// walked (no cycles).
					if t&fs.ModeSymlink != 0 {
						f, real, err := project.Open(sd.root, full, false)
						if err != nil {
							continue
						}
						fi, err := f.Stat()
						f.Close()
						if err != nil || !fi.Mode().IsRegular() || !sd.inside(real) {
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

// readDirNames returns up to max entries of dir, relative to the skill
// directory sd (sorted by name), and their types; stopped is set when more
// remained. A directory that cannot be opened or read, or that is no
// longer where the walk found it (a link swapped in), yields nothing.
func readDirNames(sd skillDir, dir string, max int) (names []string, types []fs.FileMode, stopped bool) {
	if max <= 0 {
		return nil, nil, true
	}
	d, real, err := project.Open(sd.root, sd.path(dir), false)
	if err != nil {
		return nil, nil, false
	}
	defer d.Close()
	if fi, err := d.Stat(); err != nil || !fi.IsDir() || real != sd.path(dir) {
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
