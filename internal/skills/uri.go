package skills

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/devspace-dev/devspace/internal/project"
)

// URIScheme starts every support-file URI: skill://<skillId>/<path>.
const URIScheme = "skill://"

// URI returns the URI of the support file rel (slash-separated, relative to
// the skill directory) of skill id.
func URI(id, rel string) string { return URIScheme + id + "/" + rel }

// ParseURI splits "skill://<skillId>/<rel>" into its skillId and rel. ok is
// false when uri does not start with URIScheme, has no "/" after the
// skillId, or has an empty skillId or rel. rel is returned as written: it
// still has to pass project.CleanRel.
func ParseURI(uri string) (id, rel string, ok bool) {
	rest, ok := strings.CutPrefix(uri, URIScheme)
	if !ok {
		return "", "", false
	}
	id, rel, ok = strings.Cut(rest, "/")
	if !ok || id == "" || rel == "" {
		return "", "", false
	}
	return id, rel, true
}

// OpenSupport resolves the support-file URI uri ("skill://<skillId>/<rel>")
// for reading. The skill must be in loaded, the set of skillIds the calling
// execution has loaded; rel must pass project.CleanRel and is resolved
// inside the skill's own directory, so neither ".." nor a symlink can reach
// the skill's siblings, its source directory or the rest of the Project.
//
// It returns an *os.Root of the skill's source (the Project, or the
// trusted directory), which the caller owns and must close, and the real
// path of the file inside it, which exists (it may be a directory; the
// caller reads it through the root with its usual checks, so the
// sensitive-file and repository-metadata rules apply to that real path).
// Errors wrap ErrNotLoaded (skill not in loaded), project.ErrPathDenied
// (malformed URI, rel refused by CleanRel, a symlink leading out of the
// skill directory, also a dangling one, or repository metadata) or
// ErrNotFound (no such skill now, or no such file); other errors are
// ctx's or scrubbed I/O failures. No error contains a host path.
// projectRoot is borrowed; nil means no repository source.
func (c *Catalog) OpenSupport(ctx context.Context, projectRoot *os.Root, uri string, loaded map[string]bool) (*os.Root, string, error) {
	id, rel, ok := ParseURI(uri)
	if !ok {
		return nil, "", fmt.Errorf("skills: malformed skill URI: %w", project.ErrPathDenied)
	}
	clean, err := project.CleanRel(rel)
	if err != nil {
		return nil, "", fmt.Errorf("skills: %w", err)
	}
	if !loaded[id] {
		return nil, "", fmt.Errorf("skills: %w: load the skill first", ErrNotLoaded)
	}
	var out *os.Root
	var real string
	err = c.find(ctx, projectRoot, id, func(src *source, dir string, sd skillDir) error {
		r, _, err := project.RealPath(sd.root, sd.path(clean))
		if err != nil {
			return err
		}
		if !sd.inside(r) && r != sd.real {
			return &project.PathError{Reason: project.ReasonSymlink}
		}
		// A root of its own, since the visit's belongs to the caller or
		// the catalog.
		if out, err = sd.root.OpenRoot("."); err != nil {
			return fmt.Errorf("skills: %w", ErrNotFound)
		}
		real = r
		return nil
	})
	if err != nil {
		if out != nil {
			out.Close()
		}
		err = project.Classify(err)
		switch {
		case errors.Is(err, project.ErrPathDenied), errors.Is(err, ErrNotFound), errors.Is(err, ErrNotLoaded):
			return nil, "", fmt.Errorf("skills: %w", err)
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			return nil, "", fmt.Errorf("skills: %w: no such support file", ErrNotFound)
		}
		return nil, "", fmt.Errorf("skills: support file: %w", project.Scrub(err))
	}
	return out, real, nil
}
