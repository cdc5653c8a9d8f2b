package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/devspace-dev/devspace/internal/cursor"
	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/process"
)

// View is a command's state as the process tools report it.
type View struct {
	ProcessRef, OutputRef string
	Status                string // running, exited, killed, timed_out; "gone" for a replay whose output was retired
	ExitCode              *int
	Signal                string
	Revision              int64
	// Output is the text of the call (inline head and tail, a page, a
	// tail); Truncated and OmittedBytes say what it leaves out.
	Output       string
	Truncated    bool
	OmittedBytes int64
	OutputBytes  int64
	WallTime     time.Duration
	Replayed     bool
	Sandbox      string // set by Start
	// TreeAlive: descendants of the command still run after it ended.
	TreeAlive       bool
	KillReason      string
	InterruptKilled int
}

// view is a command's state without output text; a truncated spool is
// never silent.
func view(e *entry, st process.State) View {
	v := View{ProcessRef: e.ref, OutputRef: e.outputRef, Status: st.Status, ExitCode: st.ExitCode, Signal: st.Signal,
		Revision: st.Revision, OutputBytes: st.OutputBytes, TreeAlive: st.TreeAlive && st.Status != process.StatusRunning,
		InterruptKilled: st.InterruptKilled, KillReason: st.KillReason}
	end := st.EndedAt
	if end.IsZero() {
		end = time.Now()
	}
	v.WallTime = end.Sub(st.StartedAt)
	if st.Truncated {
		// Output dropped past the spool cap.
		v.Truncated, v.OmittedBytes = true, st.OutputBytes-st.RetainedBytes
	}
	return v
}

// inline renders head+tail of a command's output within inlineBytes.
func inline(p outputSource, st process.State) (string, bool, int64) {
	size := st.RetainedBytes
	omitted := st.OutputBytes - st.RetainedBytes
	if size <= inlineBytes {
		b, _ := p.ReadAt(0, int(size))
		return strings.ToValidUTF8(string(b), "\uFFFD"), omitted > 0, omitted
	}
	half := inlineBytes / 2
	head := p.Head(half)
	tail := p.Tail(half)
	omitted += size - int64(len(head)) - int64(len(tail))
	text := strings.ToValidUTF8(string(head), "\uFFFD") + fmt.Sprintf("\n[… %d bytes omitted …]\n", size-int64(len(head))-int64(len(tail))) +
		strings.ToValidUTF8(string(tail), "\uFFFD")
	return text, true, omitted
}

// Read modes.
const (
	ModeLive   = "live"
	ModePage   = "page"
	ModeTail   = "tail"
	ModeSearch = "search"
)

// ReadRequest is one read_process_output call, checked by the edge.
type ReadRequest struct {
	// Ref is a processRef, or an outputRef when ByOutput.
	Ref      string
	ByOutput bool
	Mode     string // ModeLive, ModePage, ModeTail or ModeSearch; "" is ModeLive for a processRef, else ModePage
	Query    string // ModeSearch: the literal to find
	// Cursor continues a previous read ("" starts); cursors are signed for
	// the caller's execution.
	Cursor string
	Limit  int           // bytes per page, 1-OutputPageMax; 0 is OutputPageDefault
	Wait   time.Duration // ModeLive: wait this long for new output (0 means LiveWaitMax)
}

// withDefaults fills what the caller left to the service.
func (r ReadRequest) withDefaults() ReadRequest {
	if r.Mode == "" {
		r.Mode = ModePage
		if !r.ByOutput {
			r.Mode = ModeLive
		}
	}
	if r.Limit == 0 {
		r.Limit = OutputPageDefault
	}
	return r
}

// Hit is one search match: its offset and line (at most 500 bytes).
type Hit struct {
	Offset int64
	Text   string
}

// Output is the result of Read.
type Output struct {
	View
	Offset     int64 // where Output starts
	Hits       []Hit
	NextCursor string
}

