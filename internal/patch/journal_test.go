package patch

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/testutil"
)

func TestRenderDiff(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteTree(t, dir, map[string]testutil.File{
		"a.txt":    {Content: "one\ntwo\nthree\n"},
		"gone.txt": {Content: "bye"},
		"old.txt":  {Content: "x\n"},
		"crlf.txt": {Content: "p\r\nq\r\n"},
	})
	text := `*** Begin Patch
*** Update File: a.txt
@@
 one
-two
+TWO
 three
*** Add File: new.txt
+hello
*** Delete File: gone.txt
*** Update File: old.txt
*** Move to: new/name.txt
@@
-x
+y
*** Update File: crlf.txt
@@
-q
+r
*** End Patch`
	res, err := apply(t, dir, text, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := `--- a/a.txt
+++ b/a.txt
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
--- /dev/null
+++ b/new.txt
@@ -0,0 +1 @@
+hello
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
\ No newline at end of file
rename from old.txt
rename to new/name.txt
--- a/old.txt
+++ b/new/name.txt
@@ -1 +1 @@
-x
+y
--- a/crlf.txt
+++ b/crlf.txt
@@ -1,2 +1,2 @@
 p
-q
+r
`
	if got := RenderDiff(res); got != want {
		t.Errorf("RenderDiff:\n%s\nwant:\n%s", got, want)
	}
}

func TestDiffLinesReconstructs(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	gen := func() []string {
		n := rng.Intn(40)
		out := make([]string, n)
		for i := range out {
			out[i] = string(rune('a'+rng.Intn(4))) + "\n"
		}
		return out
	}
	for iter := 0; iter < 2000; iter++ {
		a, b := gen(), gen()
		var gotA, gotB []string
		for _, op := range diffLines(a, b) {
			if op.kind != '+' {
				gotA = append(gotA, op.line)
			}
			if op.kind != '-' {
				gotB = append(gotB, op.line)
			}
		}
		if strings.Join(gotA, "") != strings.Join(a, "") || strings.Join(gotB, "") != strings.Join(b, "") {
			t.Fatalf("edit script does not reproduce the inputs:\na=%q\nb=%q", a, b)
		}
	}
}

func TestUnifiedDiffHunks(t *testing.T) {
	var a []string
	for i := 1; i <= 20; i++ {
		a = append(a, itoa(i)+"\n")
	}
	b := append([]string(nil), a...)
	b[1] = "two\n"
	b[17] = "eighteen\n"
	var w strings.Builder
	unifiedDiff(&w, a, b, 3)
	want := "@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n@@ -15,6 +15,6 @@\n 15\n 16\n 17\n-18\n+eighteen\n 19\n 20\n"
	if w.String() != want {
		t.Errorf("diff:\n%s\nwant:\n%s", w.String(), want)
	}
	// Beyond the edit budget the middle becomes one replacement.
	var x, y []string
	for i := 0; i < 3000; i++ {
		x = append(x, "x"+itoa(i)+"\n")
		y = append(y, "y"+itoa(i)+"\n")
	}
	ops := diffLines(x, y)
	if len(ops) != 6000 || ops[0].kind != '-' || ops[5999].kind != '+' {
		t.Errorf("fallback script has %d ops", len(ops))
	}
}

// TestJournalKeepsNoSensitiveContent: the journal row of a patch applied
// with AllowSensitive names the sensitive files with their hashes and
// keeps no byte of their content, before or after, whichever way the
// patch changed them; the plain file's diff is kept.
func TestJournalKeepsNoSensitiveContent(t *testing.T) {
	dir := secretsTree(t)
	res, err := apply(t, dir, secretsPatch, Options{AllowSensitive: true})
	if err != nil {
		t.Fatal(err)
	}
	diff := RenderDiff(res)
	if testutil.HoldsSecret([]byte(diff), secretMarker) {
		t.Errorf("the journal diff holds a secret:\n%s", diff)
	}
	if n := strings.Count(diff, "(sensitive file: content not recorded; "); n != 5 {
		t.Errorf("%d sensitive stubs, want 5:\n%s", n, diff)
	}
	if !strings.Contains(diff, "-visible\n+visible-changed\n") {
		t.Errorf("the plain file's diff is missing:\n%s", diff)
	}
}
