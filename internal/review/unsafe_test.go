//go:build unix

package review

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/testutil"
)

// TestChangesRefusesEscapingMetadata plants, for each way repository
// metadata can point outside the root, a FIFO where Git would read: Git
// opening it would block until the timeout, so an ErrRepositoryUnsafe
// answer proves that nothing outside was opened.
func TestChangesRefusesEscapingMetadata(t *testing.T) {
	for _, e := range testutil.Escapes() {
		t.Run(e.Name, func(t *testing.T) {
			root := testutil.NewRepo(t)
			testutil.WriteFile(t, root, "a.txt", "a\n")
			commitAll(t, root)
			base := strings.TrimSpace(testutil.Git(t, root, "rev-parse", "HEAD"))
			testutil.WriteFile(t, root, "a.txt", "b\n")
			outside := testutil.CanonicalTempDir(t)
			e.Plant(t, root, outside)

			r := New(Options{Timeout: 5 * time.Second})
			start := time.Now()
			if _, err := r.Changes(t.Context(), root); !errors.Is(err, ErrRepositoryUnsafe) {
				t.Errorf("Changes = %v, want ErrRepositoryUnsafe", err)
			}
			if _, err := r.ChangesSince(t.Context(), root, base, root); !errors.Is(err, ErrRepositoryUnsafe) {
				t.Errorf("ChangesSince = %v, want ErrRepositoryUnsafe", err)
			}
			if _, err := OpenRepository(root); !errors.Is(err, ErrRepositoryUnsafe) {
				t.Errorf("OpenRepository = %v, want ErrRepositoryUnsafe", err)
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Errorf("took %v: something waited on a FIFO", d)
			}
		})
	}
}

// TestChangesRunsNoRepositoryCode plants hooks, fsmonitor, pagers, an
// external diff and an ssh command in the repository; the review runs none
// of them, while plain Git does (the control).
func TestChangesRunsNoRepositoryCode(t *testing.T) {
	root := testutil.NewRepo(t)
	testutil.WriteFile(t, root, "a.txt", "a\n")
	testutil.WriteFile(t, root, "staged.txt", "s\n")
	commitAll(t, root)
	testutil.WriteFile(t, root, "a.txt", "b\n")
	testutil.WriteFile(t, root, "staged.txt", "t\n")
	testutil.Git(t, root, "add", "staged.txt")
	testutil.WriteFile(t, root, "new.txt", "n\n")
	markers := filepath.Join(testutil.CanonicalTempDir(t), "markers")
	testutil.PlantRepositoryCode(t, root, markers)

	c := review(t, Options{}, root)
	if len(c.Files) != 3 {
		t.Errorf("files = %+v", c.Files)
	}
	if m := testutil.Markers(t, markers); len(m) != 0 {
		t.Fatalf("the review ran repository code: %v", m)
	}
	testutil.Git(t, root, "status", "--short")
	if m := testutil.Markers(t, markers); len(m) == 0 {
		t.Fatal("control: plain git status ran nothing")
	}
}

func TestChangesRunsNoFilters(t *testing.T) {
	root := testutil.NewRepo(t)
	testutil.WriteFile(t, root, "a.txt", "a\n")
	commitAll(t, root)
	testutil.WriteFile(t, root, "a.txt", "b\n")
	markers := filepath.Join(testutil.CanonicalTempDir(t), "markers")
	testutil.PlantFilters(t, root, markers)
	if _, err := New(Options{}).Changes(t.Context(), root); !errors.Is(err, ErrUnsafeFilters) {
		t.Errorf("Changes = %v, want ErrUnsafeFilters", err)
	}
	if m := testutil.Markers(t, markers); len(m) != 0 {
		t.Fatalf("the review ran a filter: %v", m)
	}
	testutil.Git(t, root, "diff")
	if m := testutil.Markers(t, markers); len(m) == 0 {
		t.Fatal("control: plain git diff ran no filter")
	}
}

