// Package skills discovers Agent Skills, lists and searches their metadata,
// loads one skill's instructions and resolves its support files (docs/design.md §7,
// the skills tool). It knows nothing about MCP: the tool edge renders what it
// returns and maps its errors.
//
// # Sources
//
// A skill is a directory holding a SKILL.md file. Two kinds of source
// directories hold skill directories, one level deep
// (<source>/<dir>/SKILL.md):
//
//   - the Project's .agents/skills, read through the Project's *os.Root;
//     its skills are TrustRepository, data for the model and never a source
//     of authority (docs/design.md §1);
//   - the trusted directories the operator configured (DEVSPACE_SKILL_PATHS),
//     each opened with os.OpenRoot; their skills are TrustAdmin.
//
// Skill directories and SKILL.md are resolved through an *os.Root: a symlink
// is followed only while it stays inside (the Project, or the trusted
// directory), and SKILL.md itself must stay inside its skill directory.
// Anything else (escaping or dangling symlinks, FIFOs, devices, unreadable
// entries, names starting with ".") is treated as if it did not exist. A
// source that does not exist or cannot be opened contributes nothing.
//
// # Bounds
//
// Each source directory is read up to MaxScanEntries entries; their names
// are sorted and the first MaxSkillsPerSource directories holding a regular
// SKILL.md are the source's skills. A SKILL.md larger than MaxFileBytes is
// listed with an Error and cannot be loaded. A name is cut to MaxNameRunes
// and a description to MaxDescriptionRunes characters; both have control
// characters removed, white space collapsed and invalid UTF-8 replaced. A
// loaded body has invalid UTF-8 replaced and control characters other than
// tab and newline removed. Loaded.Files lists at most MaxSupportFiles files,
// found breadth-first in sorted order without following symlinked
// directories.
//
// # Identity
//
// A skillId is "sk_" and 16 base64url characters of the SHA-256 of the source
// kind, the source's position and the skill directory's name. It is stable
// while the configuration and the directory name stay the same, and reveals
// neither a host path nor a name.
//
// Nothing is cached: every call reads the filesystem again, so an edit to a
// skill shows at the next call.
package skills

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Trust classes (the values of Skill.Trust), shared with instruction files.
const (
	TrustRepository = "repository_untrusted" // skills found in a Project
	TrustAdmin      = "admin_trusted"        // skills in configured directories
)

// Sources (the values of Skill.Source).
const (
	SourceRepository = "repository" // the Project's .agents/skills
	SourceConfigured = "configured" // a DEVSPACE_SKILL_PATHS directory
)

// RepositoryDir is the Project-relative directory holding repository skills.
const RepositoryDir = ".agents/skills"

// SkillFile is the name of the file that makes a directory a skill.
const SkillFile = "SKILL.md"

// Limits (docs/design.md §9 for MaxFileBytes).
const (
	// MaxFileBytes is the largest SKILL.md that is read.
	MaxFileBytes = 64 << 10
	// MaxSkillsPerSource bounds the skills of one source.
	MaxSkillsPerSource = 200
	// MaxScanEntries bounds the entries read from one source directory.
	MaxScanEntries = 10000
	// MaxNameRunes and MaxDescriptionRunes bound the metadata, in characters.
	MaxNameRunes        = 64
	MaxDescriptionRunes = 1024
	// MaxSupportFiles bounds Loaded.Files.
	MaxSupportFiles = 100
	// DefaultSearchLimit and MaxSearchLimit bound a Search page.
	DefaultSearchLimit = 20
	MaxSearchLimit     = 50
	// MaxQueryBytes bounds a Search query.
	MaxQueryBytes = 256
)

// Limits of the support-file walk of Load; not part of the contract.
const (
	maxWalkDepth   = 8
	maxWalkEntries = 5000
)

// Errors. This package owns them; the tool edge maps them to tool errors.
var (
	// ErrNotFound: no skill has that skillId (now), or a support file does
	// not exist.
	ErrNotFound = errors.New("skill not found")
	// ErrInvalid: the skill is listed with an Error and cannot be loaded.
	ErrInvalid = errors.New("skill is invalid")
	// ErrNotLoaded: a support file was requested for a skill the execution
	// has not loaded.
	ErrNotLoaded = errors.New("skill not loaded")
	// ErrBadQuery: a Search query or paging argument is out of range.
	ErrBadQuery = errors.New("bad skill query")
)

// Skill is the metadata of one skill.
type Skill struct {
	ID          string `json:"skillId"`
	Name        string `json:"name"`        // from the frontmatter; the directory name when it has none
	Description string `json:"description"` // "" when the frontmatter has none
	Trust       string `json:"trust"`       // TrustRepository or TrustAdmin
	Source      string `json:"source"`      // SourceRepository or SourceConfigured
	// Error says why the skill cannot be loaded (too large, unreadable,
	// invalid frontmatter); "" for a usable skill. It never contains a host
	// path or file content.
	Error string `json:"error,omitempty"`
}