// Read reads a command's output: a live poll of a running command (new
// output since the cursor, waiting up to req.Wait for some), a page from
// the cursor, the tail, or the search hits from the cursor.
//
// Errors: ErrNotFound; cursor errors for a cursor that does not decode,
// ErrCursorMismatch for one of another command or mode; ErrOutputGone
// when the retained output was retired under the read.
func (s *Service) Read(ctx context.Context, h executions.Handle, req ReadRequest) (*Output, error) {
	req = req.withDefaults()
	e, err := s.find(ctx, ownerOf(h), req.Ref, req.ByOutput)
	if err != nil {
		return nil, err
	}
	var off int64
	if req.Cursor != "" {
		claims, err := s.opts.Cursors.Decode(req.Cursor, executions.CursorBinding(h), "output")
		if err != nil {
			return nil, err
		}
		if claims.Resource != e.outputRef || claims.QueryHash != req.Mode+"\x00"+req.Query {
			return nil, ErrCursorMismatch
		}
		off = claims.Offset
	}
	st := e.state()
	if req.Mode == ModeLive && st.Status == process.StatusRunning {
		wait := req.Wait
		if wait == 0 {
			wait = LiveWaitMax
		}
		// Wait for output past the cursor, or exit.
		deadline := time.Now().Add(wait)
		for st.Status == process.StatusRunning && st.RetainedBytes <= off && time.Now().Before(deadline) {
			st, _ = e.p.WaitChange(ctx, st.Revision, time.Until(deadline))
			if ctx.Err() != nil {
				break
			}
		}
	}
	out := &Output{View: view(e, st), Offset: off}
	switch req.Mode {
	case ModeTail:
		tail := e.out.Tail(req.Limit)
		if int64(len(tail)) < min(int64(req.Limit), st.RetainedBytes) {
			// Short: a retained output's file may have been retired
			// under the read (Tail does not say why it has no bytes).
			if _, err := e.out.ReadAt(0, 0); err != nil && !errors.Is(err, io.EOF) {
				return nil, readError(err)
			}
		}
		out.Output = strings.ToValidUTF8(string(tail), "\uFFFD")
		out.Offset = max(st.RetainedBytes-int64(req.Limit), 0)
		return out, nil
	case ModeSearch:
		hits, next, err := searchOutput(e.out, st.RetainedBytes, off, req.Query)
		if err != nil {
			return nil, readError(err)
		}
		out.Hits = hits
		if next < st.RetainedBytes && len(hits) > 0 {
			if out.NextCursor, err = s.cursor(h, req, e, next); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	// live and page: bytes from the cursor on.
	if off > st.RetainedBytes {
		off = st.RetainedBytes
	}
	n := min(int64(req.Limit), st.RetainedBytes-off)
	b, err := e.out.ReadAt(off, int(n))
	if err != nil && !errors.Is(err, io.EOF) { // EOF: nothing past the cursor yet
		return nil, readError(err)
	}
	// Never split a UTF-8 sequence at the page end.
	for cut := len(b); cut > 0 && cut > len(b)-4; cut-- {
		if utf8.Valid(b[:cut]) {
			b = b[:cut]
			break
		}
	}
	out.Output = strings.ToValidUTF8(string(b), "\uFFFD")
	next := off + int64(len(b))
	if next < st.RetainedBytes || (req.Mode == ModeLive && st.Status == process.StatusRunning) {
		if out.NextCursor, err = s.cursor(h, req, e, next); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readError classifies a failed read of a command's output. The retention
// may retire retained output (expiry, its execution closed, the spool cap)
// between the lookup and the read of its file: a missing file is output
// that no longer exists, not a server fault.
func readError(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %w", ErrOutputGone, err)
	}
	return fmt.Errorf("read output: %w", err)
}

func (s *Service) cursor(h executions.Handle, req ReadRequest, e *entry, off int64) (string, error) {
	return s.opts.Cursors.Encode(executions.CursorBinding(h), cursor.Claims{Kind: "output", Resource: e.outputRef,
		QueryHash: req.Mode + "\x00" + req.Query, Offset: off})
}

// searchOutput scans retained output from off for a literal, in bounded
// chunks, returning at most 50 hits with their line text.
func searchOutput(p outputSource, size, off int64, q string) ([]Hit, int64, error) {
	const chunk = 1 << 20
	var hits []Hit
	for pos := off; pos < size && len(hits) < 50; {
		n := min(int64(chunk), size-pos)
		b, err := p.ReadAt(pos, int(n))
		if err != nil {
			return nil, 0, err
		}
		text := string(b)
		from := 0
		for len(hits) < 50 {
			i := strings.Index(text[from:], q)
			if i < 0 {
				break
			}
			at := from + i
			start := strings.LastIndexByte(text[:at], '\n') + 1
			end := strings.IndexByte(text[at:], '\n')
			if end < 0 {
				end = len(text)
			} else {
				end += at
			}
			line := text[start:end]
			if len(line) > 500 {
				line = line[:500]
			}
			hits = append(hits, Hit{Offset: pos + int64(at), Text: strings.ToValidUTF8(line, "\uFFFD")})
			from = at + len(q)
		}
		if len(hits) >= 50 {
			return hits, hits[len(hits)-1].Offset + int64(len(q)), nil
		}
		if n < chunk {
			pos += n
			break
		}
		pos += n - int64(len(q)) + 1 // overlap so a match across chunks is found
	}
	return hits, size, nil
}
