package review

import (
	"reflect"
	"testing"
)

func TestParseDiff(t *testing.T) {
	raw := ":100644 100644 aaa bbb M\x00a b.txt\x00:100644 100644 ccc ccc R100\x00old\x00new\tname\x00:100644 100644 ddd 000 M\x00stat-only\x00"
	numstat := "1\t2\ta b.txt\x000\t0\t\x00old\x00new\tname\x00"
	patch := "diff --git a/a b.txt b/a b.txt\n"
	tests := []struct {
		name     string
		out      string
		complete bool
		want     diffOutput
		wantErr  bool
	}{
		{
			name: "full", out: raw + numstat + "\x00" + patch, complete: true,
			want: diffOutput{
				entries: []rawEntry{{'M', "a b.txt", ""}, {'R', "new\tname", "old"}, {'M', "stat-only", ""}},
				counts:  map[string]lineCount{"a b.txt": {1, 2, false}, "new\tname": {}},
				patch:   []byte(patch), complete: true,
			},
		},
		{
			name: "binary, no patch", out: ":100644 100644 a b M\x00x\x00-\t-\tx\x00", complete: true,
			want: diffOutput{entries: []rawEntry{{'M', "x", ""}}, counts: map[string]lineCount{"x": {binary: true}}, complete: true},
		},
		{
			name: "stat-only with separator", out: ":100644 100644 a 0 M\x00f\x00\x00", complete: true,
			want: diffOutput{entries: []rawEntry{{'M', "f", ""}}, counts: map[string]lineCount{}, patch: []byte{}, complete: true},
		},
		{name: "empty", out: "", complete: true, want: diffOutput{counts: map[string]lineCount{}, complete: true}},
		{
			name: "cut inside listing", out: raw[:len(raw)-4], complete: false,
			want: diffOutput{entries: []rawEntry{{'M', "a b.txt", ""}, {'R', "new\tname", "old"}}, counts: map[string]lineCount{}},
		},
		{name: "ends inside a record", out: ":100644 100644 a b M\x00x", complete: true, wantErr: true},
		{name: "bad counts", out: ":100644 100644 a b M\x00x\x00one\ttwo\tx\x00", complete: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseDiff([]byte(tt.out), tt.complete)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestQuotePath(t *testing.T) {
	tests := map[string]string{
		"a/plain name.txt": "a/plain name.txt",
		"a/ünï.txt":        "a/ünï.txt",
		"a/t\tb":           `"a/t\tb"`,
		"a/n\nl":           `"a/n\nl"`,
		`a/q"b\s`:          `"a/q\"b\\s"`,
		"a/d\x7fe":         `"a/d\177e"`,
		"a/c\x1bx":         `"a/c\033x"`,
	}
	for in, want := range tests {
		if got := quotePath(in); got != want {
			t.Errorf("quotePath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWithholdSections(t *testing.T) {
	patch := "diff --git a/a b/a\nindex 1..2 100644\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-diff --git a/x b/x\n+secret\n" +
		"* Unmerged path u\n" +
		"diff --git a/b b/b\n--- a/b\n+++ b/b\n@@ -1 +1 @@\n-x\n+y\n"
	got := string(withholdSections([]byte(patch), map[string]bool{"diff --git a/a b/a": true}))
	want := "diff --git a/a b/a\n" + withholdNote + "* Unmerged path u\n" +
		"diff --git a/b b/b\n--- a/b\n+++ b/b\n@@ -1 +1 @@\n-x\n+y\n"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
