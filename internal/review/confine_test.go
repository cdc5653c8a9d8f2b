//go:build linux

package review

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/gitrepo"
	"github.com/devspace-dev/devspace/internal/process"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// TestMain lets this test binary play process.ConfineCommand for
// newConfiner's Manager.
func TestMain(m *testing.M) {
	if code, ok := process.InternalMain(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// newConfiner returns a process.Manager's Confine (testutil.Confiner).
func newConfiner(t testing.TB) gitrepo.Confiner { return testutil.Confiner(t) }

// TestConfinedChangesWork: a review behaves the same confined.
func TestConfinedChangesWork(t *testing.T) {
	confine := newConfiner(t)
	dir := testutil.NewRepo(t)
	testutil.WriteFile(t, dir, "a.txt", "one\n")
	testutil.CommitAll(t, dir)
	testutil.WriteFile(t, dir, "a.txt", "two\n")
	testutil.WriteFile(t, dir, "new.txt", "new\n")
	ch, err := New(Options{Confine: confine}).Changes(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Files) != 2 || !strings.Contains(ch.Diff, "+two") {
		t.Errorf("confined review: files %+v diff %q", ch.Files, ch.Diff)
	}
}

// BenchmarkChangesConfined is one review of a small repository with one
// change, with DevSpace's Git unconfined and confined (each invocation
// then starts through the confining helper first).
func BenchmarkChangesConfined(b *testing.B) {
	dir := testutil.NewRepo(b)
	for i := range 50 {
		testutil.WriteFile(b, dir, fmt.Sprintf("f%02d.txt", i), "one\n")
	}
	testutil.CommitAll(b, dir)
	testutil.WriteFile(b, dir, "f00.txt", "two\n")
	for _, c := range []struct {
		name    string
		confine gitrepo.Confiner
	}{{"unconfined", nil}, {"confined", newConfiner(b)}} {
		b.Run(c.name, func(b *testing.B) {
			r := New(Options{Confine: c.confine})
			for b.Loop() {
				if _, err := r.Changes(b.Context(), dir); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
