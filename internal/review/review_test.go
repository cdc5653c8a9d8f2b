//go:build unix

package review

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/gitrepo"
	"github.com/devspace-dev/devspace/internal/testutil"
)

func TestChangesStagedUnstagedUntracked(t *testing.T) {
	dir := testutil.NewRepo(t)
	testutil.WriteFile(t, dir, "both.txt", "one\ntwo\nthree\n")
	testutil.WriteFile(t, dir, "unstaged.txt", "a\nb\n")
	testutil.WriteFile(t, dir, "gone.txt", "bye\n")
	testutil.WriteFile(t, dir, "staged-gone.txt", "bye\nbye\n")
	testutil.WriteFile(t, dir, "mode.sh", "echo\n")
	testutil.WriteFile(t, dir, ".gitignore", "*.log\n")
	testutil.CommitAll(t, dir)

	testutil.WriteFile(t, dir, "both.txt", "one\ntwo\nthree\nfour\n")
	testutil.Git(t, dir, "add", "both.txt")
	testutil.WriteFile(t, dir, "both.txt", "zero\ntwo\nthree\nfour\n")
	testutil.WriteFile(t, dir, "unstaged.txt", "a\nB\nc\n")
	testutil.WriteFile(t, dir, "new.txt", "fresh\n")
	testutil.Git(t, dir, "add", "new.txt")
	if err := os.Remove(filepath.Join(dir, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, dir, "rm", "-q", "staged-gone.txt")
	if err := os.Chmod(filepath.Join(dir, "mode.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, dir, "dir/untracked.txt", "x\ny")
	testutil.WriteFile(t, dir, "ignored.log", "noise\n")

	c := review(t, Options{}, dir)
	checkFiles(t, c.Files, []FileChange{
		{Path: "both.txt", Status: "modified", Staged: true, Unstaged: true, Added: 2, Removed: 1},
		{Path: "dir/untracked.txt", Status: "untracked", Added: 2},
		{Path: "gone.txt", Status: "deleted", Unstaged: true, Removed: 1},
		{Path: "mode.sh", Status: "modified", Unstaged: true},
		{Path: "new.txt", Status: "added", Staged: true, Added: 1},
		{Path: "staged-gone.txt", Status: "deleted", Staged: true, Removed: 2},
		{Path: "unstaged.txt", Status: "modified", Unstaged: true, Added: 2, Removed: 1},
	})
	if c.Truncated {
		t.Error("Truncated set")
	}
	if len(c.Head) != 12 || !strings.HasPrefix(testutil.Git(t, dir, "rev-parse", "HEAD"), c.Head) {
		t.Errorf("Head = %q", c.Head)
	}
	if !strings.HasPrefix(c.Revision, "sha256:") || len(c.Revision) != len("sha256:")+64 {
		t.Errorf("Revision = %q", c.Revision)
	}

	// Staged, then unstaged, then untracked.
	staged := strings.Index(c.Diff, "+four\n")
	unstaged := strings.Index(c.Diff, "+zero\n")
	untracked := strings.Index(c.Diff, "diff --git a/dir/untracked.txt b/dir/untracked.txt\n")
	if staged < 0 || unstaged < staged || untracked < unstaged {
		t.Errorf("diff order staged=%d unstaged=%d untracked=%d:\n%s", staged, unstaged, untracked, c.Diff)
	}
	for _, want := range []string{
		"diff --git a/new.txt b/new.txt\nnew file mode 100644\n",
		"diff --git a/staged-gone.txt b/staged-gone.txt\ndeleted file mode 100644\n",
		"diff --git a/mode.sh b/mode.sh\nold mode 100644\nnew mode 100755\n",
		"diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n",
	} {
		if !strings.Contains(c.Diff, want) {
			t.Errorf("diff lacks %q", want)
		}
	}
	if got, want := c.Diff[untracked:], gitNewFileDiff(t, dir, "dir/untracked.txt"); got != want {
		t.Errorf("untracked rendering\n got: %q\nwant: %q", got, want)
	}
	if strings.Contains(c.Diff, "noise") {
		t.Error("ignored file rendered")
	}

	// Same state, same revision; any change, another one.
	if again := review(t, Options{}, dir); again.Revision != c.Revision {
		t.Error("revision not stable")
	}
	testutil.WriteFile(t, dir, "dir/untracked.txt", "x\nY")
	if again := review(t, Options{}, dir); again.Revision == c.Revision {
		t.Error("revision unchanged after editing an untracked file")
	}
}

func TestChangesRename(t *testing.T) {
	dir := testutil.NewRepo(t)
	var body strings.Builder
	for i := range 20 {
		body.WriteString(strings.Repeat("line ", i+1) + "\n")
	}
	testutil.WriteFile(t, dir, "old name.txt", body.String())
	testutil.CommitAll(t, dir)
	testutil.Git(t, dir, "mv", "old name.txt", "new name.txt")

	c := review(t, Options{}, dir)
	checkFiles(t, c.Files, []FileChange{
		{Path: "new name.txt", OldPath: "old name.txt", Status: "renamed", Staged: true},
	})
	want := "diff --git a/old name.txt b/new name.txt\nsimilarity index 100%\nrename from old name.txt\nrename to new name.txt\n"
	if c.Diff != want {
		t.Errorf("diff = %q, want %q", c.Diff, want)
	}
}

func TestChangesBinary(t *testing.T) {
	dir := testutil.NewRepo(t)
	testutil.WriteFile(t, dir, "blob.bin", "a\x00b")
	testutil.CommitAll(t, dir)
	testutil.WriteFile(t, dir, "blob.bin", "a\x00c")
	testutil.WriteFile(t, dir, "new.bin", "\x00\x01\x02")

	c := review(t, Options{}, dir)
	checkFiles(t, c.Files, []FileChange{
		{Path: "blob.bin", Status: "modified", Unstaged: true, Binary: true},
		{Path: "new.bin", Status: "untracked", Binary: true},
	})
	if !strings.Contains(c.Diff, "Binary files a/blob.bin and b/blob.bin differ\n") {
		t.Errorf("tracked binary diff:\n%s", c.Diff)
	}
	if i := strings.Index(c.Diff, "diff --git a/new.bin"); i < 0 || c.Diff[i:] != gitNewFileDiff(t, dir, "new.bin") {
		t.Errorf("untracked binary diff:\n%s", c.Diff)
	}
	if strings.ContainsRune(c.Diff, 0) {
		t.Error("diff holds a NUL byte")
	}
}

func TestChangesUntrackedKinds(t *testing.T) {
	dir := testutil.NewRepo(t)
	testutil.WriteFile(t, dir, "base.txt", "base\n")
	testutil.CommitAll(t, dir)
	testutil.WriteFile(t, dir, "empty", "")
	testutil.WriteFile(t, dir, "crlf.txt", "a\r\nb\r\n")
	testutil.WriteFile(t, dir, "run.sh", "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../outside/target", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	nested := filepath.Join(dir, "nested")
	if err := os.Mkdir(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, nested, "init", "-q")
	testutil.WriteFile(t, nested, "inner.txt", "inner\n")

	c := review(t, Options{}, dir)
	var paths []string
	for _, f := range c.Files {
		paths = append(paths, f.Path)
	}
	// FIFOs are not listed by ls-files; the nested repository is listed as
	// a directory and rendered as nothing.
	if got, want := strings.Join(paths, ","), "crlf.txt,empty,link,nested/,run.sh"; got != want {
		t.Errorf("paths = %s, want %s", got, want)
	}
	for _, name := range []string{"crlf.txt", "empty", "link", "run.sh"} {
		want := gitNewFileDiff(t, dir, name)
		if !strings.Contains(c.Diff, want) {
			t.Errorf("%s: diff lacks Git's rendering %q:\n%s", name, want, c.Diff)
		}
	}
	if strings.Contains(c.Diff, "inner") {
		t.Error("nested repository content rendered")
	}
}

func TestChangesSpecialPaths(t *testing.T) {
	dir := testutil.NewRepo(t)
	names := []string{"with space.txt", "ünïcødé ✓.txt", "new\nline.txt", "tab\there.txt", `quote"back\slash.txt`}
	for _, n := range names {
		testutil.WriteFile(t, dir, n, "before\n")
	}
	testutil.CommitAll(t, dir)
	var want []FileChange
	for _, n := range names {
		testutil.WriteFile(t, dir, n, "after\n")
		testutil.WriteFile(t, dir, "u "+n, "untracked\n")
		want = append(want,
			FileChange{Path: n, Status: "modified", Unstaged: true, Added: 1, Removed: 1},
			FileChange{Path: "u " + n, Status: "untracked", Added: 1})
	}
	c := review(t, Options{}, dir)
	sortFiles(want)
	checkFiles(t, c.Files, want)
	for _, n := range names {
		header := "diff --git " + quotePath("a/"+n) + " " + quotePath("b/"+n) + "\n"
		if !strings.Contains(c.Diff, header) {
			t.Errorf("diff lacks header %q", header)
		}
		if !strings.Contains(c.Diff, gitNewFileDiff(t, dir, "u "+n)) {
			t.Errorf("untracked %q not rendered as Git does:\n%s", n, c.Diff)
		}
	}
	if !strings.Contains(c.Diff, `diff --git "a/new\nline.txt" "b/new\nline.txt"`) {
		t.Error("newline path not quoted")
	}
}

func TestChangesNoCommits(t *testing.T) {
	dir := testutil.NewRepo(t)
	testutil.WriteFile(t, dir, "staged.txt", "s1\ns2\n")
	testutil.Git(t, dir, "add", "staged.txt")
	testutil.WriteFile(t, dir, "untracked.txt", "u\n")

	c := review(t, Options{}, dir)
	if c.Head != "" {
		t.Errorf("Head = %q, want empty", c.Head)
	}
	checkFiles(t, c.Files, []FileChange{
		{Path: "staged.txt", Status: "added", Staged: true, Added: 2},
		{Path: "untracked.txt", Status: "untracked", Added: 1},
	})
	if !strings.HasPrefix(c.Diff, "diff --git a/staged.txt b/staged.txt\nnew file mode 100644\n") {
		t.Errorf("diff:\n%s", c.Diff)
	}
}

func TestChangesSHA256NoCommits(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, dir, "init", "-q", "--object-format=sha256")
	testutil.WriteFile(t, dir, "a.txt", "a\n")
	testutil.Git(t, dir, "add", "a.txt")
	c := review(t, Options{}, dir)
	checkFiles(t, c.Files, []FileChange{{Path: "a.txt", Status: "added", Staged: true, Added: 1}})
}

func TestChangesCleanRepository(t *testing.T) {
	dir := testutil.NewRepo(t)
	testutil.WriteFile(t, dir, "a.txt", "a\n")
	testutil.CommitAll(t, dir)
	c := review(t, Options{}, dir)
	if len(c.Files) != 0 || c.Diff != "" || c.Truncated {
		t.Errorf("clean repository: %+v", c)
	}
	if c.Files == nil {
		t.Error("Files is nil; want an empty list in JSON")
	}
}

func TestChangesRootErrors(t *testing.T) {
	repo := testutil.NewRepo(t)
	testutil.WriteFile(t, repo, "sub/file.txt", "x\n")
	testutil.CommitAll(t, repo)
	plain := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(repo, link); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		root string
		want error
	}{
		{"subdirectory", filepath.Join(repo, "sub"), gitrepo.ErrNotTopLevel},
		{"git directory", filepath.Join(repo, ".git"), gitrepo.ErrNotTopLevel},
		{"git objects directory", filepath.Join(repo, ".git", "objects"), gitrepo.ErrNotTopLevel},
		{"not a repository", plain, gitrepo.ErrNotRepository},
		{"symlink to the top level", link, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(Options{}).Changes(context.Background(), tt.root)
			if !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if err != nil && c != nil {
				t.Error("non-nil Changes with an error")
			}
		})
	}

	if _, err := New(Options{}).Changes(context.Background(), filepath.Join(plain, "missing")); err == nil || errors.Is(err, gitrepo.ErrGit) {
		t.Errorf("missing root: err = %v", err)
	}
}

func TestChangesRefusesUnsafeFilters(t *testing.T) {
	tests := []struct {
		name   string
		config [][2]string
		attrs  string
	}{
		{"clean filter", [][2]string{{"filter.evil.clean", "sh -c 'touch MARKER; cat'"}}, "* filter=evil\n"},
		{"process filter", [][2]string{{"filter.Evil.process", "sh -c 'touch MARKER'"}}, "* filter=Evil\n"},
		{"smudge filter", [][2]string{{"filter.evil.smudge", "sh -c 'touch MARKER; cat'"}}, "* filter=evil\n"},
		{"filter not referenced", [][2]string{{"filter.evil.clean", "sh -c 'touch MARKER; cat'"}}, ""},
		{"textconv", [][2]string{{"diff.x.textconv", "sh -c 'touch MARKER; cat \"$0\"'"}}, "* diff=x\n"},
		{"diff command", [][2]string{{"diff.x.command", "sh -c 'touch MARKER'"}}, "* diff=x\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := testutil.NewRepo(t)
			testutil.WriteFile(t, dir, "a.txt", "a\n")
			testutil.CommitAll(t, dir)
			for _, kv := range tt.config {
				testutil.Git(t, dir, "config", kv[0], kv[1])
			}
			if tt.attrs != "" {
				testutil.WriteFile(t, dir, ".gitattributes", tt.attrs)
			}
			// A changed mtime makes diff-files hash the file through its
			// clean filter.
			testutil.WriteFile(t, dir, "a.txt", "b\n")
			future := time.Now().Add(time.Hour)
			if err := os.Chtimes(filepath.Join(dir, "a.txt"), future, future); err != nil {
				t.Fatal(err)
			}

			_, err := New(Options{}).Changes(context.Background(), dir)
			if !errors.Is(err, gitrepo.ErrUnsafeFilters) {
				t.Fatalf("err = %v, want gitrepo.ErrUnsafeFilters", err)
			}
			if strings.Contains(err.Error(), "evil") || strings.Contains(err.Error(), "MARKER") {
				t.Errorf("error echoes repository configuration: %v", err)
			}
			if _, err := os.Lstat(filepath.Join(dir, "MARKER")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("MARKER exists: a filter ran (%v)", err)
			}
		})
	}

	t.Run("included config", func(t *testing.T) {
		dir := testutil.NewRepo(t)
		testutil.WriteFile(t, dir, "a.txt", "a\n")
		testutil.CommitAll(t, dir)
		testutil.WriteFile(t, dir, ".git/extra.config", "[filter \"evil\"]\n\tclean = sh -c 'touch MARKER; cat'\n")
		testutil.Git(t, dir, "config", "include.path", "extra.config")
		testutil.WriteFile(t, dir, ".gitattributes", "* filter=evil\n")
		if _, err := New(Options{}).Changes(context.Background(), dir); !errors.Is(err, gitrepo.ErrUnsafeFilters) {
			t.Fatalf("err = %v, want gitrepo.ErrUnsafeFilters", err)
		}
	})

	// The setup is live: ordinary git status runs the filter.
	t.Run("control", func(t *testing.T) {
		dir := testutil.NewRepo(t)
		testutil.WriteFile(t, dir, "a.txt", "a\n")
		testutil.CommitAll(t, dir)
		testutil.Git(t, dir, "config", "filter.evil.clean", "sh -c 'touch MARKER; cat'")
		testutil.WriteFile(t, dir, ".gitattributes", "* filter=evil\n")
		testutil.WriteFile(t, dir, "a.txt", "b\n")
		testutil.Git(t, dir, "status", "--short")
		if _, err := os.Lstat(filepath.Join(dir, "MARKER")); err != nil {
			t.Fatalf("control: filter did not run: %v", err)
		}
	})
}

