package patch

import (
	"fmt"
	"strings"
)

// maxDiffEdits bounds the Myers search; past it the differing middle is
// shown as one removal and one addition, which is still a correct diff.
const maxDiffEdits = 1024

type diffOp struct {
	kind byte // ' ', '-', '+'
	line string
	a, b int // 0-based line numbers in old and new (of the line, or where it goes)
}

// diffLines returns an edit script turning a into b.
func diffLines(a, b []string) []diffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ops := make([]diffOp, 0, len(a)+len(b)-pre-suf)
	for i := 0; i < pre; i++ {
		ops = append(ops, diffOp{' ', a[i], i, i})
	}
	ops = myers(ops, a[pre:len(a)-suf], b[pre:len(b)-suf], pre, pre)
	for i := 0; i < suf; i++ {
		ai, bi := len(a)-suf+i, len(b)-suf+i
		ops = append(ops, diffOp{' ', a[ai], ai, bi})
	}
	return ops
}

// myers appends the shortest edit script from a to b (offset by ao, bo)
// to ops, or a plain replacement when it needs more than maxDiffEdits.
func myers(ops []diffOp, a, b []string, ao, bo int) []diffOp {
	n, m := len(a), len(b)
	limit := min(n+m, maxDiffEdits)
	off := limit + 1
	v := make([]int, 2*limit+3)
	var trace [][]int // trace[d]: v[off-d-1 : off+d+2] before step d
	found := false
	for d := 0; d <= limit && !found; d++ {
		trace = append(trace, append([]int(nil), v[off-d-1:off+d+2]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = true
				break
			}
		}
	}
	if !found {
		for i, l := range a {
			ops = append(ops, diffOp{'-', l, ao + i, bo})
		}
		for i, l := range b {
			ops = append(ops, diffOp{'+', l, ao + n, bo + i})
		}
		return ops
	}
	// Walk back from (n, m), collecting the script in reverse.
	var rev []diffOp
	x, y := n, m
	for d := len(trace) - 1; d >= 0; d-- {
		tv := trace[d]
		at := func(k int) int { return tv[k+d+1] }
		k := x - y
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := 0
		if d > 0 {
			px = at(pk)
		}
		py := px - pk
		for x > px && y > py {
			x, y = x-1, y-1
			rev = append(rev, diffOp{' ', a[x], ao + x, bo + y})
		}
		if d > 0 {
			if x == px {
				rev = append(rev, diffOp{'+', b[py], ao + px, bo + py})
			} else {
				rev = append(rev, diffOp{'-', a[px], ao + px, bo + py})
			}
		}
		x, y = px, py
	}
	for i := len(rev) - 1; i >= 0; i-- {
		ops = append(ops, rev[i])
	}
	return ops
}

// unifiedDiff writes the hunks turning a into b with ctx lines of
// context. Lines keep their terminators; a last line without one gets
// "\ No newline at end of file".
func unifiedDiff(w *strings.Builder, a, b []string, ctx int) {
	ops := diffLines(a, b)
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// A hunk spans from ctx lines before this change to ctx lines
		// after the last change that is at most 2*ctx lines from the next.
		start := max(0, i-ctx)
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j
			} else if j-end > 2*ctx {
				break
			}
		}
		end = min(len(ops), end+ctx+1)
		writeHunk(w, ops[start:end])
		i = end
	}
}

func writeHunk(w *strings.Builder, ops []diffOp) {
	aStart, bStart, aLen, bLen := ops[0].a, ops[0].b, 0, 0
	for _, op := range ops {
		if op.kind != '+' {
			aLen++
		}
		if op.kind != '-' {
			bLen++
		}
	}
	fmt.Fprintf(w, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
	for _, op := range ops {
		w.WriteByte(op.kind)
		line := strings.TrimSuffix(op.line, "\n")
		w.WriteString(strings.TrimSuffix(line, "\r"))
		w.WriteByte('\n')
		if !strings.HasSuffix(op.line, "\n") {
			w.WriteString("\\ No newline at end of file\n")
		}
	}
}

func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}
