package project

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/devspace-dev/devspace/internal/testutil"
)

func isRepository(err error) bool {
	var pe *PathError
	return errors.As(err, &pe) && pe.Reason == ReasonRepository && errors.Is(err, ErrPathDenied)
}

// metaTree adds a repository and links to it to resolveTree's Project.
func metaTree(t testing.TB) *os.Root {
	t.Helper()
	root := resolveTree(t)
	for _, d := range []string{".git/hooks", "sub/.git", "meta/objects", "meta/refs", "lobj/refs", "lrefs/objects", "half/objects"} {
		if err := root.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{".git/config", ".git/HEAD", "meta/HEAD", "meta/config", ".env", ".kube/config",
		"lobj/HEAD", "lrefs/HEAD", "wtgd/HEAD", "wtgd/commondir", "half/HEAD"} {
		if err := root.MkdirAll(path.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := root.WriteFile(f, []byte("SECRET\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Git tests a Git directory's markers with access(), following links:
	// lobj/objects leads elsewhere, lrefs/refs nowhere yet.
	for link, target := range map[string]string{"g": ".git", "lnk_env": ".env", "zzz": ".kube", "up_git": "src/../.git/hooks/..",
		"lobj/objects": "../src", "lrefs/refs": "../not-yet", "lmeta": "meta"} {
		if err := root.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestOpenRules(t *testing.T) {
	root := metaTree(t)
	for in, want := range map[string]func(error) bool{
		".git/config":     isRepository,
		".git":            isRepository,
		".GIT/config":     isRepository,
		"sub/.git":        isRepository,
		"g/config":        isRepository, // a link to .git
		"g":               isRepository,
		"up_git/config":   isRepository, // a link through .git
		"keys/config":     func(err error) bool { return errors.Is(err, ErrSensitive) },
		"lnk_env":         func(err error) bool { return errors.Is(err, ErrSensitive) },
		"zzz/config":      func(err error) bool { return errors.Is(err, ErrSensitive) },
		".env":            func(err error) bool { return errors.Is(err, ErrSensitive) },
		"out":             isEscape,
		"evil/secret":     isEscape,
		"src/esc":         isEscape,
		"loop1":           func(err error) bool { return errors.Is(err, syscall.ELOOP) },
		"dangling":        func(err error) bool { return errors.Is(err, fs.ErrNotExist) },
		"src/main.txt/x":  func(err error) bool { return errors.Is(err, syscall.ENOTDIR) },
		"plain.link/x":    func(err error) bool { return errors.Is(err, syscall.ENOTDIR) },
		"missing/file":    func(err error) bool { return errors.Is(err, fs.ErrNotExist) },
		"src/up/.git/x/y": isRepository,
		// A Git directory by shape, whatever its name, the directory
		// itself included and through a link; a marker that is a symlink
		// counts; a linked worktree's gitdir has HEAD and commondir.
		"meta/config":          isRepository,
		"meta":                 isRepository,
		"meta/objects":         isRepository,
		"lmeta/config":         isRepository,
		"lobj/HEAD":            isRepository,
		"lrefs/HEAD":           isRepository,
		"wtgd/config.worktree": isRepository,
	} {
		f, real, err := Open(root, in, false)
		if f != nil {
			f.Close()
		}
		if !want(err) {
			t.Errorf("Open(%q) = %q, %v; want the other error", in, real, err)
		}
		if err != nil && strings.Contains(err.Error(), string(filepath.Separator)+"proj") {
			t.Errorf("Open(%q) error %q holds a host path", in, err)
		}
	}
	for in, want := range map[string]string{
		".":            ".",
		"src/main.txt": "src/main.txt",
		"plain.link":   "src/main.txt",
		"keys/config":  ".ssh/config", // allowed below
		"zzz/config":   ".kube/config",
		"src/up":       ".",
		"c1/main.txt":  "src/main.txt",
		"half/HEAD":    "half/HEAD", // HEAD and objects without refs: no Git directory
		"half":         "half",
	} {
		f, real, err := Open(root, in, true)
		if err != nil || real != want {
			t.Errorf("Open(%q, allowSensitive) = %q, %v; want %q", in, real, err, want)
			continue
		}
		fi, err := f.Stat()
		f.Close()
		lfi, lerr := root.Lstat(real)
		if err != nil || lerr != nil || !os.SameFile(fi, lfi) {
			t.Errorf("Open(%q) opened another file than its real path %q names", in, real)
		}
	}
}

func TestDirResolverRefusesRepositoryMetadata(t *testing.T) {
	root := metaTree(t)
	r := NewDirResolver(root)
	for _, in := range []string{
		".git/hooks/post-checkout", ".Git/config", "sub/.git/config", "g/hooks/x", "a/../.git/x",
		"meta/hooks/post-checkout", // a Git directory by shape, whatever its name
		"meta/config", "up_git/config", "src/up/g/x", "x/.git", ".git.", ".git /x", ".g\u200cit/x", "GIT~1/x",
		"lobj/config", "lrefs/config", // a marker that is a symlink counts
		"wtgd/config.worktree", // a linked worktree's gitdir: HEAD and commondir
		// Default-ignorable code points Linux casefold (ext4, f2fs) drops
		// but HFS+ does not: .git there.
		".g\u00adit/hooks/x", ".gi\u034ft/config", ".git\ufe0f/config", ".g\u2061it/x",
	} {
		if got, err := r.Path(in); !isRepository(err) {
			t.Errorf("Path(%q) = %q, %v; want repository_metadata", in, got, err)
		}
	}
	for _, in := range []string{"gitx/y", ".github/workflows/ci.yml", "src/.gitignore", ".gitattributes", "meta2/x", "half/config"} {
		if _, err := r.Path(in); err != nil {
			t.Errorf("Path(%q) = %v; want allowed", in, err)
		}
	}
}

func TestIsGitDirAt(t *testing.T) {
	root := metaTree(t)
	d, err := root.Open(".")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for name, want := range map[string]bool{
		"meta": true, "lobj": true, "lrefs": true, "wtgd": true,
		"half": false, "src": false, "sub": false, ".env": false, "missing": false,
		// Walks ask only of directories; a link to a Git directory that
		// replaced one is a doubt, which hides the name.
		"lmeta": true,
	} {
		if got := IsGitDirAt(d, name); got != want {
			t.Errorf("IsGitDirAt(%q) = %v, want %v", name, got, want)
		}
		f, err := OpenAt(d, name, false)
		if err != nil {
			continue
		}
		if got := IsGitDir(f); got != want {
			t.Errorf("IsGitDir(%q) = %v, want %v", name, got, want)
		}
		f.Close()
	}
}

// TestOpenRefusesGitDirRoot: a root that is itself a Git directory (a
// bare repository opened as a Project) holds nothing to read, as it holds
// nothing to write.
func TestOpenRefusesGitDirRoot(t *testing.T) {
	dir := t.TempDir()
	testutil.Git(t, dir, "init", "-q", "--bare", ".")
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, in := range []string{".", "config", "hooks"} {
		if f, _, err := Open(root, in, true); !isRepository(err) {
			if f != nil {
				f.Close()
			}
			t.Errorf("Open(%q) in a bare repository = %v, want repository_metadata", in, err)
		}
	}
	if _, err := NewDirResolver(root).Path("config"); !isRepository(err) {
		t.Errorf("DirResolver.Path(config) = %v, want repository_metadata", err)
	}
}

// TestOpenRaceSwap swaps a directory and a symlink to a sensitive
// directory in a tight loop while the same path is opened and read: the
// secret must never come back (what the issue reproduced once in 2,400
// reads with the path-string resolver).
func TestOpenRaceSwap(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, ".kube"), 0o755))
	must(os.WriteFile(filepath.Join(dir, ".kube", "config"), []byte("SECRET-MARKER\n"), 0o644))
	must(os.MkdirAll(filepath.Join(dir, "plain"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "plain", "config"), []byte("public\n"), 0o644))
	must(os.Symlink(".kube", filepath.Join(dir, "link")))
	must(os.Rename(filepath.Join(dir, "plain"), filepath.Join(dir, "zzz")))
	root, err := os.OpenRoot(dir)
	must(err)
	defer root.Close()

	stop := testutil.SwapDirAndLink(dir, "zzz", "plain", "link")
	defer stop()
	n := 10000
	if testing.Short() {
		n = 2000
	}
	seen := 0
	for range n {
		f, _, err := Open(root, "zzz/config", false)
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(f)
		f.Close()
		seen++
		if strings.Contains(string(b), "SECRET") {
			t.Fatal("a read through a swapped link returned the sensitive file")
		}
	}
	if seen == 0 {
		t.Fatal("no read succeeded: the race test proves nothing")
	}
}