func TestChangesIgnoresInheritedGitEnvironment(t *testing.T) {
	dir := testutil.NewRepo(t)
	testutil.WriteFile(t, dir, "a.txt", "a\n")
	testutil.CommitAll(t, dir)
	testutil.WriteFile(t, dir, "a.txt", "b\n")
	testutil.WriteFile(t, dir, "u.txt", "u\n")
	want := review(t, Options{}, dir)

	other := testutil.NewRepo(t)
	testutil.WriteFile(t, other, "x.txt", "x\n")
	testutil.CommitAll(t, other)
	marker := filepath.Join(t.TempDir(), "MARKER")
	t.Setenv("GIT_DIR", filepath.Join(other, ".git"))
	t.Setenv("GIT_WORK_TREE", other)
	t.Setenv("GIT_INDEX_FILE", filepath.Join(t.TempDir(), "bogus-index"))
	t.Setenv("GIT_EXTERNAL_DIFF", "sh -c 'touch "+marker+"'")
	t.Setenv("GIT_CONFIG_PARAMETERS", "'diff.x.textconv'='touch "+marker+"'")
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "core.fsmonitor")
	t.Setenv("GIT_CONFIG_VALUE_0", "touch "+marker)
	t.Setenv("GIT_OBJECT_DIRECTORY", filepath.Join(other, ".git", "objects"))

	got := review(t, Options{}, dir)
	if got.Revision != want.Revision || got.Diff != want.Diff {
		t.Errorf("inherited GIT_* changed the result:\n got: %s\nwant: %s", got.Diff, want.Diff)
	}
	if _, err := os.Lstat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Error("an inherited helper ran")
	}
}

