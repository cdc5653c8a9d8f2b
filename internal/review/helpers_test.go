package review

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/testutil"
)

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
	cmd.Env = testutil.GitEnv()
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
