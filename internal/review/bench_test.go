package review

import (
	"fmt"
	"testing"

	"github.com/devspace-dev/devspace/internal/testutil"
)

// BenchmarkChangesChecks measures a whole review of a clean repository
// with 5,000 files in 50 directories and 20 untracked directories, most of
// the cost being the checks before the diffs.
func BenchmarkChangesChecks(b *testing.B) {
	dir := testutil.NewRepoWithFiles(b, 5000)
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
