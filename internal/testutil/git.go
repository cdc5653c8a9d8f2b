package testutil

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// GitEnv is the environment of the tests' own git commands: the process's
// minus every GIT_* variable, with system and global configuration off so
// the machine's settings (signing, default branch, filters) cannot leak in.
func GitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	return append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "LC_ALL=C")
}

// Git runs a setup or inspection command in dir, with GitEnv, and returns
// its stdout.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = GitEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// CanonicalTempDir returns a new temporary directory by its symlink-free
// path (what Git and the metadata checks compare against).
func CanonicalTempDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// NewRepo returns the canonical path of a new repository with a local
// identity, signing off and no commits.
func NewRepo(t testing.TB) string {
	t.Helper()
	dir := CanonicalTempDir(t)
	Git(t, dir, "init", "-q")
	Git(t, dir, "config", "user.name", "Test")
	Git(t, dir, "config", "user.email", "test@example.com")
	Git(t, dir, "config", "commit.gpgsign", "false")
	return dir
}

// CommitAll stages everything in the work tree dir and commits it.
func CommitAll(t testing.TB, dir string) {
	t.Helper()
	Git(t, dir, "add", "-A")
	Git(t, dir, "commit", "-q", "-m", "commit")
}

// NewRepoWithFiles returns NewRepo with one commit of n small files spread
// over 50 directories (d00/f0.txt holds "0\n", d01/f1.txt "1\n", …): each
// file is a loose object, none is packed.
func NewRepoWithFiles(t testing.TB, n int) string {
	t.Helper()
	dir := NewRepo(t)
	for i := range n {
		WriteFile(t, dir, fmt.Sprintf("d%02d/f%d.txt", i%50, i), fmt.Sprintf("%d\n", i))
	}
	CommitAll(t, dir)
	return dir
}
