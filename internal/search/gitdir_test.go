package search

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/devspace-dev/devspace/internal/testutil"
)

// TestGitDirNotNamedDotGitSkipped: a Git directory under another name —
// meta, the target of nested/.git's "gitdir: ../meta" (git init
// --separate-git-dir), and the bare repository mirror.git — is skipped by
// every walk like a .git entry, its name included, and refused as an
// operation's path. A plain directory that merely holds a file named HEAD
// (and objects, without refs) is ordinary content. Before, ls and glob
// listed meta's hooks and config and grep searched them.
func TestGitDirNotNamedDotGitSkipped(t *testing.T) {
	const needle = "ghp_SECRETTOKEN"
	dir := makeTree(t, map[string]string{
		"nested/README":       needle + "\n",
		"plain/HEAD":          needle + "\n",
		"plain/objects/o.txt": needle + "\n",
		"lmeta":               "->meta", // a link is listed, never followed
	})
	testutil.Git(t, dir, "init", "-q", "--separate-git-dir", "meta", "nested")
	testutil.Git(t, dir, "init", "-q", "--bare", "mirror.git")
	for _, cfg := range []string{"meta/config", "mirror.git/config"} {
		f, err := os.OpenFile(filepath.Join(dir, cfg), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("[remote \"origin\"]\n\turl = https://user:" + needle + "@github.com/o/r\n")
		f.Close()
	}
	want := []string{"lmeta", "nested", "nested/README", "plain", "plain/HEAD", "plain/objects", "plain/objects/o.txt"}
	tests := []struct {
		name string
		op   Op
		want []string
	}{
		{"ls deep", Op{Kind: KindLs, Depth: 10}, want},
		{"ls top", Op{Kind: KindLs}, []string{"lmeta", "nested", "plain"}},
		{"ls includeIgnored", Op{Kind: KindLs, Depth: 10, IncludeIgnored: true}, want},
		{"glob all", Op{Kind: KindGlob, Pattern: "**"}, want},
		{"glob names", Op{Kind: KindGlob, Pattern: "*.git"}, nil},
		{"glob below", Op{Kind: KindGlob, Pattern: "**/config"}, nil},
		{"glob ignore case", Op{Kind: KindGlob, Pattern: "M*/**", IgnoreCase: true}, nil},
		{"grep", Op{Kind: KindGrep, Pattern: needle}, []string{"nested/README:1", "plain/HEAD:1", "plain/objects/o.txt:1"}},
		{"grep includeIgnored", Op{Kind: KindGrep, Pattern: needle, IncludeIgnored: true},
			[]string{"nested/README:1", "plain/HEAD:1", "plain/objects/o.txt:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := run(t, dir, Limits{}, tt.op, true)
			if got.Error != nil {
				t.Fatalf("%+v", got.Error)
			}
			if diff := cmp.Diff(tt.want, paths(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	for _, p := range []string{"meta", "meta/hooks", "meta/config", "mirror.git", "mirror.git/config", "lmeta", "lmeta/hooks", "nested/.git"} {
		for _, kind := range []string{KindLs, KindGlob, KindGrep} {
			r := run(t, dir, Limits{}, Op{Kind: kind, Path: p, Pattern: "*"}, true)
			if errCode(r) != CodePathDenied || !strings.Contains(r.Error.Message, "repository metadata") {
				t.Errorf("%s %s: %+v, want path_denied (repository metadata)", kind, p, r.Error)
			}
		}
	}
	for _, pattern := range []string{"meta/*", "mirror.git/**"} {
		if r := run(t, dir, Limits{}, Op{Kind: KindGlob, Pattern: pattern}, true); errCode(r) != CodePathDenied {
			t.Errorf("glob %s: %+v, want path_denied", pattern, r)
		}
	}
	// A Git directory is refused whatever the type of its markers (a
	// symlink counts, as for Git's access()): plain becomes one once it
	// has a refs link, even a dangling one.
	if err := os.Symlink("nowhere", filepath.Join(dir, "plain", "refs")); err != nil {
		t.Fatal(err)
	}
	got := run(t, dir, Limits{}, Op{Kind: KindLs, Depth: 10}, true)
	if slices.ContainsFunc(paths(got), func(p string) bool { return strings.HasPrefix(p, "plain") }) {
		t.Errorf("plain with HEAD, objects and a refs link is listed: %v", paths(got))
	}
}
