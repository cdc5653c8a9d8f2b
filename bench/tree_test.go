package bench

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// The grep tree follows internal/search's benchmark recipe (100 top
// directories × 10 × 100 files of 10-20 lines, a .gitignore, a .git
// directory and ignored files holding the literal too) scaled to n files,
// so that the ratios here and there are comparable. It is generated once
// under os.TempDir() and kept between runs.
const (
	treeVersion  = "v1"
	treeLiteral  = "XYZZY_PLANTED_LITERAL"
	treeRegex    = `plantedHandler_\w+\(\d+\)`
	treeSubDirs  = 10
	treeFilesDir = 100
)

// rgArgs makes ripgrep walk like the search package (see its package
// documentation).
var rgArgs = []string{
	"--no-config", "--hidden", "--no-require-git", "--no-ignore-global", "--no-ignore-dot", "--no-ignore-parent",
	"--glob", "!.git", "--line-number", "--no-heading", "--color", "never",
}

var treeWords = strings.Fields(`func return if else for range var const type struct interface map string int error nil
	ctx err value result config handler request response buffer index count name path file open close read write
	Parse Format Encode Decode Validate Process Handle Serve Start Stop New Get Set Update Delete List Find`)

var treeMu sync.Mutex

// grepTree returns a generated tree of about n files (a multiple of 1,000).
func grepTree(n int) (string, error) {
	treeMu.Lock()
	defer treeMu.Unlock()
	top := filepath.Join(os.TempDir(), fmt.Sprintf("devspace-bench-tree-%s-%d", treeVersion, n))
	tree := filepath.Join(top, "tree")
	if _, err := os.Stat(filepath.Join(top, "complete")); err == nil {
		return tree, nil
	}
	if err := os.RemoveAll(top); err != nil {
		return "", err
	}
	extra := map[string]string{
		".gitignore":        "build/\n*.log\n",
		".git/HEAD":         "ref: refs/heads/main\n" + treeLiteral + "\n",
		".git/info/exclude": "scratch/\n",
		"build/out.go":      treeLiteral + "\nplantedHandler_build(1)\n",
		"debug.log":         treeLiteral + "\n",
		"scratch/x.go":      treeLiteral + "\n",
		".github/ci.yml":    "name: " + treeLiteral + "\n",
	}
	for name, content := range extra {
		p := filepath.Join(tree, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	topDirs := max(1, n/(treeSubDirs*treeFilesDir))
	var wg sync.WaitGroup
	errs := make(chan error, topDirs)
	sem := make(chan struct{}, 4)
	for d := range topDirs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := writeTreeDir(tree, d); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return "", err
	}
	return tree, os.WriteFile(filepath.Join(top, "complete"), nil, 0o644)
}

func writeTreeDir(tree string, d int) error {
	rng := rand.New(rand.NewPCG(uint64(d), 42))
	exts := []string{".go", ".ts", ".py", ".md", ".rs"}
	var buf bytes.Buffer
	for s := range treeSubDirs {
		dir := filepath.Join(tree, fmt.Sprintf("pkg%03d", d), fmt.Sprintf("mod%d", s))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for f := range treeFilesDir {
			n := (d*treeSubDirs+s)*treeFilesDir + f
			buf.Reset()
			lines := 10 + rng.IntN(11)
			plantAt := rng.IntN(lines)
			for l := range lines {
				buf.WriteString(strings.Repeat("\t", rng.IntN(3)))
				for w := range 3 + rng.IntN(6) {
					if w > 0 {
						buf.WriteByte(' ')
					}
					buf.WriteString(treeWords[rng.IntN(len(treeWords))])
				}
				if rng.IntN(4) == 0 {
					fmt.Fprintf(&buf, "(%d)", rng.IntN(1000))
				}
				if l == plantAt {
					if n%997 == 0 {
						buf.WriteString(" // " + treeLiteral)
					}
					if n%1009 == 0 {
						fmt.Fprintf(&buf, " plantedHandler_%s(%d)", treeWords[rng.IntN(len(treeWords))], rng.IntN(100))
					}
				}
				buf.WriteByte('\n')
			}
			name := fmt.Sprintf("file%03d%s", f, exts[f%len(exts)])
			if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// patchTree is 200 files of 100 lines and two equivalent patches making
// five one-line changes (plus one added line) in each: 1,000 hunks. It is
// internal/patch's benchmark recipe.
type patchTree struct {
	files   map[string]string
	codex   string
	unified string
}

func newPatchTree(prefix string) *patchTree {
	const nFiles, nLines = 200, 100
	changed := []int{10, 30, 50, 70, 90}
	pt := &patchTree{files: map[string]string{}}
	var codex, unified strings.Builder
	codex.WriteString("*** Begin Patch\n")
	for f := range nFiles {
		name := fmt.Sprintf("%spkg%02d/file%03d.go", prefix, f%10, f)
		lines := make([]string, nLines)
		for i := range lines {
			lines[i] = fmt.Sprintf("\tfile%03d_line%03d := compute(%d, %q) // lorem ipsum dolor", f, i+1, i, name)
		}
		pt.files[name] = strings.Join(lines, "\n") + "\n"
		fmt.Fprintf(&codex, "*** Update File: %s\n", name)
		fmt.Fprintf(&unified, "diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n", name, name, name, name)
		for j, l := range changed {
			ctxBefore, old, ctxAfter := lines[l-4:l-1], lines[l-1], lines[l:l+3]
			repl := []string{strings.Replace(old, "compute", "computeFast", 1), "\t_ = 0 // added"}
			fmt.Fprintf(&unified, "@@ -%d,7 +%d,8 @@\n", l-3, l-3+j)
			codex.WriteString("@@\n")
			for _, w := range []*strings.Builder{&codex, &unified} {
				for _, c := range ctxBefore {
					w.WriteString(" " + c + "\n")
				}
				w.WriteString("-" + old + "\n")
				for _, r := range repl {
					w.WriteString("+" + r + "\n")
				}
				for _, c := range ctxAfter {
					w.WriteString(" " + c + "\n")
				}
			}
		}
	}
	codex.WriteString("*** End Patch\n")
	pt.codex, pt.unified = codex.String(), unified.String()
	return pt
}

// reset writes the tree's files into dir. A non-zero salt replaces each
// file's first line (which no hunk touches) so that every round patches
// contents never seen before, as a real session does: nothing can be
// deduplicated against an earlier round. It returns each file's
// contentHash.
func (pt *patchTree) reset(dir string, salt int) (map[string]any, error) {
	hashes := map[string]any{}
	for name, content := range pt.files {
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
