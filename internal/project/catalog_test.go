package project

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRefsAndFingerprints(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	os.Mkdir(a, 0o755)
	key := []byte("0123456789abcdef0123456789abcdef")
	c, err := NewCatalog(key, []Spec{{Label: "a", Path: a}})
	if err != nil {
		t.Fatal(err)
	}
	root := c.Roots()[0]
	if !strings.HasPrefix(root.Ref, RefPrefix) || strings.Contains(root.Ref, "a/") || root.Ref != Ref(key, a) {
		t.Fatalf("ref %q", root.Ref)
	}
	if Ref([]byte("another key another key another k"), a) == root.Ref {
		t.Fatal("ref does not depend on the key")
	}
	if _, ok := c.Lookup(root.Ref); !ok {
		t.Fatal("lookup failed")
	}
	if _, ok := c.Lookup("prj_unknown"); ok {
		t.Fatal("unknown ref found")
	}
	fp1, err := root.Fingerprint(key)
	if err != nil {
		t.Fatal(err)
	}
	// Replace the directory: same path, new inode.
	os.Rename(a, filepath.Join(dir, "old"))
	os.Mkdir(a, 0o755)
	fp2, err := root.Fingerprint(key)
	if err != nil || fp1 == fp2 {
		t.Fatalf("fingerprint unchanged after replacing the directory: %v", err)
	}
	os.Remove(a)
	if _, err := root.Fingerprint(key); err == nil {
		t.Fatal("fingerprint of a missing root")
	}
}
