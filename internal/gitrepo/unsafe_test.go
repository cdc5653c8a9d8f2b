//go:build unix

package gitrepo

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/testutil"
)

// TestOpenRepositoryRefusesEscapingMetadata plants, for each way repository
// metadata can point outside the root, a FIFO where Git would read: Git
// opening it would block until the timeout, so an ErrRepositoryUnsafe
// answer proves that nothing outside was opened.
func TestOpenRepositoryRefusesEscapingMetadata(t *testing.T) {
	for _, e := range testutil.Escapes() {
		t.Run(e.Name, func(t *testing.T) {
			root := testutil.NewRepo(t)
			testutil.WriteFile(t, root, "a.txt", "a\n")
			testutil.CommitAll(t, root)
			e.Plant(t, root, testutil.CanonicalTempDir(t))
			start := time.Now()
			if _, err := OpenRepository(root); !errors.Is(err, ErrRepositoryUnsafe) {
				t.Errorf("OpenRepository = %v, want ErrRepositoryUnsafe", err)
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Errorf("took %v: something waited on a FIFO", d)
			}
		})
	}
}

// checkContent runs, in the repository at root, the checks a review runs
// before its diffs: OpenRepository, then Git.CheckContent.
func checkContent(t *testing.T, root string, timeout time.Duration) error {
	t.Helper()
	repo, err := OpenRepository(root)
	if err != nil {
		return err
	}
	return NewGit(GitOptions{Timeout: timeout}).CheckContent(t.Context(), repo)
}

// TestCheckContentSubmoduleMetadata: a checked-out submodule's .git is
// work tree content (apply_patch may rewrite it), and diff-files resolves the
// submodule's HEAD through it whenever its directory exists (even with
// --ignore-submodules=all). Pointed at an outside repository whose HEAD is
// a FIFO, Git would block; otherwise it would print that repository's HEAD
// commit. CheckContent refuses instead; a submodule whose repository lives
// in .git/modules passes as before.
func TestCheckContentSubmoduleMetadata(t *testing.T) {
	root := testutil.NewRepo(t)
	testutil.WriteFile(t, root, "a.txt", "a\n")
	testutil.CommitAll(t, root)
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
	if err := checkContent(t, root, 0); err != nil {
		t.Fatalf("CheckContent with a proper submodule = %v", err)
	}

	// Redirected outside, with a FIFO HEAD.
	head := filepath.Join(outside, ".git", "HEAD")
	if err := os.Remove(head); err != nil {
		t.Fatal(err)
	}
	testutil.Mkfifo(t, head)
	testutil.WriteFile(t, root, "sub/.git", "gitdir: "+filepath.Join(outside, ".git")+"\n")
	start := time.Now()
	if err := checkContent(t, root, 5*time.Second); !errors.Is(err, ErrRepositoryUnsafe) {
		t.Errorf("CheckContent with a submodule leading outside = %v, want ErrRepositoryUnsafe", err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("took %v: something waited on a FIFO", d)
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
	if err := checkContent(t, root, 0); err != nil {
		t.Errorf("CheckContent with a socket in .git: %v", err)
	}
}

// TestCheckContentNestedRepositories: to decide whether an untracked
// directory is a nested repository, `ls-files --others` reads the HEAD its
// .git names. A .git (file or symlink) there leading outside, at any depth
// Git descends to, is refused; a directory Git does not descend into (an
// ignored one's content) and a proper nested repository are fine.
func TestCheckContentNestedRepositories(t *testing.T) {
	setup := func(t *testing.T) (root, outside string) {
		root = testutil.NewRepo(t)
		testutil.WriteFile(t, root, "a.txt", "a\n")
		testutil.WriteFile(t, root, "tracked/b.txt", "b\n")
		testutil.WriteFile(t, root, ".gitignore", "/ignored/\n")
		testutil.CommitAll(t, root)
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
			err := checkContent(t, root, 5*time.Second)
			if tt.want == nil && err != nil || !errors.Is(err, tt.want) {
				t.Errorf("CheckContent = %v, want %v", err, tt.want)
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Errorf("took %v: something waited on a FIFO", d)
			}
		})
	}
}

// TestCheckContentWorkTreeFIFOIgnoreBlocks: Git opens the .gitignore of
// every directory it visits and the .gitattributes on a diffed path with a
// blocking open, so a FIFO there held a review until its timeout.
// CheckContent refuses one (and a symlink leading to one, which a Git
// before 2.32 follows) before any Git reads it; a regular file or a
// symlink to one is fine.
func TestCheckContentWorkTreeFIFOIgnoreBlocks(t *testing.T) {
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
			testutil.CommitAll(t, dir)
			testutil.WriteFile(t, dir, "a.txt", "two\n")
			testutil.WriteFile(t, dir, "tracked/b.txt", "c\n")
			tt.plant(t, dir)
			start := time.Now()
			err := checkContent(t, dir, 3*time.Second)
			if el := time.Since(start); el > 2*time.Second {
				t.Fatalf("CheckContent blocked %v on a work-tree FIFO (err: %v)", el.Round(time.Millisecond), err)
			}
			if tt.want == nil && err != nil || !errors.Is(err, tt.want) {
				t.Errorf("CheckContent = %v, want %v", err, tt.want)
			}
		})
	}
}
