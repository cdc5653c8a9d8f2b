package search

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/testutil"
)

func TestIgnoreRules(t *testing.T) {
	for _, tc := range []struct {
		rules   string
		path    string
		isDir   bool
		ignored bool
	}{
		{"*.log", "a.log", false, true},
		{"*.log", "x/y/a.log", false, true},
		{"*.log", "a.log.txt", false, false},
		{"*.log\n!keep.log", "x/keep.log", false, false},
		{"!keep.log\n*.log", "keep.log", false, true}, // the last matching line wins
		{"build/", "build", true, true},
		{"build/", "build", false, false},
		{"build/", "x/build", true, true},
		{"/build", "build", false, true},
		{"/build", "x/build", false, false},
		{"a/b", "a/b", false, true},
		{"a/b", "x/a/b", false, false},
		{"**/foo", "foo", false, true},
		{"**/foo", "a/b/foo", false, true},
		{"**/foo/bar", "a/foo/bar", false, true},
		{"a/**/b", "a/b", false, true},
		{"a/**/b", "a/x/y/b", false, true},
		{"a/**", "a", true, false},
		{"a/**", "a/x", false, true},
		{"a/**", "a/x/y", false, true},
		{"a/*/c", "a/b/c", false, true},
		{"a/*/c", "a/b/d/c", false, false},
		{"f?o", "foo", false, true},
		{"f?o", "fo", false, false},
		{"f[a-c]o", "fbo", false, true},
		{"f[!a-c]o", "fbo", false, false},
		{"f[^a-c]o", "fzo", false, true},
		{"[]]x", "]x", false, true},
		{`\#x`, "#x", false, true},
		{"#x", "#x", false, false},
		{`\!x`, "!x", false, true},
		{`x\*`, "x*", false, true},
		{`x\*`, "xy", false, false},
		{"x  ", "x", false, true},
		{`x\ `, "x ", false, true},
		{"*", "anything", false, true},
		{"**", "a", false, true},
		{"[a", "[a", false, true}, // an unclosed class is literal
		{"é*", "éa", false, true},
		{"?", "é", false, true},
		{"a*b*c", "axxbyyc", false, true},
		{"a*b*c", "axxbyy", false, false},
		{"*.LOG", "a.log", false, false},
		{"/", "a", false, false},
		{"!", "a", false, false},
	} {
		stack := ignoreStack{}.push(parseIgnore([]byte(tc.rules), "."))
		if got := stack.ignored(tc.path, tc.isDir); got != tc.ignored {
			t.Errorf("rules %q, path %q (dir %v): ignored = %v, want %v", tc.rules, tc.path, tc.isDir, got, tc.ignored)
		}
	}
}

func TestIgnoreNestedPrecedence(t *testing.T) {
	stack := ignoreStack{}.
		push(parseIgnore([]byte("*.txt\n"), ".")).
		push(parseIgnore([]byte("!keep.txt\n/local.txt\n"), "sub"))
	for path, want := range map[string]bool{
		"a.txt": true, "sub/a.txt": true, "sub/keep.txt": false, "keep.txt": true, "sub/local.txt": true,
		"sub/x/local.txt": true, "sub/x/keep.txt": false,
	} {
		if got := stack.ignored(path, false); got != want {
			t.Errorf("%s: ignored = %v, want %v", path, got, want)
		}
	}
}

// TestIgnoreAgainstGit compares the walk with `git ls-files --others
// --exclude-standard` (what Git does not ignore) on one tree.
func TestIgnoreAgainstGit(t *testing.T) {
	files := map[string]string{
		".gitignore": "*.o\n!important.o\n/out/\ntmp*/\ndocs/**/draft*\nlib/*.gen.go\n**/cache\n*.swp\n!/keep.swp\n",
		"a.o":        "", "important.o": "", "x/b.o": "", "x/important.o": "", "out/a": "", "x/out/a": "",
		"tmp1/a": "", "tmpfile": "", "docs/draft1.md": "", "docs/a/b/draft2.md": "", "docs/final.md": "",
		"lib/x.gen.go": "", "lib/sub/y.gen.go": "", "a/cache/z": "", "cache": "", "f.swp": "", "keep.swp": "",
		"sub/.gitignore": "!*.o\n*.md\n/only/\n", "sub/c.o": "", "sub/r.md": "", "sub/only/z": "", "sub/x/only/z": "",
		".hidden/a": "", "sub/deeper/.gitignore": "*\n!.gitignore\n", "sub/deeper/gone": "",
	}
	dir := makeTree(t, files)
	git := func(args ...string) string {
		return testutil.Git(t, dir, append([]string{"-c", "core.excludesFile=/dev/null"}, args...)...)
	}
	git("init", "-q")
	os.WriteFile(filepath.Join(dir, ".git", "info", "exclude"), []byte("x/important.o\n"), 0o644)
	want := strings.Fields(git("ls-files", "--others", "--exclude-standard"))
	slices.Sort(want)

	got := run(t, dir, Limits{}, Op{Kind: "glob", Pattern: "**"}, true)
	var files2 []string
	for _, e := range got.Entries {
		if e.Type == TypeFile {
			files2 = append(files2, e.Path)
		}
	}
	slices.Sort(files2)
	if !slices.Equal(want, files2) {
		t.Errorf("git sees %q\nwe see %q", want, files2)
	}
}

func TestIgnorePathologicalRules(t *testing.T) {
	deep := strings.Repeat("a/", 60) + "b"
	rules := strings.Repeat("**/a/", 20) + "c\n" + "*" + strings.Repeat("[", 1000) + "x\n" + strings.Repeat("*a", 500) + "b\n"
	stack := ignoreStack{}.push(parseIgnore([]byte(rules), "."))
	for range 100 {
		stack.ignored(deep, false)
		stack.ignored(strings.Repeat("a", 250), false)
	}
	if !(ignoreStack{}.push(parseIgnore([]byte(`x\[[a`), ".")).ignored("x[[a", false)) {
		t.Error("escaped and open classes are literals")
	}
}