// TestChangesChecksSubmoduleMetadata: a checked-out submodule's .git is
// work tree content (apply_patch may rewrite it), and diff-files resolves the
// submodule's HEAD through it whenever its directory exists (even with
// --ignore-submodules=all). Pointed at an outside repository whose HEAD is
// a FIFO, Git would block; otherwise it would print that repository's HEAD
// commit. The review refuses instead; a submodule whose repository lives in
// .git/modules is reviewed as before.
func TestChangesChecksSubmoduleMetadata(t *testing.T) {
	root := testutil.NewRepo(t)
	testutil.WriteFile(t, root, "a.txt", "a\n")
	commitAll(t, root)
	outside := filepath.Join(testutil.CanonicalTempDir(t), "repo")
	testutil.OutsideRepo(t, outside, false)
	id := strings.TrimSpace(testutil.Git(t, outside, "rev-parse", "HEAD"))
	testutil.Git(t, root, "update-index", "--add", "--cacheinfo", "160000,"+id+",sub")
	testutil.Git(t, root, "commit", "-q", "-m", "submodule")

	// A proper checkout: the submodule's repository inside .git/modules.
	testutil.Git(t, root, "clone", "-q", "--bare", outside, filepath.Join(root, ".git", "modules", "sub"))
	testutil.Git(t, filepath.Join(root, ".git", "modules", "sub"), "config", "core.bare", "false")
	testutil.WriteFile(t, root, "sub/.git", "gitdir: ../.git/modules/sub\n")
	testutil.Git(t, filepath.Join(root, "sub"), "checkout", "-q", "-f", id)
	if c, err := New(Options{}).Changes(t.Context(), root); err != nil || len(c.Files) != 0 {
		t.Fatalf("Changes with a proper submodule = %+v, %v", c, err)
	}

	// Redirected outside, with a FIFO HEAD.
	head := filepath.Join(outside, ".git", "HEAD")
	if err := os.Remove(head); err != nil {
		t.Fatal(err)
	}
	testutil.Mkfifo(t, head)
	testutil.WriteFile(t, root, "sub/.git", "gitdir: "+filepath.Join(outside, ".git")+"\n")
	start := time.Now()
	if _, err := New(Options{Timeout: 5 * time.Second}).Changes(t.Context(), root); !errors.Is(err, ErrRepositoryUnsafe) {
		t.Errorf("Changes with a submodule leading outside = %v, want ErrRepositoryUnsafe", err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("took %v: something waited on a FIFO", d)
	}
}

// TestChangesRefusesConditionalInclude: a configuration file included
// under a condition (includeIf) means one thing where Git is checked and
// another where it runs (onbranch: after a branch switch or in a worktree
// on another branch; gitdir: in a worktree, whose repository directory is
// elsewhere; hasconfig: under another worktree's config.worktree), so a
// filter it defines can pass the check and run after it. Every one is
// refused, also included by an include, whatever its condition says here;
// a plain include is not.
func TestChangesRefusesConditionalInclude(t *testing.T) {
	const onBranch = "includeIf.onbranch:devspace/**.path"
	tests := []struct {
		name  string
		key   string // set to value in .git/config
		value string
		files map[string]string // more files in .git
		want  error
	}{
		{"onbranch, another branch", onBranch, "evil.cfg", nil, ErrRepositoryUnsafe},
		{"onbranch, this branch", "includeIf.onbranch:**.path", "evil.cfg", nil, ErrRepositoryUnsafe},
		{"gitdir", "includeIf.gitdir:**/worktrees/.path", "evil.cfg", nil, ErrRepositoryUnsafe},
		{"gitdir/i", "includeIf.gitdir/i:/.path", "evil.cfg", nil, ErrRepositoryUnsafe},
		{"hasconfig", "includeIf.hasconfig:remote.*.url:**.path", "evil.cfg", nil, ErrRepositoryUnsafe},
		{"missing file", onBranch, "later.cfg", nil, ErrRepositoryUnsafe},
		{"include of an include", "include.path", "inner.cfg",
			map[string]string{"inner.cfg": "[includeIf \"onbranch:devspace/**\"]\n\tpath = evil.cfg\n"}, ErrRepositoryUnsafe},
		{"plain include", "include.path", "plain.cfg", map[string]string{"plain.cfg": "[core]\n\tabbrev = 12\n"}, nil},
		{"empty conditional path", onBranch, "", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := testutil.NewRepo(t)
			testutil.WriteFile(t, root, "a.txt", "a\n")
			testutil.WriteFile(t, root, ".gitattributes", "* filter=x\n")
			commitAll(t, root)
			testutil.WriteFile(t, root, "a.txt", "b\n")
			gitDir := filepath.Join(root, ".git")
			marker := filepath.Join(testutil.CanonicalTempDir(t), "marker")
			testutil.WriteFile(t, gitDir, "evil.cfg", "[filter \"x\"]\n\tclean = \"sh -c \\\"touch '"+marker+"'; cat\\\" --\"\n")
			for name, content := range tt.files {
				testutil.WriteFile(t, gitDir, name, content)
			}
			testutil.Git(t, root, "config", tt.key, tt.value)
			_, err := New(Options{}).Changes(t.Context(), root)
			if tt.want == nil && err != nil || !errors.Is(err, tt.want) {
				t.Errorf("Changes = %v, want %v", err, tt.want)
			}
			if _, err := os.Lstat(marker); err == nil {
				t.Error("the included filter ran")
			}
		})
	}
}

