package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReadmeListsMakeTargets: the README's "`make help` lists the
// targets: …" names exactly the targets `make help` prints (those with a
// "## " description), help itself aside.
func TestReadmeListsMakeTargets(t *testing.T) {
	root := filepath.Join("..", "..")
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, m := range regexp.MustCompile(`(?m)^([a-z0-9-]+):.*## `).FindAllStringSubmatch(string(makefile), -1) {
		if m[1] != "help" {
			want = append(want, m[1])
		}
	}
	sentence := regexp.MustCompile("`make help` lists the targets: ([^.]+)\\.").FindStringSubmatch(string(readme))
	if sentence == nil {
		t.Fatal("README.md does not list make help's targets")
	}
	var got []string
	for _, m := range regexp.MustCompile("`([a-z0-9-]+)`").FindAllStringSubmatch(sentence[1], -1) {
		got = append(got, m[1])
	}
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("README.md's list of make targets (-Makefile +README):\n%s\n%s", diff, strings.TrimSpace(sentence[0]))
	}
}
