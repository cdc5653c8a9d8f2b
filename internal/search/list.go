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

// ls lists the directory st down to op.Depth levels (default 1). A file
// (or another non-directory) is listed as itself.
func (s *Searcher) ls(ctx context.Context, root *os.Root, op Op, st start, allowSensitive bool, res *Result) *OpError {
	l := s.newLister(res, op)
	if !st.info.IsDir() {
		st.file.Close()
		e := Entry{Path: st.real, Type: entryType(st.info.Mode())}
		if st.info.Mode().IsRegular() {
			e.Size = st.info.Size()
		}
		l.add(e)
		return nil
	}
	depth := op.Depth
	if depth == 0 {
		depth = 1
	}
	return s.walkFrom(ctx, root, st.file, st.real, op, allowSensitive, res, func(w *walker) {
		w.maxDepth = depth
		w.visit = func(e *walkEntry) bool { return l.add(walkEntryOf(e)) }
	})
}

// glob lists what matches op.Pattern below st. The walk starts at the
// pattern's literal leading directories and does not enter directories
// that cannot hold a match.
func (s *Searcher) glob(ctx context.Context, root *os.Root, op Op, st start, allowSensitive bool, res *Result) *OpError {
	pattern := op.Pattern
	var e *OpError
	switch {
	case pattern == "":
		e = &OpError{CodeInvalidPattern, "pattern is required"}
	case strings.HasPrefix(pattern, "/"):
		e = &OpError{CodeInvalidPattern, "pattern must be relative to path"}
	case !doublestar.ValidatePattern(pattern):
		e = &OpError{CodeInvalidPattern, "pattern is not a valid glob pattern"}
	case !st.info.IsDir():
		e = &OpError{CodeNotDirectory, "path is not a directory"}
	}
	if e != nil {
		st.file.Close()
		return e
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
	base := st.real
	from, rest := st, pattern
	if !op.IgnoreCase {
		// Case-insensitively the literal part could name several
		// directories: walk from base then.
		var dir string
		dir, rest = doublestar.SplitPattern(pattern)
		if dir != "." {
			clean, err := project.CleanRel(path.Join(base, dir))
			if err != nil {
				st.file.Close()
				return opError(err)
			}
			sub, e := openStart(root, clean, allowSensitive)
			switch {
			case e == errRepository:
				// Refused like the path itself would be, rather than
				// answered as a directory that holds nothing.
				st.file.Close()
				return e
			case e != nil || !sub.info.IsDir():
				if e == nil {
					sub.file.Close()
				}
				st.file.Close()
				return nil // nothing can match below a missing directory
			case sub.real != clean:
				// A link in the literal part: walk from base, where the
				// pattern's own elements decide.
				sub.file.Close()
				rest = pattern
			default:
				st.file.Close()
				from = sub
			}
		}
	}
	var segs []string
	if !strings.Contains(rest, "{") {
		segs = strings.Split(rest, "/")
	}
	maxDepth := op.Depth
	if maxDepth > 0 && from.real != base {
		// op.Depth counts from base; the walk, from start.
		if maxDepth -= strings.Count(relTo(base, from.real), "/") + 1; maxDepth <= 0 {
			from.file.Close()
			return nil
		}
	}
	l := s.newLister(res, op)
	return s.walkFrom(ctx, root, from.file, from.real, op, allowSensitive, res, func(w *walker) {
		w.maxDepth = maxDepth
		if segs != nil {
			w.descend = func(rel string) bool { return mayHold(segs, fold(relTo(from.real, rel))) }
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

// walkFrom walks the open directory dir, whose real Project-relative path
// is start, with the walker set up by configure, filling res's walk
// fields. It closes dir.
func (s *Searcher) walkFrom(ctx context.Context, root *os.Root, dir *os.File, start string, op Op, allowSensitive bool, res *Result,
	configure func(*walker)) *OpError {
	h := newDirHandle(dir)
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
