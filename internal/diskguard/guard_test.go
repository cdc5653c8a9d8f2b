package diskguard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/devspace-dev/devspace/internal/testutil"
)

// TestUsageCountsEachInodeOnce: a file and its hard links are one file's
// space (linking a big file many times must not look past the quota, nor
// hide one); a tree past the quota, or with more entries than the bound,
// is over.
func TestUsageCountsEachInodeOnce(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 4<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if err := os.Link(big, filepath.Join(dir, fmt.Sprintf("link%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	size, over := usage(dir, 8<<20, 1000)
	if over || size < 4<<20 || size > 5<<20 {
		t.Fatalf("usage of one 4 MiB file linked 8 times: %d bytes, over %v", size, over)
	}
	if _, over := usage(dir, 2<<20, 1000); !over {
		t.Error("4 MiB against a 2 MiB quota is not over")
	}
	many := filepath.Join(dir, "many")
	if err := os.Mkdir(many, 0o700); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if err := os.WriteFile(filepath.Join(many, fmt.Sprint(i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, over := usage(many, 1<<30, 20); !over {
		t.Error("50 empty files against a bound of 20 entries are not over")
	}
	if size, over := usage(filepath.Join(dir, "absent"), 1<<20, 10); size != 0 || over {
		t.Errorf("an absent directory: %d, %v", size, over)
	}
}

// TestCheckRefusesBelowAQuarter: below a quarter of the reserve, work on
// that filesystem is refused (ErrDiskLow); above it, it goes on; a
// readOnly command's root does not count.
func TestCheckRefusesBelowAQuarter(t *testing.T) {
	small := testutil.SmallFS(t, 64<<20)
	state, scratch, project := filepath.Join(small, "state"), t.TempDir(), filepath.Join(small, "project")
	for _, d := range []string{state, project} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	other := t.TempDir() // the machine's disk, not the small one
	// No guard runs here to reclaim anything: refuse at once.
	ctx := context.Background()
	g := New(Options{Reserve: 128 << 20, StateDir: other, ScratchBase: scratch, ReclaimWait: -1})
	if err := g.CheckPatch(ctx, project); err != nil {
		t.Fatalf("64 MiB free against a 128 MiB reserve (a quarter is 32): %v", err)
	}
	testutil.FillFS(t, filepath.Join(small, "fill"))
	if err := g.CheckPatch(ctx, project); !errors.Is(err, ErrDiskLow) {
		t.Errorf("a patch of a Project on a full filesystem: %v, want ErrDiskLow", err)
	}
	if err := g.CheckCommand(ctx, project, true); !errors.Is(err, ErrDiskLow) {
		t.Errorf("a workspaceWrite command there: %v, want ErrDiskLow", err)
	}
	if err := g.CheckCommand(ctx, project, false); err != nil {
		t.Errorf("a readOnly command there (it writes only its scratch and output): %v", err)
	}
	gs := New(Options{Reserve: 128 << 20, StateDir: state, ScratchBase: scratch, ReclaimWait: -1})
	if err := gs.CheckCommand(ctx, other, false); !errors.Is(err, ErrDiskLow) {
		t.Errorf("any command while the state's filesystem is full (its output goes there): %v, want ErrDiskLow", err)
	}
	var low *FS
	for _, fs := range gs.Status() {
		if fs.Role == "state" {
			low = &fs
		}
	}
	if low == nil || !low.Low || !low.Refusing {
		t.Errorf("Status of the full state filesystem: %+v", low)
	}
}
