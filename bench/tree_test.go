package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/devspace-dev/devspace/internal/testutil"
)

// grepTree returns the generated grep tree of about n files (a multiple of
// 1,000): internal/search's benchmark recipe scaled to n files, so that
// the ratios here and there are comparable, without the targets of its
// regex without a literal, which nothing here searches for.
func grepTree(n int) (string, error) {
	return testutil.GrepTree("devspace-bench-tree", n, false)
}

// resetPatchTree writes pt's files into dir. A non-zero salt replaces each
// file's first line (which no hunk touches) so that every round patches
// contents never seen before, as a real session does: nothing can be
// deduplicated against an earlier round. It returns each file's
// contentHash.
func resetPatchTree(pt *testutil.PatchBench, dir string, salt int) (map[string]any, error) {
	hashes := map[string]any{}
	for name, content := range pt.Files {
		if salt != 0 {
			_, rest, _ := strings.Cut(content, "\n")
			content = fmt.Sprintf("// round %d of %s\n", salt, name) + rest
		}
		hashes[name] = "sha256:" + hex.EncodeToString(sha256sum(content))
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	return hashes, nil
}

func sha256sum(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}
