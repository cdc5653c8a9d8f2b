package app_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/patch"
)

// crashPatch applies a two-file patch to dir through intents kept in
// intentDir and stops it as a SIGKILL would: right after the commit point
// when committed, else right after staging.
func crashPatch(t *testing.T, dir, intentDir string, committed bool) {
	t.Helper()
	for _, name := range []string{"a.txt", "b.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name+" old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	intents, err := patch.OpenIntents(intentDir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := patch.Parse("*** Begin Patch\n*** Update File: a.txt\n@@\n-a.txt old\n+a.txt new\n*** Update File: b.txt\n@@\n-b.txt old\n+b.txt new\n*** End Patch")
	if err != nil {
		t.Fatal(err)
	}
	pre := map[string]patch.Precondition{
		"a.txt": {Set: true, ContentHash: patch.HashContent([]byte("a.txt old\n"))},
		"b.txt": {Set: true, ContentHash: patch.HashContent([]byte("b.txt old\n"))},
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	staged := false
	hooks := &patch.Hooks{
		AfterStage: func() error { staged = true; return nil },
		Crash:      func(int) bool { return staged },
	}
	if !committed {
		hooks.AfterStage = nil
		hooks.Crash = func(p int) bool { return p == 2 } // the record, a.txt's temp, b.txt's temp
	}
	if _, err := patch.Apply(context.Background(), root, p, pre, patch.Options{Intents: intents, Hooks: hooks}); err == nil {
		t.Fatal("the patch was not stopped")
	}
}

func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.Contains(e.Name(), ".devspace-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestStartupRecoversInterruptedPatches: a patch killed after its commit
// point is finished before the server serves; the record of a directory
// that is not a Project is dropped without touching it; the log says so
// in counts and names Project paths only at debug level.
func TestStartupRecoversInterruptedPatches(t *testing.T) {
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	env.Stop()
	intentDir := filepath.Join(env.StateDir, "patch-intents")
	alpha, stranger := env.Roots["alpha"], t.TempDir()
	crashPatch(t, alpha, intentDir, true)
	crashPatch(t, stranger, intentDir, false)
	if got := leftovers(t, alpha); len(got) == 0 {
		t.Fatal("the crash left no staging files: the test proves nothing")
	}
	strangerLeft := leftovers(t, stranger)

	env.Restart()
	for _, name := range []string{"a.txt", "b.txt"} {
		b, err := os.ReadFile(filepath.Join(alpha, name))
		if err != nil || string(b) != name+" new\n" {
			t.Errorf("%s = %q, %v; want the new version", name, b, err)
		}
	}
	if got := leftovers(t, alpha); len(got) != 0 {
		t.Errorf("staging leftovers in the Project: %v", got)
	}
	if got := leftovers(t, stranger); len(got) != len(strangerLeft) {
		t.Errorf("a directory that is not a Project was touched: %v, was %v", got, strangerLeft)
	}
	if ents, _ := os.ReadDir(intentDir); len(ents) != 0 {
		t.Errorf("intent records left: %v", ents)
	}
	fi, err := os.Stat(intentDir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("intent directory: %v, %v", fi, err)
	}

	var summary map[string]any
	for _, line := range strings.Split(env.Logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		if rec["msg"] == "recovered interrupted patches" {
			summary = rec
		}
		if rec["level"] != "DEBUG" && (strings.Contains(line, alpha) || strings.Contains(line, stranger)) {
			t.Errorf("a Project path logged above debug: %s", line)
		}
	}
	if summary == nil {
		t.Fatal("no recovery summary logged")
	}
	for k, want := range map[string]float64{"records": 2, "rolled_forward": 1, "dropped": 1, "kept": 0} {
		if summary[k] != want {
			t.Errorf("summary %s = %v, want %v (%v)", k, summary[k], want, summary)
		}
	}
}
