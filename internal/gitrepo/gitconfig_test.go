package gitrepo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/devspace-dev/devspace/internal/testutil"
)

// TestParseConfigMatchesGit compares parseConfig with `git config --file
// --list -z` on tricky files: every variable Git sees, this parser sees
// with the same name and value, and a file Git rejects is rejected.
func TestParseConfigMatchesGit(t *testing.T) {
	tests := []struct {
		name, text string
	}{
		{"plain", "[include]\n\tpath = a\n"},
		{"case", "[InClUdE]\n\tPaTh = A\n"},
		{"subsection", "[includeIf \"gitdir:/x/\"]\n\tpath = /abs/b\n"},
		{"subsection escapes", "[includeIf \"gitdir:\\\"q\\\\\"]\n\tpath = c\n"},
		{"legacy subsection", "[includeIf.GitDir:x]\npath=d\n"},
		{"variable on header line", "[include] path = e\n"},
		{"quoted value", "[include]\n\tpath = \"  f ; # g \"\n"},
		{"partly quoted", "[include]\n\tpath = h\" i \"j\n"},
		{"escapes", "[include]\n\tpath = k\\\\l\\tm\\\"n\n"},
		{"continuation", "[include]\n\tpath = o\\\np\n"},
		{"comments", "# c\n; c\n[include] ; c\n\tpath = q # r\n\tpath = s;t\n"},
		{"inner spaces", "[include]\n\tpath = u \t v\n"},
		{"bare boolean", "[core]\n\tbare\n\tworktree = w\n"},
		{"crlf", "[include]\r\n\tpath = x\r\n"},
		{"bom", "\xef\xbb\xbf[include]\n\tpath = y\n"},
		{"empty value", "[include]\n\tpath =\n\tpath = \"\"\n"},
		{"many sections", "[a]\nb=1\n[include]\npath=z1\n[c \"d\"]\ne=2\n[include]\npath=z2\n"},
		{"dash in name", "[core]\n\tx-y = 1\n"},
		{"bad escape", "[include]\n\tpath = a\\qb\n"},
		{"unterminated quote", "[include]\n\tpath = \"a\n"},
		{"variable before section", "path = a\n"},
		{"bad header", "[include\npath = a\n"},
		{"bad name", "[include]\n\t_path = a\n"},
		{"dot in quoted section", "[a.b \"c\"]\nd = e\n"},
		{"indented", "  [include]\n  path = a\n\t[core]  worktree=b\n"},
		{"backslash at end", "[include]\n\tpath = a\\"},
		{"no final newline", "[include]\n\tpath = a"},
		{"spaces before equals", "[include]\n\tpath\t \t= c\n"},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_"))
			if err := os.WriteFile(p, []byte(tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("git", "config", "--file", p, "--no-includes", "--list", "-z")
			cmd.Env = testutil.GitEnv()
			out, gitErr := cmd.Output()
			var want []string
			for _, e := range strings.Split(string(out), "\x00") {
				if e != "" {
					want = append(want, strings.Replace(e, "\n", "=", 1))
				}
			}
			entries, err := parseConfig([]byte(tt.text))
			if (err != nil) != (gitErr != nil) {
				t.Fatalf("parseConfig error %v, git error %v (%q)", err, gitErr, out)
			}
			var got []string
			for _, e := range entries {
				k := e.name
				if e.subsection != "" {
					k = e.subsection + "." + k
				}
				if e.section != "" {
					k = e.section + "." + k
				}
				if e.hasValue {
					k += "=" + e.value
				}
				got = append(got, k)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("entries (-git +parseConfig):\n%s", diff)
			}
		})
	}
	// Stricter than Git: a NUL byte, where Git would cut the value.
	if _, err := parseConfig([]byte("[include]\n\tpath = /inside\x00/../outside\n")); err == nil {
		t.Error("parseConfig accepted a NUL byte")
	}
}
