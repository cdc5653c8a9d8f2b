package commands_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/commands"
	"github.com/devspace-dev/devspace/internal/process"
)

// TestOutputGrantShare (issue 31): one grant floods the spool; another
// grant's retained output is still readable afterwards, and its new
// output is kept whole. The flooding grant loses its own oldest output
// and has its own new output truncated, and each of its commands, the
// running one too, keeps its head and its tail.
func TestOutputGrantShare(t *testing.T) {
	const spool = 4 << 20 // the grant share is its default, a quarter of it
	r := newRigWith(t, rigOptions{maxSpool: spool})
	ctx := context.Background()
	read := func(exec, ref, mode string, limit int) (*commands.Output, error) {
		return r.svc.Read(ctx, handle(exec, r.proj), commands.ReadRequest{Ref: ref, ByOutput: true, Mode: mode, Limit: limit})
	}
	// What fill writes: a head line, n bytes of c, a tail line.
	fill := func(c byte, n int) string {
		return fmt.Sprintf("{ echo HEAD; head -c %d /dev/zero | tr '\\0' %c; echo TAIL; }", n, c)
	}
	checkHeadAndTail := func(what, exec, ref string) {
		t.Helper()
		if o, err := read(exec, ref, commands.ModePage, 5); err != nil || o.Output != "HEAD\n" {
			t.Errorf("%s: head %+v, %v; want HEAD", what, o, err)
		}
		if o, err := read(exec, ref, commands.ModeTail, 5); err != nil || o.Output != "TAIL\n" {
			t.Errorf("%s: tail %+v, %v; want TAIL", what, o, err)
		}
	}

	const oldSize = 200000
	old := r.start(t, "exe_b", "b-old", fill('b', oldSize))
	if old.Status != process.StatusExited {
		t.Fatalf("grant B's first command: %+v", old)
	}

	// Grant A writes three times the spool, one command after another.
	var flood []commands.View
	for i := range 12 {
		v := r.start(t, "exe_a", fmt.Sprint("a", i), fill('a', 1<<20))
		if v.Status != process.StatusExited {
			t.Fatalf("grant A's command %d: %+v", i, v)
		}
		flood = append(flood, v)
	}
	// Grant B's next command, right after the flood (before any sweep),
	// keeps its output whole.
	const newSize = 500000
	v := r.start(t, "exe_b", "b-new", fill('c', newSize))
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	r.svc.WaitRecorded(waitCtx)
	cancel()
	if err := r.outputs.Sweep(ctx); err != nil {
		t.Fatal(err)
	}

	// After the sweep, grant B's earlier output is still whole, and so is
	// its new output.
	o, err := read("exe_b", old.OutputRef, commands.ModePage, commands.OutputPageMax)
	if err != nil {
		t.Errorf("grant B's earlier output after A's flood: %v", err)
	} else if want := "HEAD\n" + strings.Repeat("b", oldSize) + "TAIL\n"; o.Output != want || o.Truncated {
		t.Errorf("grant B's earlier output after A's flood: %d bytes, truncated %v; want its %d bytes", len(o.Output), o.Truncated, len(want))
	}
	if o, err := read("exe_b", v.OutputRef, commands.ModeTail, 5); err != nil || o.Truncated || o.OmittedBytes != 0 || o.OutputBytes != newSize+10 {
		t.Errorf("grant B's new output beside A's flood: %+v, %v; want %d bytes, none omitted", o, err, newSize+10)
	}
	checkHeadAndTail("grant B's new command", "exe_b", v.OutputRef)

	// Grant A lost its own oldest output; what it keeps is within its
	// share, and each kept command has its head and tail.
	if _, err := read("exe_a", flood[0].OutputRef, commands.ModeTail, 1); !errors.Is(err, commands.ErrNotFound) {
		t.Errorf("grant A's oldest output after its flood: %v, want retired (ErrNotFound)", err)
	}
	var kept int64
	for i, f := range flood[1:] {
		o, err := read("exe_a", f.OutputRef, commands.ModeTail, 1)
		if errors.Is(err, commands.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !o.Truncated {
			t.Errorf("grant A's command %d past its share kept all %d bytes", i+1, o.OutputBytes)
		}
		kept += o.OutputBytes - o.OmittedBytes
		checkHeadAndTail(fmt.Sprint("grant A's command ", i+1), "exe_a", f.OutputRef)
	}
	if share := int64(spool / 4); kept > share {
		t.Errorf("grant A keeps %d bytes after the sweep, over its share of %d", kept, share)
	}

	// A running command of grant A over its share keeps its head and tail.
	live := r.start(t, "exe_a", "a-live", fill('a', 2<<20)+"; sleep 30")
	deadline := time.Now().Add(10 * time.Second)
	for {
		o, err := read("exe_a", live.OutputRef, commands.ModeTail, 5)
		if err == nil && o.OutputBytes == 2<<20+10 {
			if o.Status != process.StatusRunning {
				t.Fatalf("grant A's live command: %+v", o)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("grant A's live command never wrote its output: %+v, %v", o, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	checkHeadAndTail("grant A's running command", "exe_a", live.OutputRef)
	r.svc.CloseExecutions(ctx, []string{"exe_a"}, "test")
}

// TestOutputPressureSweep: a grant past its share of the spool asks for a
// sweep, which runs at once rather than at the next minute's: the grant's
// own earliest output is retired.
func TestOutputPressureSweep(t *testing.T) {
	r := newRigWith(t, rigOptions{maxSpool: 4 << 20}) // a share of 1 MiB
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.outputs.Run(ctx); close(done) }() // sweeps every minute, and on pressure
	defer func() { cancel(); <-done }()
	first := r.start(t, "exe_a", "a0", "head -c 1048576 /dev/zero")
	r.start(t, "exe_a", "a1", "head -c 1048576 /dev/zero")
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := r.svc.Read(ctx, handle("exe_a", r.proj), commands.ReadRequest{Ref: first.OutputRef, ByOutput: true, Mode: commands.ModeTail, Limit: 1})
		// Retired: its record gone, or (a read between the sweep's removal
		// of the file and of the record) its file.
		if errors.Is(err, commands.ErrNotFound) || errors.Is(err, commands.ErrOutputGone) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the grant's earliest output is still retained 10 s after it went past its share")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