func TestChangesLeavesIndexUntouched(t *testing.T) {
	dir := testutil.NewRepo(t)
	testutil.WriteFile(t, dir, "touched.txt", "same\n")
	testutil.WriteFile(t, dir, "changed.txt", "old\n")
	testutil.CommitAll(t, dir)
	// Stat-dirty but unchanged: porcelain diff/status would refresh and
	// rewrite the index here.
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "touched.txt"), future, future); err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, dir, "changed.txt", "new\n")
	testutil.WriteFile(t, dir, "u.txt", "u\n")

	index := filepath.Join(dir, ".git", "index")
	before, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-24 * time.Hour).Truncate(time.Second)
	if err := os.Chtimes(index, past, past); err != nil {
		t.Fatal(err)
	}
	entriesBefore, _ := os.ReadDir(filepath.Join(dir, ".git"))

	c := review(t, Options{}, dir)
	checkFiles(t, c.Files, []FileChange{
		{Path: "changed.txt", Status: "modified", Unstaged: true, Added: 1, Removed: 1},
		{Path: "u.txt", Status: "untracked", Added: 1},
	})

	after, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(index)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("index content changed")
	}
	if !fi.ModTime().Equal(past) {
		t.Errorf("index mtime changed: %v, want %v", fi.ModTime(), past)
	}
	entriesAfter, _ := os.ReadDir(filepath.Join(dir, ".git"))
	if len(entriesAfter) != len(entriesBefore) {
		t.Errorf(".git entries: %d before, %d after", len(entriesBefore), len(entriesAfter))
	}
}

