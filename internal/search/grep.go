package search

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"
	"golang.org/x/sys/unix"

	"github.com/devspace-dev/devspace/internal/project"
)

// grep searches the file or the tree st.
func (s *Searcher) grep(ctx context.Context, root *os.Root, op Op, st start, allowSensitive bool, res *Result) *OpError {
	m, err := compileMatcher(op.Pattern, op.Regex, op.IgnoreCase)
	if err != nil {
		st.file.Close()
		return &OpError{CodeInvalidPattern, err.Error()}
	}
	base := st.real
	include, e := compileInclude(op.Include, base)
	if e != nil {
		st.file.Close()
		return e
	}
	limit := clampLimit(op.Limit, s.limits.DefaultMatches, s.limits.MaxMatches)
	p := &scanParams{
		m:            m,
		maxChars:     s.limits.MaxLineChars,
		context:      min(op.Context, s.limits.MaxContext),
		maxMatches:   limit + 1, // one more tells that there are more
		maxBytes:     s.limits.MaxOutputBytes,
		maxFileBytes: s.limits.MaxFileBytes,
	}
	coll := collector{res: res, limit: limit, maxBytes: s.limits.MaxOutputBytes}
	if st.info.IsDir() {
		var stack ignoreStack
		if !op.IncludeIgnored {
			stack = ignoreAbove(root, base)
		}
		s.grepTree(ctx, newDirHandle(st.file), base, stack, op, allowSensitive, p, include, &coll)
		return nil
	}
	// An explicit file: searched whatever the ignore rules and include say
	// (openStart refused it if sensitive).
	defer st.file.Close()
	if !st.info.Mode().IsRegular() {
		return &OpError{CodeUnreadable, "not a regular file"}
	}
	if st.info.Size() > s.limits.MaxFileBytes {
		return s.tooLarge()
	}
	sc := s.getScanner()
	defer s.putScanner(sc)
	ms, err := sc.scan(ctx, p, st.file, st.info.Size(), base)
	switch {
	case errors.Is(err, errTooLarge):
		return s.tooLarge()
	case errors.Is(err, errBinary):
	case err != nil && ctx.Err() != nil:
	case err != nil:
		return opError(err)
	default:
		res.FilesSearched = 1
		coll.add(ms)
	}
	return nil
}

// tooLarge is the error of a grep whose path is a file over
// Limits.MaxFileBytes.
func (s *Searcher) tooLarge() *OpError {
	return &OpError{CodeTooLarge, fmt.Sprintf("the file is over %d bytes and was not searched; search it with a command", s.limits.MaxFileBytes)}
}

// collector gathers matches in order within the match limit and the
// output size.
type collector struct {
	res      *Result
	limit    int
	maxBytes int
	bytes    int
	stop     bool
}

func (c *collector) add(ms []Match) {
	for i := range ms {
		n := matchBytes(&ms[i])
		if len(c.res.Matches) >= c.limit || c.bytes+n > c.maxBytes {
			c.res.Truncated, c.stop = true, true
			return
		}
		c.bytes += n
		c.res.Matches = append(c.res.Matches, ms[i])
	}
}

// compileInclude returns grep's file filter (true for every file when
// pattern is empty).
func compileInclude(pattern, base string) (func(e *walkEntry) bool, *OpError) {
	if pattern == "" {
		return func(*walkEntry) bool { return true }, nil
	}
	if !doublestar.ValidatePattern(pattern) {
		return nil, &OpError{CodeInvalidPattern, "include is not a valid glob pattern"}
	}
	if !strings.Contains(pattern, "/") {
		return func(e *walkEntry) bool { return doublestar.MatchUnvalidated(pattern, e.name) }, nil
	}
	return func(e *walkEntry) bool { return doublestar.MatchUnvalidated(pattern, relTo(base, e.rel)) }, nil
}

// relTo returns rel, which is base or below it, relative to base.
func relTo(base, rel string) string {
	switch {
	case base == ".":
		return rel
	case rel == base:
		return "."
	}
	return rel[len(base)+1:]
}

type fileJob struct {
	seq  int
	dir  *dirHandle // acquired for the job; the worker releases it
	name string
	rel  string
}

type fileOutcome struct {
	seq        int
	matches    []Match
	searched   bool
	unreadable bool
	tooLarge   bool
}

// walkEnd is what the walk of a grep saw. Events are recorded with the
// number of files dispatched before them, to count only those that precede
// the point where the results stopped, whatever the scheduling.
type walkEnd struct {
	files      int
	hidden     []int
	unreadable []int
	limitHit   bool
}

