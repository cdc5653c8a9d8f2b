package review

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// testEnv is the environment of the tests' own git commands: the process's
// minus every GIT_* variable, with system and global configuration off so the
// machine's settings (signing, default branch, filters) cannot leak in.
func testEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	return append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "LC_ALL=C")
}

// git runs a setup command in dir and returns its stdout.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = testEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// newRepo returns the canonical path of a new repository with a local
// identity and no commits.
func newRepo(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	git(t, dir, "init", "-q")
	git(t, dir, "config", "user.name", "Test")
	git(t, dir, "config", "user.email", "test@example.com")
	git(t, dir, "config", "commit.gpgsign", "false")
	return dir
}

// write creates or replaces a file, with parents, relative to dir.
func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func commitAll(t *testing.T, dir string) {
	t.Helper()
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "commit")
}

func review(t *testing.T, opts Options, dir string) *Changes {
	t.Helper()
	c, err := New(opts).Changes(context.Background(), dir)
	if err != nil {
		t.Fatalf("Changes: %v", err)
	}
	return c
}

func checkFiles(t *testing.T, got, want []FileChange) {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return
	}
	g, _ := json.MarshalIndent(got, "", "  ")
	w, _ := json.MarshalIndent(want, "", "  ")
	t.Errorf("files mismatch\n got: %s\nwant: %s", g, w)
}

// gitNewFileDiff is Git's own rendering of an untracked file as a new-file
// diff, without the index line this package does not compute.
func gitNewFileDiff(t *testing.T, dir, rel string) string {
	t.Helper()
	cmd := exec.Command("git", "-c", "core.quotePath=false", "diff", "--no-index", "--no-color", "--", os.DevNull, rel)
	cmd.Dir = dir
	cmd.Env = testEnv()
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
		t.Fatalf("git diff --no-index %s: %v", rel, err)
	}
	var keep []string
	for _, line := range strings.SplitAfter(string(out), "\n") {
		if !strings.HasPrefix(line, "index ") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "")
}
