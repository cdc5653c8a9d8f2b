package testutil

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// What GrepTree plants, for the grep benchmarks to search.
const (
	GrepLiteral        = "XYZZY_PLANTED_LITERAL"
	GrepRegex          = `plantedHandler_\w+\(\d+\)`
	GrepRegexNoLiteral = `[A-Z]{3}_[0-9]{4}_[a-z]+` // planted with noLiteral only
)

// The grep tree's recipe: bump grepTreeVersion when it changes, so that
// no tree kept from an earlier run is taken for a new one.
const (
	grepTreeVersion = "v1"
	grepSubDirs     = 10
	grepFilesPerDir = 100
)

var grepWords = strings.Fields(`func return if else for range var const type struct interface map string int error nil
	ctx err value result config handler request response buffer index count name path file open close read write
	Parse Format Encode Decode Validate Process Handle Serve Start Stop New Get Set Update Delete List Find`)

var grepTreeMu sync.Mutex

// GrepTree returns the root of a generated tree of about files files (a
// multiple of 1,000): files/1,000 top directories × 10 × 100 files of
// 10-20 lines of code-like words, GrepLiteral and GrepRegex planted in
// about one file in a thousand each, plus a .gitignore, a .git directory
// and ignored files holding the literal too. With noLiteral, about one
// file in a thousand also gets a match for GrepRegexNoLiteral; as that
// draws from the same random numbers, the rest of its top directory
// differs too.
//
// The tree is generated once under os.TempDir(), in a directory named
// from name, the recipe's version and files, and kept between runs: give
// trees with and without noLiteral different names.
func GrepTree(name string, files int, noLiteral bool) (string, error) {
	grepTreeMu.Lock()
	defer grepTreeMu.Unlock()
	top := filepath.Join(os.TempDir(), fmt.Sprintf("%s-%s-%d", name, grepTreeVersion, files))
	tree := filepath.Join(top, "tree")
	if _, err := os.Stat(filepath.Join(top, "complete")); err == nil {
		return tree, nil
	}
	if err := os.RemoveAll(top); err != nil {
		return "", err
	}
	if err := writeGrepTree(tree, files, noLiteral); err != nil {
		return "", err
	}
	return tree, os.WriteFile(filepath.Join(top, "complete"), nil, 0o644)
}

// writeGrepTree writes GrepTree's files into tree.
func writeGrepTree(tree string, files int, noLiteral bool) error {
	extra := map[string]string{
		".gitignore":        "build/\n*.log\n",
		".git/HEAD":         "ref: refs/heads/main\n" + GrepLiteral + "\n",
		".git/info/exclude": "scratch/\n",
		"build/out.go":      GrepLiteral + "\nplantedHandler_build(1)\n",
		"debug.log":         GrepLiteral + "\n",
		"scratch/x.go":      GrepLiteral + "\n",
		".github/ci.yml":    "name: " + GrepLiteral + "\n",
	}
	for name, content := range extra {
		p := filepath.Join(tree, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	topDirs := max(1, files/(grepSubDirs*grepFilesPerDir))
	var wg sync.WaitGroup
	errs := make(chan error, topDirs)
	sem := make(chan struct{}, 4)
	for d := range topDirs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := writeGrepDir(tree, d, noLiteral); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// writeGrepDir writes top directory d, from its own random numbers.
func writeGrepDir(tree string, d int, noLiteral bool) error {
	rng := rand.New(rand.NewPCG(uint64(d), 42))
	exts := []string{".go", ".ts", ".py", ".md", ".rs"}
	var buf bytes.Buffer
	for s := range grepSubDirs {
		dir := filepath.Join(tree, fmt.Sprintf("pkg%03d", d), fmt.Sprintf("mod%d", s))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for f := range grepFilesPerDir {
			n := (d*grepSubDirs+s)*grepFilesPerDir + f
			buf.Reset()
			lines := 10 + rng.IntN(11)
			plantAt := rng.IntN(lines)
			for l := range lines {
				buf.WriteString(strings.Repeat("\t", rng.IntN(3)))
				for w := range 3 + rng.IntN(6) {
					if w > 0 {
						buf.WriteByte(' ')
					}
					buf.WriteString(grepWords[rng.IntN(len(grepWords))])
				}
				if rng.IntN(4) == 0 {
					fmt.Fprintf(&buf, "(%d)", rng.IntN(1000))
				}
				if l == plantAt {
					if n%997 == 0 {
						buf.WriteString(" // " + GrepLiteral)
					}
					if n%1009 == 0 {
						fmt.Fprintf(&buf, " plantedHandler_%s(%d)", grepWords[rng.IntN(len(grepWords))], rng.IntN(100))
					}
					if noLiteral && n%1013 == 0 {
						fmt.Fprintf(&buf, " ABC_%04d_xyz", rng.IntN(10000))
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

// RipgrepArgs makes ripgrep walk like the search package: hidden files
// included, .gitignore (without a Git repository too) and
// .git/info/exclude honoured, no global or .ignore/.rgignore files, .git
// skipped, symlinks not followed. The caller adds the pattern.
func RipgrepArgs() []string {
	return []string{
		"--no-config", "--hidden", "--no-require-git", "--no-ignore-global", "--no-ignore-dot", "--no-ignore-parent",
		"--glob", "!.git", "--line-number", "--no-heading", "--color", "never",
	}
}

// PatchBench is 200 files of 100 lines and two equivalent patches making
// five one-line changes (plus one added line) in each: 1,000 hunks.
type PatchBench struct {
	Files   map[string]string // content by slash path
	Codex   string            // the patch in the Codex format
	Unified string            // the same changes as a unified diff
}

// NewPatchBench returns the patch benchmark, every file's path starting
// with prefix.
func NewPatchBench(prefix string) *PatchBench {
	const nFiles, nLines = 200, 100
	changed := []int{10, 30, 50, 70, 90} // 1-based lines replaced
	pb := &PatchBench{Files: map[string]string{}}
	var codex, unified strings.Builder
	codex.WriteString("*** Begin Patch\n")
	for f := range nFiles {
		name := fmt.Sprintf("%spkg%02d/file%03d.go", prefix, f%10, f)
		lines := make([]string, nLines)
		for i := range lines {
			lines[i] = fmt.Sprintf("\tfile%03d_line%03d := compute(%d, %q) // lorem ipsum dolor", f, i+1, i, name)
		}
		pb.Files[name] = strings.Join(lines, "\n") + "\n"
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
	pb.Codex, pb.Unified = codex.String(), unified.String()
	return pb
}
