package gitrepo

import "testing"

func TestUnsafeConfig(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want string
	}{
		{"none", "core.bare\nfalse\x00diff.external\n\x00filter.lfs.required\ntrue\x00", ""},
		{"clean", "filter.evil.clean\ntouch x\x00", "filter.<driver>.clean"},
		{"dotted driver", "filter.a.b.smudge\nx\x00", "filter.<driver>.smudge"},
		{"no value", "filter.evil.process\x00", "filter.<driver>.process"},
		{"textconv", "diff.Pdf.textconv\npdftotext\x00", "diff.<driver>.textconv"},
		{"command", "diff.x.command\nx\x00", "diff.<driver>.command"},
		{"merge driver", "merge.ours.name\nkeep ours\x00merge.ours.driver\ntrue\x00", "merge.<driver>.driver"},
		{"merge options", "merge.ff\nfalse\x00merge.x.recursive\nbinary\x00", ""},
		{"no subsection", "diff.command\nx\x00filter.clean\nx\x00", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := unsafeConfig([]byte(tt.out))
			if got != tt.want {
				t.Errorf("unsafeConfig = %q, want %q", got, tt.want)
			}
		})
	}
}
