package executions

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/devspace-dev/devspace/internal/instructions"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/store"
)

// deltaTree is a Project of 200 files in 10 directories (as the
// apply_patch benchmark's), with AGENTS.md in the root, in half of the
// directories and in one nested directory; it returns the Project path
// and the 200 paths.
func deltaTree(t testing.TB) (string, []string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "alpha")
	write := func(rel, content string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("AGENTS.md", "root\n")
	for d := range 10 {
		if d%2 == 0 {
			write(fmt.Sprintf("pkg%02d/AGENTS.md", d), fmt.Sprintf("rules of pkg%02d\n", d))
		}
	}
	write("pkg03/sub/AGENTS.md", "nested\n")
	var paths []string
	for f := range 200 {
		p := fmt.Sprintf("pkg%02d/file%03d.go", f%10, f)
		if f%50 == 3 {
			p = fmt.Sprintf("pkg03/sub/file%03d.go", f)
		}
		write(p, "package x\n")
		paths = append(paths, p)
	}
	return dir, paths
}

// deltaEnv opens a store and an execution of the Project at dir.
func deltaEnv(t testing.TB, dir string) (*Service, *store.Execution, *os.Root) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(filepath.Dir(dir), "state"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc := newServiceSpecs(t, st, []project.Spec{{Label: "alpha", Path: dir}})
	ref := project.Ref(key, dir)
	c := Caller{GrantID: "g1", ClientID: "c1", Scopes: []string{"project:read"}, ProjectIDs: []string{ref},
		GrantEpoch: 1, GlobalEpoch: 1, SessionRef: "s1", ActorRef: "a1"}
	opened, _, err := svc.Open(ctx, c, ref, "op1", false)
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return svc, &store.Execution{ID: opened.ExecutionID()}, root
}

func TestInstructionsDelta200Paths(t *testing.T) {
	ctx := context.Background()
	dir, paths := deltaTree(t)
	svc, e, root := deltaEnv(t, dir)
	paths = append(paths, "../bad", "pkg03/sub", "new/f.go")
	// What InstructionsDelta delivered before it used a Batch: the union
	// of ForPath over the paths, in order of first appearance.
	finder, err := instructions.New(root, instructions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var want []DeltaFile
	seen := map[string]bool{}
	for _, p := range paths {
		files, err := finder.Batch().ForPath(ctx, p)
		if err != nil {
			continue
		}
		for _, f := range files {
			if !seen[f.Path] {
				seen[f.Path] = true
				want = append(want, DeltaFile{Path: f.Path, Trust: string(f.Trust), Content: f.Content})
			}
		}
	}
	if len(want) != 6 { // pkg00, 02, 04, 06, 08, pkg03/sub
		t.Fatalf("the tree yields %d files, want 6", len(want))
	}
	got, err := svc.InstructionsDelta(ctx, e, root, paths)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("InstructionsDelta (-want +got):\n%s", diff)
	}
	if got, err := svc.InstructionsDelta(ctx, e, root, paths); err != nil || len(got) != 0 {
		t.Errorf("second InstructionsDelta = %v, %v; want nothing new", got, err)
	}
}

// BenchmarkInstructionsDelta200Paths is the instructions delta of a
// 200-file apply_patch (every file already delivered after the first
// round, so the time is the lookup).
func BenchmarkInstructionsDelta200Paths(b *testing.B) {
	dir, paths := deltaTree(b)
	svc, e, root := deltaEnv(b, dir)
	for b.Loop() {
		if _, err := svc.InstructionsDelta(context.Background(), e, root, paths); err != nil {
			b.Fatal(err)
		}
	}
}