// TestOpenRepositorySpecialFiles: a FIFO in .git is refused (Git would
// block on it); a socket, such as Git's fsmonitor daemon leaves, is not.
func TestOpenRepositorySpecialFiles(t *testing.T) {
	root := testutil.NewRepo(t)
	testutil.Mkfifo(t, filepath.Join(root, ".git", "info", "exclude.fifo"))
	if _, err := OpenRepository(root); !errors.Is(err, ErrRepositoryUnsafe) {
		t.Errorf("FIFO in .git: %v, want ErrRepositoryUnsafe", err)
	}

	root = testutil.NewRepo(t)
	ln, err := net.Listen("unix", filepath.Join(root, ".git", "s"))
	if err != nil {
		t.Skipf("unix socket: %v", err)
	}
	defer ln.Close()
	if _, err := OpenRepository(root); err != nil {
		t.Errorf("socket in .git: %v", err)
	}
	if _, err := New(Options{}).Changes(t.Context(), root); err != nil {
		t.Errorf("Changes with a socket in .git: %v", err)
	}
}

// TestChangesChecksNestedRepositories: to decide whether an untracked
// directory is a nested repository, `ls-files --others` reads the HEAD its
// .git names. A .git (file or symlink) there leading outside, at any depth
// Git descends to, is refused; a directory Git does not descend into (an
// ignored one's content) and a proper nested repository are fine.
func TestChangesChecksNestedRepositories(t *testing.T) {
	setup := func(t *testing.T) (root, outside string) {
		root = testutil.NewRepo(t)
		testutil.WriteFile(t, root, "a.txt", "a\n")
		testutil.WriteFile(t, root, "tracked/b.txt", "b\n")
		testutil.WriteFile(t, root, ".gitignore", "/ignored/\n")
		commitAll(t, root)
		outside = filepath.Join(testutil.CanonicalTempDir(t), "repo")
		testutil.OutsideRepo(t, outside, false)
		head := filepath.Join(outside, ".git", "HEAD")
		if err := os.Remove(head); err != nil {
			t.Fatal(err)
		}
		testutil.Mkfifo(t, head)
		return root, outside
	}
	tests := []struct {
		name  string
		plant func(t *testing.T, root, outside string)
		want  error
	}{
		{"top untracked", func(t *testing.T, root, outside string) {
			testutil.WriteFile(t, root, "x/.git", "gitdir: "+filepath.Join(outside, ".git")+"\n")
		}, ErrRepositoryUnsafe},
		{"under a tracked directory", func(t *testing.T, root, outside string) {
			testutil.WriteFile(t, root, "tracked/x/.git", "gitdir: "+filepath.Join(outside, ".git")+"\n")
		}, ErrRepositoryUnsafe},
		{"deep untracked", func(t *testing.T, root, outside string) {
			testutil.WriteFile(t, root, "u/v/w/.git", "gitdir: "+filepath.Join(outside, ".git")+"\n")
		}, ErrRepositoryUnsafe},
		{"symlinked .git", func(t *testing.T, root, outside string) {
			if err := os.MkdirAll(filepath.Join(root, "x"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(outside, ".git"), filepath.Join(root, "x", ".git")); err != nil {
				t.Fatal(err)
			}
		}, ErrRepositoryUnsafe},
		{"inside an ignored directory", func(t *testing.T, root, outside string) {
			testutil.WriteFile(t, root, "ignored/deep/.git", "gitdir: "+filepath.Join(outside, ".git")+"\n")
		}, nil},
		{"odd names", func(t *testing.T, root, outside string) {
			for _, d := range []string{":(top)x", "a*b", "new\nline", "-n"} {
				testutil.WriteFile(t, root, d+"/f.txt", "f\n")
			}
		}, nil},
		{"below an odd name", func(t *testing.T, root, outside string) {
			testutil.WriteFile(t, root, ":(exclude)u/f.txt", "f\n")
			testutil.WriteFile(t, root, ":(exclude)u/v/.git", "gitdir: "+filepath.Join(outside, ".git")+"\n")
		}, ErrRepositoryUnsafe},
		{"proper nested repository", func(t *testing.T, root, outside string) {
			nested := filepath.Join(root, "vendor", "lib")
			testutil.OutsideRepo(t, nested, false)
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, outside := setup(t)
			tt.plant(t, root, outside)
			start := time.Now()
			_, err := New(Options{Timeout: 5 * time.Second}).Changes(t.Context(), root)
			if tt.want == nil && err != nil || !errors.Is(err, tt.want) {
				t.Errorf("Changes = %v, want %v", err, tt.want)
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Errorf("took %v: something waited on a FIFO", d)
			}
		})
	}
}

// TestReviewWorkTreeFIFOIgnoreBlocks: Git opens the .gitignore of every
// directory it visits and the .gitattributes on a diffed path with a
// blocking open, so a FIFO there held the review until its timeout. The
// review refuses one (and a symlink leading to one, which a Git before
// 2.32 follows) before any Git reads it; a regular file or a symlink to
// one is fine.
func TestReviewWorkTreeFIFOIgnoreBlocks(t *testing.T) {
	fifo := func(name string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) { testutil.Mkfifo(t, filepath.Join(dir, name)) }
	}
	link := func(name, target string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name  string
		plant func(t *testing.T, dir string)
		want  error
	}{
		{"sub/.gitignore", fifo("sub/.gitignore"), ErrRepositoryUnsafe},
		{".gitattributes", fifo(".gitattributes"), ErrRepositoryUnsafe},
		{".gitignore", fifo(".gitignore"), ErrRepositoryUnsafe},
		{"tracked/.gitattributes", fifo("tracked/.gitattributes"), ErrRepositoryUnsafe},
		{"deep/er/.gitignore", fifo("deep/er/.gitignore"), ErrRepositoryUnsafe},
		{"symlink to a FIFO", func(t *testing.T, dir string) {
			fifo("pipe")(t, dir)
			link("sub/.gitignore", "../pipe")(t, dir)
		}, ErrRepositoryUnsafe},
		{"symlink to a file", func(t *testing.T, dir string) {
			testutil.WriteFile(t, dir, "patterns", "*.log\n")
			link("sub/.gitignore", "../patterns")(t, dir)
		}, nil},
		{"dangling symlink", link(".gitattributes", "nowhere"), nil},
		{"inside an ignored directory", func(t *testing.T, dir string) {
			testutil.WriteFile(t, dir, ".gitignore", "/ignored/\n")
			fifo("ignored/.gitignore")(t, dir)
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := testutil.NewRepo(t)
			testutil.WriteFile(t, dir, "a.txt", "one\n")
			testutil.WriteFile(t, dir, "tracked/b.txt", "b\n")
			commitAll(t, dir)
			testutil.WriteFile(t, dir, "a.txt", "two\n")
			testutil.WriteFile(t, dir, "tracked/b.txt", "c\n")
			tt.plant(t, dir)
			start := time.Now()
			_, err := New(Options{Timeout: 3 * time.Second}).Changes(context.Background(), dir)
			if el := time.Since(start); el > 2*time.Second {
				t.Fatalf("review blocked %v on a work-tree FIFO (err: %v)", el.Round(time.Millisecond), err)
			}
			if tt.want == nil && err != nil || !errors.Is(err, tt.want) {
				t.Errorf("Changes = %v, want %v", err, tt.want)
			}
		})
	}
}
