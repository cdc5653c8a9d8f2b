package project

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCleanRel(t *testing.T) {
	for in, want := range map[string]string{
		"": ".", ".": ".", "a/b": "a/b", "./a//b/": "a/b", "a/../b": "b", "a/./b": "a/b",
		"proj_evil/x": "proj_evil/x", "\u202eevil\u200b.txt": "\u202eevil\u200b.txt", `a\b`: `a\b`,
	} {
		got, err := CleanRel(in)
		if err != nil || got != want {
			t.Errorf("CleanRel(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, reason := range map[string]string{
		"/etc/passwd": ReasonAbsolute, `\x`: ReasonAbsolute, "C:/x": ReasonAbsolute,
		"..": ReasonParent, "../proj_evil/x": ReasonParent, "a/../../x": ReasonParent,
		"a\x00b": ReasonNUL, "a\xffb": ReasonInvalidUTF8, strings.Repeat("a", MaxPathBytes+1): ReasonTooLong,
	} {
		_, err := CleanRel(in)
		var pe *PathError
		if !errors.As(err, &pe) || pe.Reason != reason || !errors.Is(err, ErrPathDenied) {
			t.Errorf("CleanRel(%.40q) = %v; want %s", in, err, reason)
		}
	}
}

func TestClassifySymlinks(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "proj")
	os.MkdirAll(filepath.Join(root, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "secret"), []byte("outside"), 0o644)
	os.WriteFile(filepath.Join(root, "in.txt"), []byte("inside"), 0o644)
	os.Symlink("../secret", filepath.Join(root, "out"))
	os.Symlink("../missing", filepath.Join(root, "dangling-out"))
	os.Symlink(filepath.Join(root, "in.txt"), filepath.Join(root, "abs-in"))
	os.Symlink("in.txt", filepath.Join(root, "rel-in"))
	os.Symlink("../sub", filepath.Join(root, "sub", "loop"))
	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, name := range []string{"out", "dangling-out", "abs-in"} {
		_, err := r.ReadFile(name)
		if !errors.Is(Classify(err), ErrPathDenied) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Creating a new file through a link leading out is denied too.
	if err := r.WriteFile("dangling-out", []byte("x"), 0o644); !errors.Is(Classify(err), ErrPathDenied) {
		t.Errorf("write through dangling link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Fatal("a write escaped the root")
	}
	if b, err := r.ReadFile("rel-in"); err != nil || string(b) != "inside" {
		t.Errorf("inside link: %q %v", b, err)
	}
	if _, err := r.ReadFile("sub/loop/loop/loop/in.txt"); err != nil {
		t.Logf("cycle: %v", err) // bounded either way; must not hang
	}
}

func TestIsSensitive(t *testing.T) {
	for p, want := range map[string]bool{
		".env": true, "app/.env.local": true, ".env.example": false, "prod.env": true, "key.pem": true,
		"home/.ssh/config": true, "id_ed25519": true, "id_ed25519.pub": false, "gcp-service-account.json": true,
		".aws/credentials": true, "main.go": false, "README.md": false, ".docker/config.json": true, "config.json": false,
		"environment.go": false,
		// Names a case-insensitive filesystem folds onto sensitive ones.
		".\u017fsh/config": true, ".\u00dfh/config": true, "\u212aubeconfig": true, ".\u0130NV": false, "PROD.\u212aEY": true,
		".env.\u017fample": false, "caf\u00e9.go": false,
	} {
		if got := IsSensitive(p); got != want {
			t.Errorf("IsSensitive(%q) = %v, want %v", p, got, want)
		}
	}
}
