//go:build unix

package review

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/testutil"
)

// canonicalTemp is a symlink-free temporary directory.
func canonicalTemp(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestChangesRefusesEscapingMetadata plants, for each way repository
// metadata can point outside the root, a FIFO where Git would read: Git
// opening it would block until the timeout, so an ErrRepositoryUnsafe
// answer proves that nothing outside was opened.
func TestChangesRefusesEscapingMetadata(t *testing.T) {
	for _, e := range testutil.Escapes() {
		t.Run(e.Name, func(t *testing.T) {
			root := testutil.NewRepo(t)
			testutil.WriteFile(t, root, "a.txt", "a\n")
			commitAll(t, root)
			base := strings.TrimSpace(testutil.Git(t, root, "rev-parse", "HEAD"))
			testutil.WriteFile(t, root, "a.txt", "b\n")
			outside := canonicalTemp(t)
			e.Plant(t, root, outside)

			r := New(Options{Timeout: 5 * time.Second})
			start := time.Now()
			if _, err := r.Changes(t.Context(), root); !errors.Is(err, ErrRepositoryUnsafe) {
				t.Errorf("Changes = %v, want ErrRepositoryUnsafe", err)
			}
			if _, err := r.ChangesSince(t.Context(), root, base, root); !errors.Is(err, ErrRepositoryUnsafe) {
				t.Errorf("ChangesSince = %v, want ErrRepositoryUnsafe", err)
			}
			if _, err := OpenRepository(root); !errors.Is(err, ErrRepositoryUnsafe) {
				t.Errorf("OpenRepository = %v, want ErrRepositoryUnsafe", err)
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Errorf("took %v: something waited on a FIFO", d)
			}
		})
	}
}

// TestChangesRunsNoRepositoryCode plants hooks, fsmonitor, pagers, an
// external diff and an ssh command in the repository; the review runs none
// of them, while plain Git does (the control).
func TestChangesRunsNoRepositoryCode(t *testing.T) {
	root := testutil.NewRepo(t)
	testutil.WriteFile(t, root, "a.txt", "a\n")
	testutil.WriteFile(t, root, "staged.txt", "s\n")
	commitAll(t, root)
	testutil.WriteFile(t, root, "a.txt", "b\n")
	testutil.WriteFile(t, root, "staged.txt", "t\n")
	testutil.Git(t, root, "add", "staged.txt")
	testutil.WriteFile(t, root, "new.txt", "n\n")
	markers := filepath.Join(canonicalTemp(t), "markers")
	testutil.PlantRepositoryCode(t, root, markers)

	c := review(t, Options{}, root)
	if len(c.Files) != 3 {
		t.Errorf("files = %+v", c.Files)
	}
	if m := testutil.Markers(t, markers); len(m) != 0 {
		t.Fatalf("the review ran repository code: %v", m)
	}
	testutil.Git(t, root, "status", "--short")
	if m := testutil.Markers(t, markers); len(m) == 0 {
		t.Fatal("control: plain git status ran nothing")
	}
}

func TestChangesRunsNoFilters(t *testing.T) {
	root := testutil.NewRepo(t)
	testutil.WriteFile(t, root, "a.txt", "a\n")
	commitAll(t, root)
	testutil.WriteFile(t, root, "a.txt", "b\n")
	markers := filepath.Join(canonicalTemp(t), "markers")
	testutil.PlantFilters(t, root, markers)
	if _, err := New(Options{}).Changes(t.Context(), root); !errors.Is(err, ErrUnsafeFilters) {
		t.Errorf("Changes = %v, want ErrUnsafeFilters", err)
	}
	if m := testutil.Markers(t, markers); len(m) != 0 {
		t.Fatalf("the review ran a filter: %v", m)
	}
	testutil.Git(t, root, "diff")
	if m := testutil.Markers(t, markers); len(m) == 0 {
		t.Fatal("control: plain git diff ran no filter")
	}
}