func TestChangesTruncation(t *testing.T) {
	t.Run("huge untracked file", func(t *testing.T) {
		dir := testutil.NewRepo(t)
		testutil.WriteFile(t, dir, "a.txt", "a\n")
		testutil.CommitAll(t, dir)
		testutil.WriteFile(t, dir, "a.txt", "b\n")
		testutil.WriteFile(t, dir, "huge.txt", strings.Repeat("0123456789abcdef\n", 1<<18)) // 4.25 MiB
		testutil.WriteFile(t, dir, "later.txt", "later\n")

		const limit = 64 << 10
		c := review(t, Options{MaxDiffBytes: limit}, dir)
		if !c.Truncated {
			t.Error("Truncated not set")
		}
		if len(c.Diff) > limit || len(c.Diff) < limit/2 {
			t.Errorf("len(Diff) = %d, want ≤ %d and not tiny", len(c.Diff), limit)
		}
		if !strings.HasPrefix(c.Diff, "diff --git a/a.txt b/a.txt\n") || !strings.HasSuffix(c.Diff, "\n") {
			t.Errorf("diff starts %q, ends %q", c.Diff[:30], c.Diff[len(c.Diff)-30:])
		}
		if strings.Contains(c.Diff, "later") {
			t.Error("a file after the cut was rendered")
		}
		var huge FileChange
		for _, f := range c.Files {
			if f.Path == "huge.txt" {
				huge = f
			}
		}
		if huge.Status != "untracked" || huge.Added == 0 || huge.Added >= 1<<18 {
			t.Errorf("huge.txt = %+v", huge)
		}
		if len(c.Files) != 3 {
			t.Errorf("files = %+v", c.Files)
		}
		// The hunk header counts exactly the lines shown.
		i := strings.Index(c.Diff, "@@ -0,0 +1,")
		if i < 0 || strings.Count(c.Diff[i:], "\n+") != huge.Added {
			t.Errorf("hunk lines mismatch (Added=%d)", huge.Added)
		}
	})

	t.Run("huge tracked change", func(t *testing.T) {
		dir := testutil.NewRepo(t)
		testutil.WriteFile(t, dir, "big.txt", "x\n")
		testutil.CommitAll(t, dir)
		testutil.WriteFile(t, dir, "big.txt", strings.Repeat("line of text\n", 100000))
		c := review(t, Options{MaxDiffBytes: 10000}, dir)
		if !c.Truncated || len(c.Diff) > 10000 || !strings.HasSuffix(c.Diff, "\n") {
			t.Errorf("truncated=%v len=%d", c.Truncated, len(c.Diff))
		}
		checkFiles(t, c.Files, []FileChange{{Path: "big.txt", Status: "modified", Unstaged: true, Added: 100000, Removed: 1}})
	})

	t.Run("max files", func(t *testing.T) {
		dir := testutil.NewRepo(t)
		for _, n := range []string{"a", "b", "c", "d"} {
			testutil.WriteFile(t, dir, n, n+"\n")
		}
		c := review(t, Options{MaxFiles: 2}, dir)
		if !c.Truncated || len(c.Files) != 2 {
			t.Errorf("truncated=%v files=%+v", c.Truncated, c.Files)
		}
	})
}