// grepTree searches the tree below h (Project-relative base) with a pool of
// workers. The walk hands files out in order; at most
// Workers*inFlightFilesPerWorker files are between the walk and the
// in-order collection, which bounds memory. Results are taken in walk
// order, so the first limit matches are the same on every run. h is
// released.
func (s *Searcher) grepTree(ctx context.Context, h *dirHandle, base string, stack ignoreStack, op Op, allowSensitive bool,
	p *scanParams, include func(*walkEntry) bool, coll *collector) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := s.workers()
	window := workers * inFlightFilesPerWorker
	jobs := make(chan fileJob, window)
	outcomes := make(chan fileOutcome, window) // never blocks: at most window jobs exist
	tokens := make(chan struct{}, window)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			sc := s.getScanner()
			defer s.putScanner(sc)
			for j := range jobs {
				outcomes <- sc.scanJob(ctx, p, j)
			}
		})
	}
	ended := make(chan walkEnd, 1)
	go func() {
		defer close(jobs)
		var we walkEnd
		w := walker{
			ctx:            ctx,
			budget:         s.limits.MaxEntries,
			useIgnore:      !op.IncludeIgnored,
			allowSensitive: allowSensitive,
			maxDepth:       op.Depth,
			onHidden:       func() { we.hidden = append(we.hidden, we.files) },
			onUnreadable:   func() { we.unreadable = append(we.unreadable, we.files) },
			visit: func(e *walkEntry) bool {
				if !e.typ.IsRegular() || !include(e) {
					return true
				}
				select {
				case tokens <- struct{}{}:
				case <-ctx.Done():
					return false
				}
				e.dir.acquire()
				jobs <- fileJob{seq: we.files, dir: e.dir, name: e.name, rel: e.rel}
				we.files++
				return true
			},
		}
		w.walk(h, base, stack)
		h.release()
		we.limitHit = w.limitHit
		ended <- we
	}()

	res := coll.res
	done := make([]*fileOutcome, window) // by seq % window
	next, total := 0, -1
	var we walkEnd
	for !coll.stop && (total < 0 || next < total) {
		select {
		case o := <-outcomes:
			done[o.seq%window] = &o
			for !coll.stop {
				d := done[next%window]
				if d == nil || d.seq != next {
					break
				}
				done[next%window] = nil
				next++
				<-tokens
				if d.searched {
					res.FilesSearched++
				}
				if d.unreadable {
					res.Unreadable++
				}
				if d.tooLarge {
					res.TooLarge++
				}
				coll.add(d.matches)
			}
		case we = <-ended:
			total = we.files
		}
	}
	cancel()
	if total < 0 {
		we = <-ended
	}
	wg.Wait()
	before := func(events []int) int {
		if !coll.stop {
			return len(events)
		}
		n := 0
		for _, at := range events {
			if at < next {
				n++
			}
		}
		return n
	}
	res.SensitiveHidden += before(we.hidden)
	res.Unreadable += before(we.unreadable)
	res.WalkLimitHit = we.limitHit && !coll.stop
}

// scanJob searches one file of a walk and releases its directory.
func (sc *scanner) scanJob(ctx context.Context, p *scanParams, j fileJob) fileOutcome {
	o := fileOutcome{seq: j.seq}
	defer j.dir.release()
	if ctx.Err() != nil {
		return o
	}
	// Not through a link: a file swapped for a link after the walk saw it
	// is not read. A bare descriptor: an *os.File would cost two more
	// system calls per file (its mode check and poller registration).
	fd, err := project.OpenAtFD(j.dir.fd, j.name, false)
	if err != nil {
		o.unreadable = true
		return o
	}
	f := fdReader(fd)
	defer f.close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		o.unreadable = err != nil
		return o
	}
	// Judged by fstat, before any read: a sparse file costs no more to
	// skip than a small one.
	if st.Size > p.maxFileBytes {
		o.tooLarge = true
		return o
	}
	ms, err := sc.scan(ctx, p, f, st.Size, j.rel)
	switch {
	case errors.Is(err, errTooLarge):
		o.tooLarge = true
	case errors.Is(err, errBinary):
	case err != nil:
		o.unreadable = ctx.Err() == nil
	default:
		o.searched, o.matches = true, ms
	}
	return o
}

// fdReader reads a bare descriptor.
type fdReader int

func (f fdReader) Read(b []byte) (int, error) {
	for {
		n, err := unix.Read(int(f), b)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (f fdReader) close() { unix.Close(int(f)) }

func (s *Searcher) getScanner() *scanner {
	if sc, ok := s.scanners.Get().(*scanner); ok {
		return sc
	}
	return &scanner{buf: make([]byte, bufferBytes)}
}

func (s *Searcher) putScanner(sc *scanner) {
	if cap(sc.scratch) > 2*bufferBytes {
		sc.scratch = nil
	}
	s.scanners.Put(sc)
}
