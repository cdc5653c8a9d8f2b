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