func TestChangesWithhold(t *testing.T) {
	dir := testutil.NewRepo(t)
	testutil.WriteFile(t, dir, ".env", "TOKEN=old\n")
	testutil.WriteFile(t, dir, "app.go", "package app\n")
	testutil.CommitAll(t, dir)
	testutil.WriteFile(t, dir, ".env", "TOKEN=new-secret\n")
	testutil.WriteFile(t, dir, "app.go", "package app // edited\n")
	testutil.WriteFile(t, dir, "keys/id.pem", "-----BEGIN PRIVATE KEY-----\nsecret\n")

	withhold := func(p string) bool { return p == ".env" || strings.HasSuffix(p, ".pem") }
	c := review(t, Options{Withhold: withhold}, dir)
	for _, secret := range []string{"TOKEN", "secret", "PRIVATE"} {
		if strings.Contains(c.Diff, secret) {
			t.Errorf("diff leaks %q:\n%s", secret, c.Diff)
		}
	}
	for _, want := range []string{
		"diff --git a/.env b/.env\n" + withholdNote,
		"diff --git a/keys/id.pem b/keys/id.pem\nnew file mode 100644\n" + withholdNote,
		"+package app // edited\n",
	} {
		if !strings.Contains(c.Diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, c.Diff)
		}
	}
	checkFiles(t, c.Files, []FileChange{
		{Path: ".env", Status: "modified", Unstaged: true, Added: 1, Removed: 1, Withheld: true},
		{Path: "app.go", Status: "modified", Unstaged: true, Added: 1, Removed: 1},
		{Path: "keys/id.pem", Status: "untracked", Withheld: true},
	})
}

