//go:build unix

package instructions

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/devspace-dev/devspace/internal/project"
)

func TestFIFOIgnoredWithoutBlocking(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, e env)
		rel   string // for ForPath; "" tests Root
		want  []File
	}{
		{
			name:  "FIFO named AGENTS.md",
			setup: func(t *testing.T, e env) { mkfifo(t, e, "AGENTS.md") },
		},
		{
			name: "FIFO override falls through",
			setup: func(t *testing.T, e env) {
				mkfifo(t, e, "AGENTS.override.md")
				e.write(t, "AGENTS.md", "agents\n")
			},
			want: []File{repoFile("AGENTS.md", "agents\n")},
		},
		{
			name: "symlink to a FIFO",
			setup: func(t *testing.T, e env) {
				mkfifo(t, e, "pipe")
				e.symlink(t, "pipe", "AGENTS.md")
			},
		},
		{
			name: "FIFO as a directory of the path",
			setup: func(t *testing.T, e env) {
				mkfifo(t, e, "pipe")
			},
			rel:  "pipe/x.go",
			want: []File{},
		},
		{
			name: "FIFO as the path",
			setup: func(t *testing.T, e env) {
				mkfifo(t, e, "pipe")
			},
			rel:  "pipe",
			want: []File{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			tt.setup(t, e)
			f, _ := e.finder(t, Options{})
			type result struct {
				files []File
				err   error
			}
			done := make(chan result, 1)
			go func() {
				if tt.rel == "" {
					s, err := f.Root(context.Background())
					if err != nil {
						done <- result{err: err}
						return
					}
					done <- result{files: s.Files}
					return
				}
				files, err := f.ForPath(context.Background(), tt.rel)
				done <- result{files, err}
			}()
			select {
			case r := <-done:
				if r.err != nil {
					t.Fatal(r.err)
				}
				if diff := cmp.Diff(tt.want, r.files); diff != "" {
					t.Errorf("files (-want +got):\n%s", diff)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("blocked on a FIFO")
			}
		})
	}
}

func mkfifo(t *testing.T, e env, rel string) {
	t.Helper()
	if err := syscall.Mkfifo(filepath.Join(e.proj, filepath.FromSlash(rel)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOpenFlagsDoNotBlockOnFIFO covers the race the Stat before each open
// cannot: a FIFO put in place between the Stat and the open.
func TestOpenFlagsDoNotBlockOnFIFO(t *testing.T) {
	e := newEnv(t)
	mkfifo(t, e, "AGENTS.md")
	_, root := e.finder(t, Options{})
	done := make(chan error, 1)
	go func() {
		h, _, err := project.Open(root, "AGENTS.md", false)
		if err == nil {
			h.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("open with project.Open: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("opening a FIFO with project.Open blocked")
	}
}
