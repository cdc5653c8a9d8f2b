package project

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCleanRel checks that CleanRel never panics, that what it accepts is
// clean, relative, inside the root and a fixed point, that what it refuses
// is a *PathError with a known reason that does not echo the path, and
// that an accepted path cannot leave the Project through the Project's
// *os.Root (a symlink to / sits at "out").
func FuzzCleanRel(f *testing.F) {
	for _, s := range []string{
		"", ".", "a/b", "./a//b/", "a/../b", "../x", "a/../../x", "/etc/passwd", `\\server\share`, "C:/x", "c:",
		"a\x00b", "\xff", "out/etc/passwd", "out", "in.txt", "ok", "a/./b/../../..", strings.Repeat("a/", 3000),
		"\u202eevil\u200b.txt", "..a", "a..", "...", "a/..b", "//a", "./../a",
	} {
		f.Add(s)
	}
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("x"), 0o644); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(dir, "out")); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink("in.txt", filepath.Join(dir, "ok")); err != nil {
		f.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { root.Close() })
	reasons := []string{ReasonAbsolute, ReasonParent, ReasonNUL, ReasonInvalidUTF8, ReasonTooLong}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := CleanRel(p)
		if err != nil {
			var pe *PathError
			if !errors.As(err, &pe) || !errors.Is(err, ErrPathDenied) || !slices.Contains(reasons, pe.Reason) {
				t.Fatalf("CleanRel(%q) error %T %v", p, err, err)
			}
			if len(p) >= 3 && strings.Contains(err.Error(), p) && !strings.Contains("path denied: "+pe.Reason, p) {
				t.Fatalf("CleanRel(%q) error %q echoes the path", p, err)
			}
			return
		}
		switch {
		case got == "", len(got) > MaxPathBytes, !utf8.ValidString(got), strings.IndexByte(got, 0) >= 0,
			strings.HasPrefix(got, "/"), got == "..", strings.HasPrefix(got, "../"), path.Clean(got) != got:
			t.Fatalf("CleanRel(%q) = %q: not a clean relative path", p, got)
		}
		if again, err := CleanRel(got); err != nil || again != got {
			t.Fatalf("CleanRel(CleanRel(%q)) = %q, %v; want %q", p, again, err, got)
		}
		// Through the root, the escaping symlink is refused, never followed.
		if first, _, _ := strings.Cut(got, "/"); first == "out" {
			if _, err := root.Stat(got); err == nil || (!errors.Is(Classify(err), ErrPathDenied) && !errors.Is(err, os.ErrNotExist)) {
				t.Fatalf("root.Stat(%q) = %v: a path through a symlink to / must be denied", got, err)
			}
		}
	})
}

// TestCleanRelAbsoluteAnySpelling holds FuzzCleanRel's findings: a
// drive-letter or backslash first element was refused as written ("C:",
// "\\x") but accepted behind "./", so CleanRel was not a fixed point.
func TestCleanRelAbsoluteAnySpelling(t *testing.T) {
	for _, p := range []string{"C:", "./C:", "./A:", ".//c:/x", "a/../C:b", `\x`, `./\`, `a/../\\srv`} {
		if got, err := CleanRel(p); !errors.Is(err, ErrPathDenied) {
			t.Errorf("CleanRel(%q) = %q, %v; want path_denied", p, got, err)
		}
	}
	for _, p := range []string{"a/C:", "CC:", "1:"} {
		if _, err := CleanRel(p); err != nil {
			t.Errorf("CleanRel(%q) = %v; want accepted", p, err)
		}
	}
}

// FuzzOpen checks the resolver's promise for any path: what Open opens is
// inside the root, its real path is clean and relative, it is the file
// that real path names (no link on the way), and it is never repository
// metadata nor sensitive unless sensitive files are allowed.
func FuzzOpen(f *testing.F) {
	for _, s := range []string{
		".", "keys/config", "g/config", "lnk_env", "zzz/config", "src/up/src/up/.ssh/x", "deep", "c1/main.txt",
		"plain.link", "meta/HEAD", "up_git/config", "nested/config", "out", "evil/secret", "src/esc/x", ".GIT/config",
	} {
		f.Add(s, false)
	}
	root := metaTree(f)
	f.Fuzz(func(t *testing.T, p string, allow bool) {
		rel, err := CleanRel(p)
		if err != nil {
			return
		}
		file, real, err := Open(root, rel, allow)
		if err != nil {
			if file != nil {
				t.Fatalf("Open(%q) returned a file with error %v", rel, err)
			}
			return
		}
		defer file.Close()
		if c, err := CleanRel(real); err != nil || c != real {
			t.Fatalf("Open(%q) real path %q is not clean and relative", rel, real)
		}
		if IsRepositoryMetadata(real) || !allow && IsSensitive(real) {
			t.Fatalf("Open(%q, %v) opened %q", rel, allow, real)
		}
		fi, err := file.Stat()
		if err != nil {
			t.Fatal(err)
		}
		lfi, err := root.Lstat(real)
		if err != nil || !os.SameFile(fi, lfi) {
			t.Fatalf("Open(%q) opened another file than %q names", rel, real)
		}
	})
}