func TestChangesTimeoutKillsGit(t *testing.T) {
	dir := testutil.NewRepo(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	fake := filepath.Join(t.TempDir(), "git")
	script := "#!/bin/sh\nsleep 30 &\necho $! > " + pidFile + "\nwait\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := New(Options{Git: fake, Timeout: 300 * time.Millisecond}).Changes(context.Background(), dir)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout and DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	pid, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, c := range strings.TrimSpace(string(pid)) {
		n = n*10 + int(c-'0')
	}
	deadline := time.Now().Add(3 * time.Second)
	for syscall.Kill(n, 0) == nil {
		// A zombie still answers signal 0 until reaped by init; check state.
		if stat, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/stat"); err == nil && bytes.Contains(stat, []byte(") Z ")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the grandchild survived the timeout")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestChangesGitMissing(t *testing.T) {
	dir := testutil.NewRepo(t)
	_, err := New(Options{Git: filepath.Join(t.TempDir(), "no-git")}).Changes(context.Background(), dir)
	if !errors.Is(err, gitrepo.ErrGit) {
		t.Fatalf("err = %v, want gitrepo.ErrGit", err)
	}
}

func sortFiles(f []FileChange) {
	for i := 1; i < len(f); i++ {
		for j := i; j > 0 && f[j].Path < f[j-1].Path; j-- {
			f[j], f[j-1] = f[j-1], f[j]
		}
	}
}

// Repository settings that plain Git would execute, but that the global
// options override rather than refuse.
func TestChangesNeutralizesRepositoryHelpers(t *testing.T) {
	tests := []struct {
		name    string
		key     string
		control []string // a plain git command that runs the helper
	}{
		{"fsmonitor hook", "core.fsmonitor", []string{"status", "--short"}},
		{"external diff", "diff.external", []string{"diff"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := testutil.NewRepo(t)
			testutil.WriteFile(t, dir, "a.txt", "a\n")
			testutil.CommitAll(t, dir)
			testutil.WriteFile(t, dir, "a.txt", "b\n")
			testutil.Git(t, dir, "config", tt.key, "sh -c 'touch MARKER' --")
			marker := filepath.Join(dir, "MARKER")

			c := review(t, Options{}, dir)
			checkFiles(t, c.Files, []FileChange{{Path: "a.txt", Status: "modified", Unstaged: true, Added: 1, Removed: 1}})
			if _, err := os.Lstat(marker); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s ran during review", tt.key)
			}
			testutil.Git(t, dir, tt.control...)
			if _, err := os.Lstat(marker); err != nil {
				t.Fatalf("control: plain git did not run %s: %v", tt.key, err)
			}
		})
	}
}
