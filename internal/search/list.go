package search

import (
	"context"
	"os"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/devspace-dev/devspace/internal/project"
)

// lister gathers entries within the entry limit and the output size.
type lister struct {
	res      *Result
	limit    int
	maxBytes int
	bytes    int
}

// add appends e and reports whether there is room for more.
func (l *lister) add(e Entry) bool {
	n := len(e.Path) + resultOverheadBytes
	if len(l.res.Entries) >= l.limit || l.bytes+n > l.maxBytes {
		l.res.Truncated = true
		return false
	}
	l.bytes += n
	l.res.Entries = append(l.res.Entries, e)
	return true
}

func (s *Searcher) newLister(res *Result, op Op) *lister {
	return &lister{
		res:      res,
		limit:    clampLimit(op.Limit, s.limits.DefaultListEntries, s.limits.MaxListEntries),
		maxBytes: s.limits.MaxOutputBytes,
	}
}

func walkEntryOf(e *walkEntry) Entry {
	return Entry{Path: e.rel, Type: entryType(e.typ), Size: e.size()}
}

// ls lists the directory base down to op.Depth levels (default 1). A file
// (or another non-directory) is listed as itself.
func (s *Searcher) ls(ctx context.Context, root *os.Root, op Op, base string, allowSensitive bool, res *Result) *OpError {
	l := s.newLister(res, op)
	fi, err := root.Lstat(base)
	if err != nil {
		return opError(err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		// An explicit path may go through a link inside the Project.
		if target, err := root.Stat(base); err != nil {
			return opError(err)
		} else if target.IsDir() {
			fi = target
		}
	}
	if !fi.IsDir() {
		if !allowSensitive && project.IsSensitive(base) {
			res.SensitiveHidden = 1
			return nil
		}
		e := Entry{Path: base, Type: entryType(fi.Mode())}
		if fi.Mode().IsRegular() {
			e.Size = fi.Size()
		}
		l.add(e)
		return nil
	}
	depth := op.Depth
	if depth == 0 {
		depth = 1
	}
	return s.walkFrom(ctx, root, base, op, allowSensitive, res, func(w *walker) {
		w.maxDepth = depth
		w.visit = func(e *walkEntry) bool { return l.add(walkEntryOf(e)) }
	})
}

// glob lists what matches op.Pattern below base. The walk starts at the
// pattern's literal leading directories and does not enter directories
// that cannot hold a match.
func (s *Searcher) glob(ctx context.Context, root *os.Root, op Op, base string, allowSensitive bool, res *Result) *OpError {
	pattern := op.Pattern
	switch {
	case pattern == "":
		return &OpError{CodeInvalidPattern, "pattern is required"}
	case strings.HasPrefix(pattern, "/"):
		return &OpError{CodeInvalidPattern, "pattern must be relative to path"}
	case !doublestar.ValidatePattern(pattern):
		return &OpError{CodeInvalidPattern, "pattern is not a valid glob pattern"}
	}
	if fi, err := root.Stat(base); err != nil {
		return opError(err)
	} else if !fi.IsDir() {
		return &OpError{CodeNotDirectory, "path is not a directory"}
	}
	if op.IgnoreCase {
		pattern = strings.ToLower(pattern)
	}
	fold := func(s string) string {
		if op.IgnoreCase {
			return strings.ToLower(s)
		}
		return s
	}
	start, rest := base, pattern
	if !op.IgnoreCase {
		// Case-insensitively the literal part could name several
		// directories: walk from base then.
		var dir string
		dir, rest = doublestar.SplitPattern(pattern)
		if dir != "." {
			start = path.Join(base, dir)
			clean, err := project.CleanRel(start)
			if err != nil {
				return opError(err)
			}
			if inGitDir(clean) {
				return gitDenied()
			}
			start = clean
			if fi, err := root.Stat(start); err != nil || !fi.IsDir() {
				return nil // nothing can match below a missing directory
			}
		}
	}
	var segs []string
	if !strings.Contains(rest, "{") {
		segs = strings.Split(rest, "/")
	}
	maxDepth := op.Depth
	if maxDepth > 0 && start != base {
		// op.Depth counts from base; the walk, from start.
		if maxDepth -= strings.Count(relTo(base, start), "/") + 1; maxDepth <= 0 {
			return nil
		}
	}
	l := s.newLister(res, op)
	return s.walkFrom(ctx, root, start, op, allowSensitive, res, func(w *walker) {
		w.maxDepth = maxDepth
		if segs != nil {
			w.descend = func(rel string) bool { return mayHold(segs, fold(relTo(start, rel))) }
		}
		w.visit = func(e *walkEntry) bool {
			if !doublestar.MatchUnvalidated(pattern, fold(relTo(base, e.rel))) {
				return true
			}
			return l.add(walkEntryOf(e))
		}
	})
}

// mayHold reports whether the directory dir (relative to where the pattern
// elements segs apply) may hold a match.
func mayHold(segs []string, dir string) bool {
	for i := 0; ; i++ {
		if i >= len(segs) {
			return false
		}
		if segs[i] == "**" {
			return true
		}
		elem, more, found := strings.Cut(dir, "/")
		if !doublestar.MatchUnvalidated(segs[i], elem) {
			return false
		}
		if !found {
			return i+1 < len(segs)
		}
		dir = more
	}
}

// walkFrom walks the directory start with the walker
// set up by configure, filling res's walk fields.
func (s *Searcher) walkFrom(ctx context.Context, root *os.Root, start string, op Op, allowSensitive bool, res *Result,
	configure func(*walker)) *OpError {
	sub, err := root.OpenRoot(start)
	if err != nil {
		return opError(err)
	}
	h := newDirHandle(sub)
	defer h.release()
	w := walker{
		ctx:            ctx,
		budget:         s.limits.MaxEntries,
		useIgnore:      !op.IncludeIgnored,
		allowSensitive: allowSensitive,
		onHidden:       func() { res.SensitiveHidden++ },
		onUnreadable:   func() { res.Unreadable++ },
	}
	configure(&w)
	var stack ignoreStack
	if w.useIgnore {
		stack = ignoreAbove(root, start)
	}
	w.walk(h, start, stack)
	res.WalkLimitHit = w.limitHit && !res.Truncated
	return nil
}
