package commands

import (
	"context"
	"strings"
	"time"

	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/idempotency"
	"github.com/devspace-dev/devspace/internal/process"
)

// Input is what write_stdin sends to a running command, checked by the
// edge: exactly one of Chars, CloseStdin or Interrupt. Its JSON encoding
// (field names and order) is the request hash of its operation record,
// which must not change between releases.
type Input struct {
	OperationID      string `json:"operationId"`
	ProcessRef       string `json:"processRef"`
	Chars            string `json:"chars,omitempty"`
	CloseStdin       bool   `json:"closeStdin,omitempty"`
	Interrupt        bool   `json:"interrupt,omitempty"`
	ExpectedRevision *int64 `json:"expectedRevision,omitempty"` // act only if the command's revision is still this
}

// WriteStdin sends input to one of the caller's running commands, once
// per operationId (View.Replayed on an identical retry), gives the
// program a moment to react and reports its state with the last 4000
// bytes of output.
//
// Errors, wrapping idempotency.ErrNotStarted: ErrNotFound;
// process.ErrNotRunning when the command ended;
// process.ErrRevisionConflict, process.ErrStdinClosed,
// process.ErrStdinFull from the process; and operation errors.
func (s *Service) WriteStdin(ctx context.Context, h executions.Handle, in Input) (View, error) {
	if err := in.Validate(); err != nil {
		return View{}, idempotency.NotStarted(err)
	}
	o := ownerOf(h)
	e, err := s.find(ctx, o, in.ProcessRef, false)
	if err != nil {
		return View{}, idempotency.NotStarted(err)
	}
	if e.p == nil {
		return View{}, idempotency.NotStarted(process.ErrNotRunning)
	}
	hash, err := idempotency.HashRequest(in)
	if err != nil {
		return View{}, idempotency.NotStarted(err)
	}
	key := idempotency.Key{GrantID: o.GrantID, ExecutionID: e.execID, Tool: "write_stdin", OperationID: in.OperationID}
	before := e.p.State().Revision
	_, replayed, err := s.opts.Operations.Do(ctx, key, hash, func(ctx context.Context) ([]byte, error) {
		var err error
		switch {
		case in.Interrupt:
			if in.ExpectedRevision != nil && *in.ExpectedRevision != e.p.State().Revision {
				err = process.ErrRevisionConflict
			} else {
				err = e.p.Interrupt()
			}
		case in.CloseStdin:
			if in.ExpectedRevision != nil && *in.ExpectedRevision != e.p.State().Revision {
				err = process.ErrRevisionConflict
			} else {
				e.p.CloseStdin()
			}
		default:
			err = e.p.WriteStdin([]byte(in.Chars), in.ExpectedRevision)
		}
		if err != nil {
			return nil, idempotency.NotStarted(err)
		}
		return []byte("{}"), nil
	})
	if err != nil {
		return View{}, err
	}
	// Give the program a moment to react, then report.
	st, _ := e.p.WaitChange(ctx, before, 500*time.Millisecond)
	if st.Status == process.StatusRunning {
		st, _ = e.p.Wait(ctx, 300*time.Millisecond)
	}
	v := view(e, st)
	v.Output = strings.ToValidUTF8(string(e.p.Tail(4000)), "\uFFFD")
	v.Replayed = replayed
	return v, nil
}
