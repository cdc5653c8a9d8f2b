package search

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/testutil"
)

const secretMarker = "SECRET-MARKER-91c2"

// secretTree is a Project whose secrets are reachable through innocent
// names: a file link to .env, a directory link to .kube, a link to .git,
// and a .GIT directory.
func secretTree(t *testing.T) string {
	return makeTree(t, map[string]string{
		".env":          "TOKEN=" + secretMarker + "\n",
		".kube/config":  "token: " + secretMarker + "\n",
		".ssh/id_rsa":   secretMarker + "\n",
		".git/config":   "[core]\n\tfsmonitor = " + secretMarker + "\n",
		".GIT/x":        secretMarker + "\n",
		"sub/.git":      "gitdir: " + secretMarker + "\n",
		"lnk_env":       "->.env",
		"zzz":           "->.kube",
		"keys":          "->.ssh",
		"g":             "->.git",
		"src/main.go":   "package main // needle\n",
		"src/up":        "->..",
		"src/deep_link": "->../zzz/config",
	})
}

// TestSecretsThroughLinks is the attack list for inspect: no
// secret byte in any result of grep (with and without path), ls or glob,
// whatever the link.
func TestSecretsThroughLinks(t *testing.T) {
	dir := secretTree(t)
	var ops []Op
	for _, p := range []string{"", ".", "lnk_env", "zzz", "keys", "g", "src/up", "src/up/zzz", "src/deep_link", ".GIT", "src"} {
		ops = append(ops,
			Op{Kind: KindGrep, Path: p, Pattern: secretMarker},
			Op{Kind: KindGrep, Path: p, Pattern: secretMarker, IncludeIgnored: true},
			Op{Kind: KindGrep, Path: p, Pattern: "token", IgnoreCase: true, Context: 3},
			Op{Kind: KindLs, Path: p, Depth: 5},
			Op{Kind: KindGlob, Path: p, Pattern: "**"},
			Op{Kind: KindGlob, Path: p, Pattern: "**/config"},
		)
	}
	ops = append(ops, Op{Kind: KindGlob, Pattern: "zzz/*"}, Op{Kind: KindGlob, Pattern: "src/up/zzz/*"}, Op{Kind: KindGlob, Pattern: "g/*"})
	root := openRoot(t, dir)
	s := New(Limits{MaxOps: len(ops)})
	res, err := s.Run(context.Background(), root, ops, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		out := fmt.Sprintf("%+v", r)
		if strings.Contains(out, secretMarker) {
			t.Errorf("op %+v leaked a secret: %s", ops[i], out)
		}
		for _, e := range r.Entries {
			if strings.HasSuffix(e.Path, "config") && !strings.HasPrefix(e.Path, "src") || strings.Contains(strings.ToLower(e.Path), ".git/") {
				t.Errorf("op %+v listed %q", ops[i], e.Path)
			}
		}
	}
	// The same ops with allowSensitive may show .env and .kube, never
	// anything of a repository's metadata.
	res, err = s.Run(context.Background(), root, ops, true)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		for _, m := range r.Matches {
			if strings.Contains(m.Text, "fsmonitor") || strings.Contains(strings.ToLower(m.Path), ".git") {
				t.Errorf("op %+v showed repository metadata: %+v", ops[i], m)
			}
		}
	}
	// g, .GIT and anything below them are refused as repository metadata.
	for _, p := range []string{"g", ".GIT", "g/config", "src/up/.git"} {
		r := run(t, dir, Limits{}, Op{Kind: KindLs, Path: p}, true)
		if errCode(r) != CodePathDenied {
			t.Errorf("ls %q: %+v, want path_denied", p, r)
		}
	}
}

// TestGrepSwapRace swaps a directory and a link to a sensitive directory
// in a tight loop while whole-tree greps and explicit-path greps run: no
// result may hold the secret (17 of 24 runs leaked it before the walk
// stopped following links).
func TestGrepSwapRace(t *testing.T) {
	dir := makeTree(t, map[string]string{
		".kube/config": "token: " + secretMarker + "\n",
		"plain/config": "token: public\n",
		"link":         "->.kube",
		"src/a.go":     "token\n",
	})
	root := openRoot(t, dir)
	if err := os.Rename(filepath.Join(dir, "plain"), filepath.Join(dir, "zzz")); err != nil {
		t.Fatal(err)
	}
	defer testutil.SwapDirAndLink(dir, "zzz", "plain", "link")()
	s := New(Limits{})
	n := 200
	if testing.Short() {
		n = 50
	}
	matched := 0
	for range n {
		res, err := s.Run(context.Background(), root, []Op{
			{Kind: KindGrep, Pattern: "token"},
			{Kind: KindGrep, Path: "zzz", Pattern: "token"},
			{Kind: KindGrep, Path: "zzz/config", Pattern: "token"},
			{Kind: KindLs, Path: "zzz"},
		}, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if out := fmt.Sprintf("%+v", r); strings.Contains(out, secretMarker) {
				t.Fatalf("a grep under a swap returned the secret: %s", out)
			}
			matched += len(r.Matches)
		}
	}
	if matched == 0 {
		t.Fatal("no grep matched anything: the race test proves nothing")
	}
}
