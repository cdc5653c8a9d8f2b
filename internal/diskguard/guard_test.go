package diskguard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/devspace-dev/devspace/internal/process"
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

// fakeTools is the process manager's side as enforceTools sees it.
type fakeTools struct {
	stopped []string
}

func (f *fakeTools) Commands() []process.Running                    { return nil }
func (f *fakeTools) StopGroup(string, string, bool) int             { return 0 }
func (f *fakeTools) StartedGroups() map[string]process.GroupScratch { return nil }
func (f *fakeTools) StartedTools() []string                         { return nil }
func (f *fakeTools) StopTools(dir, reason string) int {
	f.stopped = append(f.stopped, dir+" "+reason)
	return 1
}

// TestToolsQuotaStopsGrowthOnly (issue 34): a tool home past its quota
// has its writers stopped when it grew since its last measure (or has
// none), never emptied; one over its quota that does not grow (a command
// deleting from it, or only running what is there) stops nothing.
func TestToolsQuotaStopsGrowthOnly(t *testing.T) {
	home := t.TempDir()
	f := &fakeTools{}
	g := New(Options{ToolsBase: filepath.Dir(home), ToolsMax: 1 << 20, Commands: f})
	write := func(name string, n int) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(home, name), make([]byte, n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	live := []process.Running{{ID: "c1", Group: "e1", Tools: home}}
	steps := []struct {
		name string
		do   func()
		stop bool
	}{
		{"within the quota", func() { write("a", 512<<10) }, false},
		{"past it, grown", func() { write("b", 1<<20) }, true},
		{"past it, not grown", func() {}, false},
		{"past it, shrinking", func() { _ = os.Remove(filepath.Join(home, "a")) }, false},
		{"past it, grown again", func() { write("c", 64<<10) }, true},
	}
	for _, s := range steps {
		f.stopped = nil
		s.do()
		g.enforceTools(live, nil)
		if got := len(f.stopped) > 0; got != s.stop {
			t.Errorf("%s: stopped %v, want %v", s.name, f.stopped, s.stop)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "b")); err != nil {
		t.Errorf("the tool home's files are gone: %v", err)
	}
	// A guard that never measured it (a restart) stops the first writer
	// of a tool home already past the quota.
	f.stopped = nil
	New(Options{ToolsBase: filepath.Dir(home), ToolsMax: 1 << 20, Commands: f}).enforceTools(live, nil)
	if len(f.stopped) != 1 || f.stopped[0] != home+" tools_quota" {
		t.Errorf("first measure past the quota: stopped %v", f.stopped)
	}
}
