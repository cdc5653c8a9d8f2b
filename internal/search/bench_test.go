package search

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The benchmark tree is generated once under os.TempDir() and kept between
// runs; bump benchTreeVersion when its recipe changes.
const (
	benchTreeVersion = "v1"
	benchTopDirs     = 100
	benchSubDirs     = 10
	benchFilesPerDir = 100 // 100 × 10 × 100 = 100,000 files
	benchLiteral     = "XYZZY_PLANTED_LITERAL"
	benchRegex       = `plantedHandler_\w+\(\d+\)`
	benchRegexNoLit  = `[A-Z]{3}_[0-9]{4}_[a-z]+`
)

// rgArgs makes ripgrep walk like the search package: hidden files
// included, .gitignore (without a Git repository too) and
// .git/info/exclude honoured, no global or .ignore/.rgignore files, .git
// skipped, symlinks not followed.
var rgArgs = []string{
	"--no-config", "--hidden", "--no-require-git", "--no-ignore-global", "--no-ignore-dot", "--no-ignore-parent",
	"--glob", "!.git", "--line-number", "--no-heading", "--color", "never",
}

var (
	benchTreeOnce sync.Once
	benchTreeDir  string
	benchTreeErr  error
)

func benchTree(b *testing.B) string {
	benchTreeOnce.Do(func() { benchTreeDir, benchTreeErr = makeBenchTree() })
	if benchTreeErr != nil {
		b.Fatal(benchTreeErr)
	}
	return benchTreeDir
}

func makeBenchTree() (string, error) {
	top := filepath.Join(os.TempDir(), "devspace-search-bench-"+benchTreeVersion)
	tree := filepath.Join(top, "tree")
	if _, err := os.Stat(filepath.Join(top, "complete")); err == nil {
		return tree, nil
	}
	if err := os.RemoveAll(top); err != nil {
		return "", err
	}
	extra := map[string]string{
		".gitignore":        "build/\n*.log\n",
		".git/HEAD":         "ref: refs/heads/main\n" + benchLiteral + "\n",
		".git/info/exclude": "scratch/\n",
		"build/out.go":      benchLiteral + "\nplantedHandler_build(1)\n",
		"debug.log":         benchLiteral + "\n",
		"scratch/x.go":      benchLiteral + "\n",
		".github/ci.yml":    "name: " + benchLiteral + "\n",
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
	var wg sync.WaitGroup
	errs := make(chan error, benchTopDirs)
	sem := make(chan struct{}, 4)
	for d := range benchTopDirs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := writeBenchDir(tree, d); err != nil {
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

var benchWords = strings.Fields(`func return if else for range var const type struct interface map string int error nil
	ctx err value result config handler request response buffer index count name path file open close read write
	Parse Format Encode Decode Validate Process Handle Serve Start Stop New Get Set Update Delete List Find`)

func writeBenchDir(tree string, d int) error {
	rng := rand.New(rand.NewPCG(uint64(d), 42))
	exts := []string{".go", ".ts", ".py", ".md", ".rs"}
	var buf bytes.Buffer
	for s := range benchSubDirs {
		dir := filepath.Join(tree, fmt.Sprintf("pkg%03d", d), fmt.Sprintf("mod%d", s))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for f := range benchFilesPerDir {
			n := (d*benchSubDirs+s)*benchFilesPerDir + f
			buf.Reset()
			lines := 10 + rng.IntN(11)
			plantAt := rng.IntN(lines)
			for l := range lines {
				indent := strings.Repeat("\t", rng.IntN(3))
				buf.WriteString(indent)
				for w := range 3 + rng.IntN(6) {
					if w > 0 {
						buf.WriteByte(' ')
					}
					buf.WriteString(benchWords[rng.IntN(len(benchWords))])
				}
				if rng.IntN(4) == 0 {
					fmt.Fprintf(&buf, "(%d)", rng.IntN(1000))
				}
				if l == plantAt {
					if n%997 == 0 {
						buf.WriteString(" // " + benchLiteral)
					}
					if n%1009 == 0 {
						fmt.Fprintf(&buf, " plantedHandler_%s(%d)", benchWords[rng.IntN(len(benchWords))], rng.IntN(100))
					}
					if n%1013 == 0 {
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

// benchGrep compares our grep with ripgrep on the generated tree. Both
// must find the same number of matching lines.
func benchGrep(b *testing.B, pattern string, regex, ignoreCase bool) {
	tree := benchTree(b)
	rg, err := exec.LookPath("rg")
	if err != nil {
		b.Fatal("ripgrep (rg) is needed for the baseline: apt-get install ripgrep")
	}
	root, err := os.OpenRoot(tree)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	// The tree has a little over 100,000 entries: lift the walk limit so
	// that both tools search all of it.
	s := New(Limits{MaxEntries: 1 << 30, MaxMatches: 10_000})
	ops := []Op{{Kind: KindGrep, Pattern: pattern, Regex: regex, IgnoreCase: ignoreCase, Limit: 10_000}}
	ours := func() int {
		res, err := s.Run(context.Background(), root, ops, false)
		if err != nil {
			b.Fatal(err)
		}
		if r := res[0]; r.Error != nil || r.Truncated || r.WalkLimitHit {
			b.Fatalf("result: %+v", r.Error)
		}
		return len(res[0].Matches)
	}
	args := append([]string{}, rgArgs...)
	if !regex {
		args = append(args, "--fixed-strings")
	}
	if ignoreCase {
		args = append(args, "--ignore-case")
	}
	args = append(args, "--regexp", pattern, ".")
	theirs := func() int {
		cmd := exec.Command(rg, args...)
		cmd.Dir = tree
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("rg: %v", err)
		}
		return bytes.Count(out, []byte{'\n'})
	}
	want, got := theirs(), ours()
	if want != got || got == 0 {
		b.Fatalf("rg found %d matching lines, we found %d", want, got)
	}
	b.Run("devspace", func(b *testing.B) {
		for b.Loop() {
			ours()
		}
		b.ReportMetric(float64(got), "matches")
	})
	b.Run("rg", func(b *testing.B) {
		for b.Loop() {
			theirs()
		}
		b.ReportMetric(float64(want), "matches")
	})
}

func BenchmarkGrepLiteral(b *testing.B) { benchGrep(b, benchLiteral, false, false) }

func BenchmarkGrepRegex(b *testing.B) { benchGrep(b, benchRegex, true, false) }

// BenchmarkGrepRegexNoLiteral has no literal to prefilter with: every
// byte goes through Go's regexp engine.
func BenchmarkGrepRegexNoLiteral(b *testing.B) { benchGrep(b, benchRegexNoLit, true, false) }

// BenchmarkGrepIgnoreCase searches a lowered copy for the literal's
// case-safe part, then verifies candidate lines.
func BenchmarkGrepIgnoreCase(b *testing.B) { benchGrep(b, strings.ToLower(benchLiteral), false, true) }