// Loaded is a skill's full content.
type Loaded struct {
	Skill
	// Body is SKILL.md after its frontmatter, sanitized.
	Body string `json:"body"`
	// Files are the skill's support files: regular files below the skill
	// directory other than its SKILL.md, relative to it, slash-separated,
	// sorted. Hidden names (starting with "."), sensitive files
	// (project.IsSensitive) and names that are not valid UTF-8 or contain
	// control characters are left out. Each is readable as
	// skill://<skillId>/<path> through OpenSupport. Never nil.
	Files []string `json:"files"`
	// FilesTruncated is set when the walk stopped at a bound, so Files may
	// miss some files.
	FilesTruncated bool `json:"filesTruncated,omitempty"`
}

// Catalog finds skills in a Project and in the configured trusted
// directories. The zero Catalog has no trusted directories and is ready to
// use. It is immutable and safe for concurrent use. It holds no open
// files: trusted directories are opened at each call, and a Project's
// *os.Root is borrowed for the duration of a call.
type Catalog struct {
	trusted []string // absolute, cleaned, distinct
}

// New returns a Catalog with the trusted (admin_trusted) skill directories
// trustedDirs, in configuration order. Each must be an absolute path to a
// directory that can be opened; duplicates are dropped. The error is for
// the operator and names the path.
func New(trustedDirs []string) (*Catalog, error) {
	c := &Catalog{}
	for _, d := range trustedDirs {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("skills: trusted directory %q is not an absolute path", d)
		}
		d = filepath.Clean(d)
		if slices.Contains(c.trusted, d) {
			continue
		}
		r, err := os.OpenRoot(d)
		if err != nil {
			return nil, fmt.Errorf("skills: trusted directory: %w", err)
		}
		r.Close()
		c.trusted = append(c.trusted, d)
	}
	return c, nil
}

// List returns every skill: the trusted ones first, then the Project's,
// each group ordered by name (case-insensitively, then bytewise, then by
// skillId). projectRoot is borrowed; nil means no repository source. Skills
// with an Error are included. It never returns nil without an error; errors
// are ctx's or a failure listing an opened source directory, and never
// contain a host path.
func (c *Catalog) List(ctx context.Context, projectRoot *os.Root) ([]Skill, error) {
	out := []Skill{}
	err := c.visit(ctx, projectRoot, func(src *source, dir string, sd skillDir) (bool, error) {
		s, _ := readSkill(src, dir, sd)
		out = append(out, s)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	rank := func(s Skill) int {
		if s.Trust == TrustAdmin {
			return 0
		}
		return 1
	}
	slices.SortFunc(out, func(a, b Skill) int {
		return cmp.Or(
			cmp.Compare(rank(a), rank(b)),
			cmp.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)),
			cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.ID, b.ID),
		)
	})
	return out, nil
}

// Search returns one page of the skills whose name or description contains
// every white-space separated term of query, ignoring case, in List order;
// an empty query matches every skill. offset is the number of matches to
// skip; limit the page size (0 means DefaultSearchLimit, larger than
// MaxSearchLimit means MaxSearchLimit). next is the offset of the following
// page and done is true when there is none (next is then 0). A negative
// offset or limit, or a query longer than MaxQueryBytes or not valid UTF-8,
// is an error wrapping ErrBadQuery; other errors are List's.
func (c *Catalog) Search(ctx context.Context, projectRoot *os.Root, query string, offset, limit int) (items []Skill, next int, done bool, err error) {
	switch {
	case offset < 0, limit < 0:
		return nil, 0, false, fmt.Errorf("skills: %w: negative offset or limit", ErrBadQuery)
	case len(query) > MaxQueryBytes:
		return nil, 0, false, fmt.Errorf("skills: %w: query longer than %d bytes", ErrBadQuery, MaxQueryBytes)
	case !validUTF8(query):
		return nil, 0, false, fmt.Errorf("skills: %w: query is not valid UTF-8", ErrBadQuery)
	}
	if limit == 0 {
		limit = DefaultSearchLimit
	}
	limit = min(limit, MaxSearchLimit)
	all, err := c.List(ctx, projectRoot)
	if err != nil {
		return nil, 0, false, err
	}
	terms := strings.Fields(strings.ToLower(query))
	items = []Skill{}
	matched := 0
	for _, s := range all {
		if !matches(s, terms) {
			continue
		}
		if matched >= offset {
			if len(items) == limit {
				return items, matched, false, nil
			}
			items = append(items, s)
		}
		matched++
	}
	return items, 0, true, nil
}

func matches(s Skill, terms []string) bool {
	text := strings.ToLower(s.Name + "\n" + s.Description)
	for _, t := range terms {
		if !strings.Contains(text, t) {
			return false
		}
	}
	return true
}

// Load returns the skill with skillId id, reading its SKILL.md again.
// projectRoot is borrowed; nil means no repository source. It returns an
// error wrapping ErrNotFound when no skill has that id and ErrInvalid when
// the skill has an Error (the error then carries it); other errors are ctx's
// or I/O failures and never contain a host path.
func (c *Catalog) Load(ctx context.Context, projectRoot *os.Root, id string) (*Loaded, error) {
	var out *Loaded
	err := c.find(ctx, projectRoot, id, func(src *source, dir string, sd skillDir) error {
		s, body := readSkill(src, dir, sd)
		if s.Error != "" {
			return fmt.Errorf("skills: %w: %s", ErrInvalid, s.Error)
		}
		files, truncated, err := supportFiles(ctx, sd)
		if err != nil {
			return err
		}
		out = &Loaded{Skill: s, Body: body, Files: files, FilesTruncated: truncated}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
