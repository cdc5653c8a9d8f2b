package search

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/testutil"
)

// benchTree is the 100,000-file tree (100 × 10 × 100 files), with
// matches for testutil.GrepRegexNoLiteral too.
func benchTree(b *testing.B) string {
	tree, err := testutil.GrepTree("devspace-search-bench", 100_000, true)
	if err != nil {
		b.Fatal(err)
	}
	return tree
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
	args := testutil.RipgrepArgs()
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

func BenchmarkGrepLiteral(b *testing.B) { benchGrep(b, testutil.GrepLiteral, false, false) }

func BenchmarkGrepRegex(b *testing.B) { benchGrep(b, testutil.GrepRegex, true, false) }

// BenchmarkGrepRegexNoLiteral has no literal to prefilter with: every
// byte goes through Go's regexp engine.
func BenchmarkGrepRegexNoLiteral(b *testing.B) {
	benchGrep(b, testutil.GrepRegexNoLiteral, true, false)
}

// BenchmarkGrepIgnoreCase searches a lowered copy for the literal's
// case-safe part, then verifies candidate lines.
func BenchmarkGrepIgnoreCase(b *testing.B) {
	benchGrep(b, strings.ToLower(testutil.GrepLiteral), false, true)
}

// benchWalk runs one ls or glob operation over the generated tree, with
// the limits lifted so that the whole walk is measured.
func benchWalk(b *testing.B, op Op, want int) {
	root, err := os.OpenRoot(benchTree(b))
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	s := New(Limits{MaxEntries: 1 << 30, MaxListEntries: 1 << 20, MaxOutputBytes: 1 << 30})
	op.Limit = 1 << 20
	for b.Loop() {
		res, err := s.Run(context.Background(), root, []Op{op}, false)
		if err != nil {
			b.Fatal(err)
		}
		if r := res[0]; r.Error != nil || r.Truncated || r.WalkLimitHit || len(r.Entries) < want {
			b.Fatalf("result: %+v, %d entries", r.Error, len(r.Entries))
		}
	}
}

// BenchmarkLsDepth2 lists the 100 top directories and their 1,000
// subdirectories: most directories are listed without being entered.
func BenchmarkLsDepth2(b *testing.B) { benchWalk(b, Op{Kind: KindLs, Depth: 2}, 1100) }

// BenchmarkGlobTree enters every directory of the tree and matches each
// of its 100,000 files.
func BenchmarkGlobTree(b *testing.B) {
	benchWalk(b, Op{Kind: KindGlob, Pattern: "**/file000.go"}, 1000)
}
