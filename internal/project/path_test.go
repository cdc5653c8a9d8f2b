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

// TestIsSensitiveOneVerdictPerName: two spellings that a case-insensitive
// filesystem takes for one name get one verdict. Linux casefold (ext4,
// f2fs) and APFS compare names under canonical decomposition and full
// case folding; HFS+ and Linux casefold also drop default-ignorable
// code points. NTFS and SMB upcase no non-ASCII letter
// to ASCII, so they add no pair. Look-alikes that no filesystem folds
// together keep their own verdict.
func TestIsSensitiveOneVerdictPerName(t *testing.T) {
	for _, tt := range []struct{ name, same, why string }{
		{".ssh/config", ".\u017fsh/config", "long s folds to s"},
		{".ssh/config", ".\u00dfh/config", "sharp s folds to ss (full folding)"},
		{".ssh/config", ".\u1e9eh/config", "capital sharp s folds to ss (full folding)"},
		{"kubeconfig", "\u212aUBECONFIG", "Kelvin sign folds to k"},
		{".ssh/config", ".s\u200dsh/config", "zero-width joiner is ignored"},
		{".env", ".e\u00adnv", "soft hyphen is ignored"},
		{"prod.env", "prod.env\ufe0f", "variation selector is ignored"},
		{"id_rsa\u0300", "id_rs\u00e0", "precomposed a-grave is a + combining grave"},
		{"service-account\u0308.json", "service-accoun\u1e97.json", "t-diaeresis is t + combining diaeresis"},
	} {
		if a, b := IsSensitive(tt.name), IsSensitive(tt.same); !a || !b {
			t.Errorf("%s: IsSensitive(%q) = %v, IsSensitive(%q) = %v, want both true", tt.why, tt.name, a, tt.same, b)
		}
	}
	for _, name := range []string{".\u0455sh/config", "\u1d35d_rsa", ".\u0435nv", "caf\u00e9.go", "\u0130d_rsa"} {
		if IsSensitive(name) {
			t.Errorf("IsSensitive(%q) = true: no filesystem folds it onto a sensitive name", name)
		}
	}
}
