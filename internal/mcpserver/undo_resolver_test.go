package mcpserver

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestSnapshotResolver: real paths through directory and file symlinks,
// missing files reported as fs.ErrNotExist (undo then resolves the parent),
// and anything leading out of the root refused — also when the root
// itself is reached through a symlink, and with cached directories.
func TestSnapshotResolver(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "proj")
	evil := filepath.Join(base, "proj_evil")
	for _, d := range []string{filepath.Join(real, ".ssh"), filepath.Join(real, "src", "deep"), evil} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{".ssh/config", "src/main.go", "src/deep/x.go"} {
		if err := os.WriteFile(filepath.Join(real, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(evil, "secret"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"proj/keys":         ".ssh",                   // directory symlink inside
		"proj/src/cfg":      "../.ssh/config",         // file symlink inside
		"proj/src/out":      "../../proj_evil/secret", // file symlink to a sibling with the root's prefix
		"proj/outdir":       "../proj_evil",           // directory symlink out
		"proj/src/dangling": "nowhere",                // dangling
		"link-to-proj":      "proj",                   // the root reached through a symlink
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(base, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, rootPath := range []string{real, filepath.Join(base, "link-to-proj")} {
		resolve := snapshotResolver(rootPath)
		for _, tc := range []struct {
			path, want string
			err        error // nil: no error; errOutside: any other error
		}{
			{path: "src/main.go", want: "src/main.go"},
			{path: "src/deep/x.go", want: "src/deep/x.go"},
			{path: "keys/config", want: ".ssh/config"},
			{path: "src/cfg", want: ".ssh/config"},
			{path: "src/main.go", want: "src/main.go"}, // again, from the cache
			{path: "src/new.go", err: fs.ErrNotExist},
			{path: "nodir/new.go", err: fs.ErrNotExist},
			{path: "src/dangling", err: fs.ErrNotExist},
			{path: "src/out", err: errOutside},
			{path: "outdir/secret", err: errOutside},
		} {
			got, err := resolve(tc.path)
			switch {
			case tc.err == nil && (err != nil || got != tc.want):
				t.Errorf("root %s: resolve(%q) = %q, %v; want %q", rootPath, tc.path, got, err, tc.want)
			case tc.err == errOutside && (err == nil || errors.Is(err, fs.ErrNotExist)):
				t.Errorf("root %s: resolve(%q) = %q, %v; want an error (outside the root)", rootPath, tc.path, got, err)
			case tc.err == fs.ErrNotExist && !errors.Is(err, fs.ErrNotExist):
				t.Errorf("root %s: resolve(%q) = %q, %v; want fs.ErrNotExist", rootPath, tc.path, got, err)
			}
		}
	}
}

var errOutside = errors.New("outside")
