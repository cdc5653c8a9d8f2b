package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/apptest"
)

// TestClearOrphanTools: `devspace projects list` tells of the tool homes
// no configured Project has, and `projects clear-tools --orphans` removes
// them (read-only directories included, as Go's module cache leaves them)
// through the running server and without one; what is not a tool home's
// name is left alone, and nothing is removed while a configured Project is
// not accessible, since its tool home would look orphaned.
func TestClearOrphanTools(t *testing.T) {
	env := apptest.Start(t, apptest.Options{Projects: []string{"a", "b"}})
	vars := envOf(env)
	tools := vars["DEVSPACE_TOOLS_DIR"]
	orphan := func(name string) string {
		t.Helper()
		dir := filepath.Join(tools, name)
		if err := os.MkdirAll(filepath.Join(dir, "go", "pkg", "mod"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "go", "pkg", "mod", "big"), make([]byte, 2<<20), 0o444); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, "go", "pkg", "mod"), 0o555); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	first, second := orphan("t-0123456789abcdef01234567"), orphan("t-89abcdef0123456789abcdef")
	foreign := []string{orphan("t-0123"), orphan("notes"), orphan("t-0123456789ABCDEF01234567")}

	code, out, stderr := run(t, vars, "projects", "list")
	if code != 0 || !strings.Contains(out, "2 tool home(s) of no configured Project hold 4.0 MiB; `devspace projects clear-tools --orphans` removes them.") {
		t.Fatalf("projects list: %d %q %s", code, out, stderr)
	}

	// b's root gone: its tool home cannot be told from an orphan's.
	if err := os.Rename(env.Roots["b"], env.Roots["b"]+".away"); err != nil {
		t.Fatal(err)
	}
	// The CLI asks the server, whose Projects count; its own environment
	// need not name them (and would be refused with b's path gone).
	noProjects := map[string]string{}
	for k, v := range vars {
		if k != "DEVSPACE_PROJECTS" {
			noProjects[k] = v
		}
	}
	code, out, stderr = run(t, noProjects, "projects", "clear-tools", "--orphans")
	if code != 1 || !strings.Contains(stderr, "cannot be told from an orphan's") {
		t.Fatalf("clear-tools --orphans with b not accessible: %d %q %s", code, out, stderr)
	}
	for _, d := range []string{first, second} {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("an orphan was removed while b was not accessible: %v", err)
		}
	}
	if err := os.Rename(env.Roots["b"]+".away", env.Roots["b"]); err != nil {
		t.Fatal(err)
	}

	code, out, stderr = run(t, vars, "projects", "clear-tools", "--orphans")
	if code != 0 || !strings.Contains(out, "Removed 2 tool home(s) of no configured Project: 4.0 MiB freed.") {
		t.Fatalf("clear-tools --orphans: %d %q %s", code, out, stderr)
	}
	for _, d := range []string{first, second} {
		if _, err := os.Lstat(d); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", filepath.Base(d), err)
		}
	}
	for _, d := range foreign {
		if _, err := os.Stat(filepath.Join(d, "go", "pkg", "mod", "big")); err != nil {
			t.Errorf("%s, not a tool home's name, was touched: %v", filepath.Base(d), err)
		}
	}
	if code, out, _ = run(t, vars, "projects", "list"); code != 0 || strings.Contains(out, "no configured Project") {
		t.Errorf("projects list after the clear: %d %q", code, out)
	}

	// Without a server nothing is removed: this shell's DEVSPACE_PROJECTS
	// may leave out some of the server's Projects, whose tool homes would
	// look orphaned.
	third := orphan("t-fedcba9876543210fedcba98")
	env.StopServing()
	code, out, stderr = run(t, vars, "projects", "clear-tools", "--orphans")
	if code != 1 || !strings.Contains(stderr, "no DevSpace server answers") {
		t.Fatalf("offline clear-tools --orphans: %d %q %s", code, out, stderr)
	}
	if _, err := os.Stat(third); err != nil {
		t.Errorf("offline: %s removed: %v", filepath.Base(third), err)
	}
	if code, out, _ = run(t, vars, "projects", "list"); code != 0 || strings.Contains(out, "no configured Project") {
		t.Errorf("offline projects list tells of orphans by this shell's Projects: %d %q", code, out)
	}
}

// TestAttackOfflineOrphansWithoutProjects: without a server, `projects
// clear-tools --orphans` would judge by the CLI's own environment, which
// often does not name the Projects (DEVSPACE_PROJECTS set only for the
// server). Every tool home, the configured Projects' too, would then look
// orphaned and be removed; it removes nothing without the server (and the
// App, asked with no Project configured, removes nothing either).
func TestAttackOfflineOrphansWithoutProjects(t *testing.T) {
	env := apptest.Start(t, apptest.Options{Projects: []string{"a"}})
	vars := envOf(env)
	// Stands for a's tool home: to an environment that names no Project,
	// it cannot be told from an orphan's.
	home := filepath.Join(vars["DEVSPACE_TOOLS_DIR"], "t-0123456789abcdef01234567")
	if err := os.MkdirAll(filepath.Join(home, "go", "bin"), 0o700); err != nil {
		t.Fatal(err)
	}
	env.StopServing()
	noProjects := map[string]string{}
	for k, v := range vars {
		if k != "DEVSPACE_PROJECTS" {
			noProjects[k] = v
		}
	}
	code, out, stderr := run(t, noProjects, "projects", "clear-tools", "--orphans")
	if code != 1 || !strings.Contains(stderr, "no DevSpace server answers") {
		t.Errorf("offline clear-tools --orphans naming no Project: %d %q %s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(home, "go", "bin")); err != nil {
		t.Errorf("a tool home was removed by an environment naming no Project: %v", err)
	}
}

// TestOrphansOfAServerWithoutProjects: a server that serves no Project
// (DEVSPACE_PROJECTS empty) removes no tool home either: every one would
// look orphaned, and a Project list emptied by mistake must not cost every
// Project its toolchains.
func TestOrphansOfAServerWithoutProjects(t *testing.T) {
	env := apptest.Start(t, apptest.Options{Projects: []string{}})
	vars := envOf(env)
	home := filepath.Join(vars["DEVSPACE_TOOLS_DIR"], "t-0123456789abcdef01234567")
	if err := os.MkdirAll(filepath.Join(home, "go", "bin"), 0o700); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := run(t, vars, "projects", "clear-tools", "--orphans")
	if code != 1 || !strings.Contains(stderr, "cannot be told from an orphan's") {
		t.Errorf("clear-tools --orphans on a server without Projects: %d %q %s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(home, "go", "bin")); err != nil {
		t.Errorf("a tool home was removed by a server without Projects: %v", err)
	}
}
