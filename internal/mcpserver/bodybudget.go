package mcpserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/devspace-dev/devspace/internal/shares"
)

// Bounds of the in-flight body budget. A request body costs several times
// its size in memory until the SDK and the tool are done with it (eight
// 25 MB bodies took the server from 178 to 1,171 MiB), so the budget
// counts memory: each body byte at decodeCost. Bytes
// are counted as they arrive, one bodyChunk ahead of the data, never by
// the declared length: a client that declares 8 MiB and trickles one byte
// holds one chunk. One grant may hold at most its share, so a single grant
// cannot starve the others. A request that cannot get room within
// bodyWait gets 503 with Retry-After.
const (
	// DefaultBodyBudget is the budget, in bytes of memory, when
	// Options.BodyBudget is zero: 32 MiB of bodies at once.
	DefaultBodyBudget = 256 << 20
	// MaxBody bounds one /mcp body, below Options.MaxBodyBytes when that
	// is larger: no tool takes more than its patch (4 MiB) or stdin (1
	// MiB) bound, JSON-escaped (a 4 MiB patch of short lines with its
	// preconditions for 1,000 files encodes to over 8 MiB).
	MaxBody = 12 << 20
	// decodeCost is what one body byte costs in memory until the call is
	// done: the SDK's passes over the body, the decoded arguments, our
	// strict decode (measured: about 8x).
	decodeCost = 8
	// bodyChunk is how much is reserved ahead of each read.
	bodyChunk = 64 << 10
)

// bodyWait is how long a request waits for body budget (well under the
// host's ~12 s first-byte limit). Tests shorten it.
var bodyWait = 5 * time.Second

// readBody reads the request body into memory, budgeting the bytes as they
// arrive (each wait for room bounded by bodyWait), and replaces r.Body with
// the copy. It returns the reservation to close once the request is done,
// or answers the request itself and returns nil: 408 for a body that
// stalled (httpserver's body deadline), 413 beyond the limit, 503 with
// Retry-After when the budget had no room.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, grant string) *shares.Reservation {
	res := s.bodies.Open(grant)
	var buf bytes.Buffer
	if r.ContentLength > 0 && r.ContentLength <= s.bodyMax {
		// The declared length sizes the buffer only as far as it arrives.
		buf.Grow(int(min(r.ContentLength, bodyChunk)))
	}
	err := func() error {
		if r.ContentLength > s.bodyMax {
			return &http.MaxBytesError{Limit: s.bodyMax}
		}
		for {
			ctx, cancel := context.WithTimeout(r.Context(), bodyWait)
			err := res.Take(ctx, bodyChunk*decodeCost)
			cancel()
			if err != nil {
				return err
			}
			n, rerr := buf.ReadFrom(&limitedOnce{r: r.Body, n: bodyChunk})
			res.Give((bodyChunk - n) * decodeCost)
			switch {
			case int64(buf.Len()) > s.bodyMax:
				return &http.MaxBytesError{Limit: s.bodyMax}
			case errors.Is(rerr, errChunkFull):
			case rerr != nil:
				return rerr
			default:
				return nil // EOF
			}
		}
	}()
	if err == nil {
		r.Body = readCloser{bytes.NewReader(buf.Bytes()), r.Body}
		return res
	}
	res.Close()
	var tooLarge *http.MaxBytesError
	switch {
	case errors.Is(err, shares.ErrExhausted):
		if r.Context().Err() == nil {
			s.log.Warn("request bodies over budget; answering 503")
			w.Header().Set("Retry-After", "2")
			http.Error(w, "server busy with other large requests; retry shortly", http.StatusServiceUnavailable)
		}
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		http.Error(w, "request body timed out", http.StatusRequestTimeout)
	case errors.As(err, &tooLarge):
		w.Header().Set("Connection", "close")
		http.Error(w, fmt.Sprintf("request body larger than %d bytes", s.bodyMax), http.StatusRequestEntityTooLarge)
	default:
		w.Header().Set("Connection", "close")
		http.Error(w, "request body could not be read", http.StatusBadRequest)
	}
	return nil
}

// limitedOnce reads at most n bytes from r in total, reporting EOF from r
// as is; unlike io.LimitReader its end is not mistaken for the body's.
type limitedOnce struct {
	r io.Reader
	n int64
}

func (l *limitedOnce) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errChunkFull
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

var errChunkFull = errors.New("chunk full")

type readCloser struct {
	*bytes.Reader
	body io.Closer
}

func (rc readCloser) Close() error { return rc.body.Close() }
