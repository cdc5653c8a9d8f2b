package review

import (
	"fmt"
	"testing"

	"github.com/devspace-dev/devspace/internal/testutil"
)

// BenchmarkOpenRepository measures the metadata check on a repository with
// 5,000 loose objects (no pack), the walk's worst common case.
func BenchmarkOpenRepository(b *testing.B) {
	dir := testutil.NewRepo(b)
	for i := range 5000 {
		testutil.WriteFile(b, dir, fmt.Sprintf("d%02d/f%d.txt", i%50, i), fmt.Sprintf("%d\n", i))
	}
	testutil.Git(b, dir, "add", "-A")
	testutil.Git(b, dir, "commit", "-q", "-m", "many")
	b.ResetTimer()
	for b.Loop() {
		if _, err := OpenRepository(dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChangesChecks measures a whole review of a clean repository
// with 5,000 files in 50 directories and 20 untracked directories, most of
// the cost being the checks before the diffs.
func BenchmarkChangesChecks(b *testing.B) {
	dir := testutil.NewRepo(b)
	for i := range 5000 {
		testutil.WriteFile(b, dir, fmt.Sprintf("d%02d/f%d.txt", i%50, i), fmt.Sprintf("%d\n", i))
	}
	testutil.Git(b, dir, "add", "-A")
	testutil.Git(b, dir, "commit", "-q", "-m", "many")
	for i := range 20 {
		testutil.WriteFile(b, dir, fmt.Sprintf("u%d/sub/x.txt", i), "x\n")
	}
	r := New(Options{})
	b.ResetTimer()
	for b.Loop() {
		if _, err := r.Changes(b.Context(), dir); err != nil {
			b.Fatal(err)
		}
	}
}
