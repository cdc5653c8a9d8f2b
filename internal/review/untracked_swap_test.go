package review

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReadRegularRefusesSwappedPath: git listed d/x as an untracked file;
// if d is a link by the time its content is read (here to .kube, whose x
// is a secret), nothing is read under the listed name.
func TestReadRegularRefusesSwappedPath(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".kube"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".kube", "x"), []byte("SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".kube", filepath.Join(dir, "d")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plain"), []byte("public"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if data, _, err := readRegular(root, "d/x", 100); err == nil {
		t.Fatalf("read %q through a swapped-in link", data)
	}
	if data, _, err := readRegular(root, "plain", 100); err != nil || string(data) != "public" {
		t.Fatalf("plain file: %q, %v", data, err)
	}
}
