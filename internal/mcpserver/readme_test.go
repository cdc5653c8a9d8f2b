package mcpserver_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readmeToolRow is one row of the README's tool table: | `name` | scopes | what |.
var readmeToolRow = regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| ([^|]+) \\|")

// TestReadmeToolTable keeps the README's tool table in step with the tool
// snapshots (testdata/tools, which TestToolSnapshots keeps in step with
// tools/list): every tool is listed, nothing else is, and each row's
// scopes (before any parenthesised note) are the scopes the tool requires.
func TestReadmeToolTable(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	start := strings.Index(section, "\n## Tools\n")
	if start < 0 {
		t.Fatal("README.md has no Tools section")
	}
	section = section[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	listed := map[string][]string{}
	for _, m := range readmeToolRow.FindAllStringSubmatch(section, -1) {
		if _, dup := listed[m[1]]; dup {
			t.Errorf("README lists %s twice", m[1])
		}
		scopes, _, _ := strings.Cut(strings.TrimSpace(m[2]), " (")
		listed[m[1]] = strings.Split(scopes, ", ")
	}

	snapshots, err := filepath.Glob(filepath.Join("testdata", "tools", "*.json"))
	if err != nil || len(snapshots) == 0 {
		t.Fatalf("no tool snapshots: %v", err)
	}
	want := map[string][]string{}
	for _, path := range snapshots {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var tool struct {
			Name string
			Meta struct {
				SecuritySchemes []struct{ Scopes []string } `json:"securitySchemes"`
			} `json:"_meta"`
		}
		if err := json.Unmarshal(data, &tool); err != nil || len(tool.Meta.SecuritySchemes) != 1 {
			t.Fatalf("%s: %v (want one security scheme)", path, err)
		}
		want[tool.Name] = tool.Meta.SecuritySchemes[0].Scopes
	}
	if diff := cmp.Diff(want, listed); diff != "" {
		t.Errorf("README.md's tool table differs from testdata/tools (-snapshots +README):\n%s", diff)
	}
}
