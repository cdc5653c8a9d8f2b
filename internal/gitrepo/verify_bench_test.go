package gitrepo

import (
	"testing"

	"github.com/devspace-dev/devspace/internal/testutil"
)

// BenchmarkOpenRepository measures the metadata check on a repository with
// 5,000 loose objects (no pack), the walk's worst common case.
func BenchmarkOpenRepository(b *testing.B) {
	dir := testutil.NewRepoWithFiles(b, 5000)
	b.ResetTimer()
	for b.Loop() {
		if _, err := OpenRepository(dir); err != nil {
			b.Fatal(err)
		}
	}
}
