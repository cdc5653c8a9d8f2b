package undo

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/patch"
)

// result200 is the patch.Result of a 200-file update like the one of the
// performance budget (bench/: 10 directories, 100 lines a file): every
// file's before and after content, unique to round.
func result200(round int) *patch.Result {
	res := &patch.Result{}
	for f := range 200 {
		name := fmt.Sprintf("pkg%02d/file%03d.go", f%10, f)
		var b strings.Builder
		fmt.Fprintf(&b, "// round %d\n", round)
		for i := range 100 {
			fmt.Fprintf(&b, "\tfile%03d_line%03d := compute(%d, %q) // lorem ipsum dolor\n", f, i+1, i, name)
		}
		before := []byte(b.String())
		after := []byte(strings.Replace(b.String(), "compute", "computeFast", 5))
		res.Files = append(res.Files, patch.FileResult{Path: name, Action: patch.ActionUpdate,
			Before: patch.HashContent(before), BeforeMode: 0o644, BeforeContent: before,
			After: patch.HashContent(after), AfterMode: 0o644, AfterContent: after})
	}
	return res
}

func identity(p string) (string, error) { return p, nil }

// BenchmarkRecord200Files records the snapshot of a 200-file patch (400
// new contents, ~1.4 MB) per round.
func BenchmarkRecord200Files(b *testing.B) {
	s, err := NewStore(Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	n := 0
	for b.Loop() {
		b.StopTimer()
		n++
		res := result200(n)
		b.StartTimer()
		if err := s.Record(context.Background(), "exe_bench", fmt.Sprint("op", n), res, identity); err != nil {
			b.Fatal(err)
		}
	}
}
