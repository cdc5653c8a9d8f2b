package testutil

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestWriteTreeAndTree(t *testing.T) {
	dir := t.TempDir()
	WriteTree(t, dir, map[string]File{
		"a.txt":     {Content: "a\n"},
		"bin/run":   {Content: "#!/bin/sh\n", Mode: 0o755},
		"x/y/z.txt": {Content: "z"},
	})
	WriteFile(t, dir, "x/w.txt", "w\n")
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	got := Tree(t, dir)
	want := map[string]string{
		".":         got["."], // the temporary directory's own mode
		"a.txt":     `file -rw-r--r-- "a\n"`,
		"bin":       "dir drwxr-xr-x",
		"bin/run":   `file -rwxr-xr-x "#!/bin/sh\n"`,
		"link":      "link a.txt",
		"x":         "dir drwxr-xr-x",
		"x/w.txt":   `file -rw-r--r-- "w\n"`,
		"x/y":       "dir drwxr-xr-x",
		"x/y/z.txt": `file -rw-r--r-- "z"`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Tree = %q\nwant %q", got, want)
	}
}

func TestNewRepo(t *testing.T) {
	dir := NewRepo(t)
	if canon, err := filepath.EvalSymlinks(dir); err != nil || canon != dir {
		t.Errorf("NewRepo = %q, canonical %q %v", dir, canon, err)
	}
	if got := Git(t, dir, "config", "user.email"); got != "test@example.com\n" {
		t.Errorf("user.email = %q", got)
	}
	WriteFile(t, dir, "a.txt", "a\n")
	Git(t, dir, "add", "-A")
	Git(t, dir, "commit", "-q", "-m", "first")
	if got := Git(t, dir, "log", "--format=%s"); got != "first\n" {
		t.Errorf("log = %q", got)
	}
	for _, kv := range GitEnv() {
		if strings.HasPrefix(kv, "GIT_") && kv != "GIT_CONFIG_NOSYSTEM=1" && kv != "GIT_CONFIG_GLOBAL="+os.DevNull {
			t.Errorf("GitEnv keeps %s", kv)
		}
	}
}

// TestGrepTreeRecipe pins the recipe: benchmark results are comparable
// only between identical trees. A change to it must bump grepTreeVersion
// (and these sums).
func TestGrepTreeRecipe(t *testing.T) {
	for _, tt := range []struct {
		noLiteral bool
		want      string
	}{
		{false, "5eea96493a7a27437916e69f9ee5bfbf5a78dcd93c3190c1c4e07b48a9fea3f3"},
		{true, "bc13c00dae663ba307c009ff398c870baa032b0af9fd1e77f95173b53bf1d859"},
	} {
		tree := t.TempDir()
		if err := writeGrepTree(tree, 1000, tt.noLiteral); err != nil {
			t.Fatal(err)
		}
		if got := treeSum(t, tree); got != tt.want {
			t.Errorf("noLiteral %v: tree sum %s, want %s", tt.noLiteral, got, tt.want)
		}
	}
}

// treeSum hashes the paths and contents of the files under dir.
func treeSum(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h.Write([]byte(filepath.ToSlash(rel) + "\x00"))
		h.Write(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestPatchBench(t *testing.T) {
	pb := NewPatchBench("p/")
	if len(pb.Files) != 200 || strings.Count(pb.Codex, "\n@@\n") != 1000 || strings.Count(pb.Unified, "\n@@ -") != 1000 {
		t.Fatalf("%d files, %d and %d hunks", len(pb.Files), strings.Count(pb.Codex, "\n@@\n"), strings.Count(pb.Unified, "\n@@ -"))
	}
	if _, ok := pb.Files["p/pkg00/file000.go"]; !ok {
		t.Error("no p/pkg00/file000.go")
	}
}

func TestClock(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := NewClock(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now = %v, want %v", got, start)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			c.Advance(time.Second)
			_ = c.Now()
		})
	}
	wg.Wait()
	if got, want := c.Now(), start.Add(8*time.Second); !got.Equal(want) {
		t.Fatalf("after 8 concurrent Advance(1s): %v, want %v", got, want)
	}
	c.Set(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("after Set: %v, want %v", got, start)
	}
}

func TestHoldsSecret(t *testing.T) {
	const marker = "SECRET_MARKER_15"
	for pre := range 7 {
		b := append([]byte("xxxxxxx"[:pre]), marker+"-tail"...)
		j, _ := json.Marshal(b) // a []byte field: base64 in JSON
		for _, enc := range [][]byte{b, j, []byte(base64.URLEncoding.EncodeToString(b)), []byte(hex.EncodeToString(b))} {
			if !HoldsSecret(enc, marker) {
				t.Errorf("%d bytes before: %s not found", pre, enc)
			}
		}
	}
	if HoldsSecret([]byte("SECRET_MARKER_1 and 5"), marker) {
		t.Error("a near miss was found")
	}
}
