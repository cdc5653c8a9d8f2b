//go:build unix

package skills

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

func TestFIFOsIgnoredWithoutBlocking(t *testing.T) {
	e := newEnv(t)
	dir := e.repoSkill(t, "ok", skillMD("ok", "OK.", ""))
	mkfifo(t, filepath.Join(dir, "pipe.md"))
	write(t, filepath.Join(dir, "real.md"), "x")
	fifoSkill := filepath.Join(e.project, ".agents", "skills", "fifo")
	write(t, filepath.Join(fifoSkill, "README.md"), "x")
	mkfifo(t, filepath.Join(fifoSkill, "SKILL.md"))
	mkfifo(t, filepath.Join(e.project, ".agents", "skills", "pipe"))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c := e.catalog(t)
		got, err := c.List(ctx, e.root)
		if err != nil || len(got) != 1 || got[0].Name != "ok" {
			t.Errorf("List = %+v, %v; want only ok", got, err)
			return
		}
		l, err := c.Load(ctx, e.root, got[0].ID)
		if err != nil {
			t.Errorf("Load: %v", err)
			return
		}
		if diff := cmp.Diff([]string{"real.md"}, l.Files); diff != "" {
			t.Errorf("Files (-want +got):\n%s", diff)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("blocked on a FIFO")
	}
}
