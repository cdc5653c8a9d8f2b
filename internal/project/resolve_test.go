package project

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// resolveTree is a Project root "proj" beside a sibling "proj_evil", with
// sensitive files behind innocent-looking symlinks, links that escape,
// a loop and a dangling link.
func resolveTree(t testing.TB) *os.Root {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "proj")
	for _, f := range []string{"proj/.ssh/config", "proj/.aws/config", "proj/src/main.txt", "proj_evil/secret"} {
		p := filepath.Join(base, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"keys":       ".ssh",                 // keys/config is .ssh/config
		"src/up":     "..",                   // src/up/.ssh/config
		"chain":      "hop",                  // chain → hop → .aws
		"hop":        ".aws",                 //
		"plain.link": "src/main.txt",         // a file symlink
		"nested":     "src/../.ssh/.",        // a target with dots
		"out":        base,                   // absolute: escapes even though it exists
		"src/esc":    "../..",                // climbs above the root
		"evil":       "../proj_evil",         // a sibling whose name starts with the root's
		"loop1":      "loop2",                // a loop
		"loop2":      "loop1",                //
		"dangling":   "nowhere",              // target missing
		"deep":       "src/up/src/up/.ssh/.", // ".." through links, twice
	} {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	// c1 reaches src through 8 links (os.Root's limit), c0 through 9.
	for i := range 9 {
		target := fmt.Sprintf("c%d", i+1)
		if i == 8 {
			target = "src"
		}
		if err := os.Symlink(target, filepath.Join(dir, fmt.Sprintf("c%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root
}

func TestRealPath(t *testing.T) {
	root := resolveTree(t)
	for in, want := range map[string]struct {
		real string
		dir  bool
	}{
		".":                  {".", true},
		"src/main.txt":       {"src/main.txt", false},
		"keys/config":        {".ssh/config", false},
		"keys":               {".ssh", true},
		"src/up/.aws/config": {".aws/config", false},
		"src/up":             {".", true},
		"chain/config":       {".aws/config", false},
		"nested/config":      {".ssh/config", false},
		"nested":             {".ssh", true},
		"plain.link":         {"src/main.txt", false}, // the last element is followed too
		"deep":               {".ssh", true},
		"c1/main.txt":        {"src/main.txt", false},
	} {
		got, fi, err := RealPath(root, in)
		if err != nil || got != want.real || fi == nil || fi.IsDir() != want.dir || fi.Mode()&fs.ModeSymlink != 0 {
			t.Errorf("RealPath(%q) = %q, %v, %v; want %q (dir %v)", in, got, fi, err, want.real, want.dir)
		}
	}
	for in, want := range map[string]func(error) bool{
		"out/x":          isEscape,
		"out":            isEscape,
		"src/esc/x":      isEscape,
		"evil/secret":    isEscape,
		"loop1/x":        func(err error) bool { return errors.Is(err, syscall.ELOOP) },
		"c0/main.txt":    func(err error) bool { return errors.Is(err, syscall.ELOOP) },
		"dangling":       func(err error) bool { return errors.Is(err, fs.ErrNotExist) },
		"missing/x":      func(err error) bool { return errors.Is(err, fs.ErrNotExist) },
		"src/main.txt/x": func(err error) bool { return errors.Is(err, syscall.ENOTDIR) },
	} {
		if got, _, err := RealPath(root, in); !want(err) {
			t.Errorf("RealPath(%q) = %q, %v; want the other error", in, got, err)
		}
	}
}

func TestDirResolverPath(t *testing.T) {
	root := resolveTree(t)
	r := NewDirResolver(root)
	for range 2 { // the second round answers from the cache
		for in, want := range map[string]string{
			"keys/config":        ".ssh/config",
			"keys/missing/x":     ".ssh/missing/x",
			"src/up/.aws/config": ".aws/config",
			"chain/config":       ".aws/config",
			"nested/config":      ".ssh/config",
			"deep/config":        ".ssh/config",
			"src/main.txt":       "src/main.txt",
			"plain.link":         "plain.link", // the last element as written
			"dangling":           "dangling",
			"dangling/x":         "nowhere/x", // a link to a directory about to be created
			"new/file":           "new/file",
			"src/main.txt/x":     "src/main.txt/x",
			"src/main.txt/x/y":   "src/main.txt/x/y",
			"c1/main.txt":        "src/main.txt",
		} {
			got, err := r.Path(in)
			if err != nil || got != want {
				t.Errorf("Path(%q) = %q, %v; want %q", in, got, err, want)
			}
		}
		for in, want := range map[string]func(error) bool{
			"out/x":       isEscape,
			"src/esc/x":   isEscape,
			"evil/secret": isEscape,
			"loop1/x":     func(err error) bool { return errors.Is(err, syscall.ELOOP) },
			"c0/main.txt": func(err error) bool { return errors.Is(err, syscall.ELOOP) },
		} {
			if got, err := r.Path(in); !want(err) {
				t.Errorf("Path(%q) = %q, %v; want the other error", in, got, err)
			}
		}
	}
}

func isEscape(err error) bool {
	var pe *PathError
	return errors.As(err, &pe) && pe.Reason == ReasonSymlink
}
