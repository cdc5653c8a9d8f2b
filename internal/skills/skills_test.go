package skills

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/project"
	"github.com/google/go-cmp/cmp"
)

// env is a Project directory, a trusted skill directory and a directory
// outside both, all under one temp dir.
type env struct {
	base    string
	project string
	trusted string
	outside string
	root    *os.Root // the Project's
}

func newEnv(t *testing.T) env {
	t.Helper()
	base := t.TempDir()
	e := env{
		base:    base,
		project: filepath.Join(base, "project"),
		trusted: filepath.Join(base, "trusted"),
		outside: filepath.Join(base, "outside"),
	}
	for _, d := range []string{e.project, e.trusted, e.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r, err := os.OpenRoot(e.project)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	e.root = r
	return e
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func skillMD(name, desc, body string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\n" + body
}

// repoSkill writes .agents/skills/<dir>/SKILL.md in the Project.
func (e env) repoSkill(t *testing.T, dir, content string) string {
	t.Helper()
	p := filepath.Join(e.project, ".agents", "skills", dir)
	write(t, filepath.Join(p, "SKILL.md"), content)
	return p
}

// trustedSkill writes <trusted>/<dir>/SKILL.md.
func (e env) trustedSkill(t *testing.T, dir, content string) string {
	t.Helper()
	p := filepath.Join(e.trusted, dir)
	write(t, filepath.Join(p, "SKILL.md"), content)
	return p
}

func (e env) catalog(t *testing.T) *Catalog {
	t.Helper()
	c, err := New([]string{e.trusted})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func list(t *testing.T, c *Catalog, root *os.Root) []Skill {
	t.Helper()
	got, err := c.List(context.Background(), root)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	return got
}

func byName(t *testing.T, skills []Skill, name string) Skill {
	t.Helper()
	for _, s := range skills {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no skill named %q in %+v", name, skills)
	return Skill{}
}

func TestListSourcesAndTrust(t *testing.T) {
	e := newEnv(t)
	e.repoSkill(t, "lint", skillMD("lint", "Run the linters.", "body"))
	e.repoSkill(t, "build", skillMD("build", "Build it.", "body"))
	e.trustedSkill(t, "deploy", skillMD("deploy", "Deploy safely.", "body"))
	e.trustedSkill(t, "Zeta", skillMD("Zeta", "Last trusted.", "body"))
	write(t, filepath.Join(e.project, ".agents", "skills", "notaskill", "README.md"), "x")
	write(t, filepath.Join(e.project, ".agents", "skills", "file.md"), "x")
	e.repoSkill(t, ".hidden", skillMD("hidden", "Hidden.", "body"))

	c := e.catalog(t)
	got := list(t, c, e.root)
	type row struct{ Name, Description, Trust, Source, Error string }
	var rows []row
	for _, s := range got {
		rows = append(rows, row{s.Name, s.Description, s.Trust, s.Source, s.Error})
	}
	want := []row{
		{"deploy", "Deploy safely.", TrustAdmin, SourceConfigured, ""},
		{"Zeta", "Last trusted.", TrustAdmin, SourceConfigured, ""},
		{"build", "Build it.", TrustRepository, SourceRepository, ""},
		{"lint", "Run the linters.", TrustRepository, SourceRepository, ""},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}

	// Without a Project only the trusted skills remain.
	if got := list(t, c, nil); len(got) != 2 || got[0].Trust != TrustAdmin || got[1].Trust != TrustAdmin {
		t.Errorf("List(nil) = %+v, want the two trusted skills", got)
	}
	// Without trusted directories only the Project's.
	c2, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := list(t, c2, e.root); len(got) != 2 || got[0].Source != SourceRepository {
		t.Errorf("List without trusted dirs = %+v, want the two repository skills", got)
	}
}

func TestNoSkillsDirectory(t *testing.T) {
	e := newEnv(t)
	got := list(t, e.catalog(t), e.root)
	if got == nil || len(got) != 0 {
		t.Errorf("List = %#v, want an empty non-nil slice", got)
	}
}

func TestNew(t *testing.T) {
	e := newEnv(t)
	file := filepath.Join(e.base, "file")
	write(t, file, "x")
	for _, tt := range []struct {
		name string
		dirs []string
	}{
		{"relative", []string{"skills"}},
		{"missing", []string{filepath.Join(e.base, "nope")}},
		{"not a directory", []string{file}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.dirs); err == nil {
				t.Errorf("New(%q) succeeded, want an error", tt.dirs)
			}
		})
	}
	// Duplicates are dropped, so a skill is listed once.
	e.trustedSkill(t, "a", skillMD("a", "A.", ""))
	c, err := New([]string{e.trusted, e.trusted + "/"})
	if err != nil {
		t.Fatal(err)
	}
	if got := list(t, c, nil); len(got) != 1 {
		t.Errorf("List = %+v, want one skill", got)
	}
}

func TestTrustedDirectoryRemovedAfterNew(t *testing.T) {
	e := newEnv(t)
	e.trustedSkill(t, "a", skillMD("a", "A.", ""))
	c := e.catalog(t)
	if err := os.RemoveAll(e.trusted); err != nil {
		t.Fatal(err)
	}
	if got := list(t, c, e.root); len(got) != 0 {
		t.Errorf("List = %+v, want none", got)
	}
}

func TestMetadata(t *testing.T) {
	long := strings.Repeat("n", 100)
	tests := []struct {
		name     string
		content  string
		wantName string
		wantDesc string
		wantErr  string // substring of Skill.Error; "" for none
	}{
		{name: "plain", content: skillMD("pdf", "Work with PDF files.", "# Body\n"), wantName: "pdf", wantDesc: "Work with PDF files."},
		{name: "double quoted", content: "---\nname: \"pdf\"\ndescription: \"Say \\\"hi\\\": now\"\n---\n", wantName: "pdf", wantDesc: `Say "hi": now`},
		{name: "single quoted", content: "---\nname: 'pdf'\ndescription: 'it''s: fine'\n---\n", wantName: "pdf", wantDesc: "it's: fine"},
		{name: "comment and extra keys", content: "---\n# a comment\nname: pdf # trailing\nlicense: MIT\nallowed-tools: [Read, Grep]\nmetadata:\n  author: someone\n  version: \"1.0\"\ndescription: Does PDFs.\n---\n", wantName: "pdf", wantDesc: "Does PDFs."},
		{name: "folded block", content: "---\nname: pdf\ndescription: >-\n  Line one\n  line two.\n---\n", wantName: "pdf", wantDesc: "Line one line two."},
		{name: "literal block", content: "---\nname: pdf\ndescription: |\n  Line one\n\n  line two.\n---\n", wantName: "pdf", wantDesc: "Line one line two."},
		{name: "plain continued", content: "---\nname: pdf\ndescription: Line one\n  line two.\n---\n", wantName: "pdf", wantDesc: "Line one line two."},
		{name: "CRLF and BOM", content: "\uFEFF---\r\nname: pdf\r\ndescription: Does PDFs.\r\n---\r\nbody\r\n", wantName: "pdf", wantDesc: "Does PDFs."},
		{name: "no frontmatter", content: "# Just markdown\n", wantName: "dir", wantErr: "must start with"},
		{name: "not closed", content: "---\nname: pdf\ndescription: x\n", wantName: "dir", wantErr: "not closed"},
		{name: "not key value", content: "---\nname: pdf\njust text\n---\n", wantName: "dir", wantErr: "line 3"},
		{name: "key without space", content: "---\nname:pdf\ndescription: x\n---\n", wantName: "dir", wantErr: "line 2"},
		{name: "duplicate key", content: "---\nname: a\nname: b\ndescription: x\n---\n", wantName: "dir", wantErr: "duplicate key"},
		{name: "indented first line", content: "---\n  name: a\n---\n", wantName: "dir", wantErr: "indented line"},
		{name: "flow value", content: "---\nname: [a, b]\ndescription: x\n---\n", wantName: "dir", wantErr: "unsupported YAML"},
		{name: "bad double quote", content: "---\nname: \"pdf\ndescription: x\n---\n", wantName: "dir", wantErr: "double-quoted"},
		{name: "missing name", content: "---\ndescription: x\n---\n", wantName: "dir", wantDesc: "x", wantErr: "no name"},
		{name: "missing description", content: "---\nname: pdf\n---\n", wantName: "pdf", wantErr: "no description"},
		{name: "long name cut", content: skillMD(long, "x", ""), wantName: long[:MaxNameRunes], wantDesc: "x"},
		{name: "long description cut", content: skillMD("pdf", strings.Repeat("é", 2000), ""), wantName: "pdf", wantDesc: strings.Repeat("é", MaxDescriptionRunes)},
		{name: "control characters", content: "---\nname: \"p\\x1b[31md\\u0085f\"\ndescription: \"a\\tb\\u0000c\"\n---\n", wantName: "p[31mdf", wantDesc: "a bc"},
		{name: "invalid UTF-8", content: skillMD("p\xffdf", "d\xfe", ""), wantName: "p\uFFFDdf", wantDesc: "d\uFFFD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.repoSkill(t, "dir", tt.content)
			e.repoSkill(t, "zz-ok", skillMD("zz-ok", "Still listed.", ""))
			got := list(t, e.catalog(t), e.root)
			if len(got) != 2 {
				t.Fatalf("List = %+v, want 2 skills (a bad one is not fatal)", got)
			}
			s := got[0]
			if s.Name != tt.wantName || s.Description != tt.wantDesc {
				t.Errorf("name, description = %q, %q; want %q, %q", s.Name, s.Description, tt.wantName, tt.wantDesc)
			}
			if tt.wantErr == "" && s.Error != "" || !strings.Contains(s.Error, tt.wantErr) {
				t.Errorf("Error = %q, want it to contain %q", s.Error, tt.wantErr)
			}
			if got[1].Error != "" {
				t.Errorf("good skill has Error %q", got[1].Error)
			}
			_, err := e.catalog(t).Load(context.Background(), e.root, s.ID)
			if tt.wantErr != "" && !errors.Is(err, ErrInvalid) || tt.wantErr == "" && err != nil {
				t.Errorf("Load error = %v, want ErrInvalid: %v", err, tt.wantErr != "")
			}
		})
	}
}

func TestOversizedSkillFile(t *testing.T) {
	e := newEnv(t)
	head := skillMD("big", "Big.", "")
	e.repoSkill(t, "big", head+strings.Repeat("x", MaxFileBytes+1-len(head)))
	e.repoSkill(t, "max", skillMD("max", "Big.", "")+strings.Repeat("x", MaxFileBytes-len(head)))
	c := e.catalog(t)
	got := list(t, c, e.root)
	big, max := got[0], got[1]
	if !strings.Contains(big.Error, "larger than 65536 bytes") || big.Name != "big" || big.Description != "" {
		t.Errorf("oversized skill = %+v, want an Error and no description", big)
	}
	if max.Error != "" || max.Name != "max" {
		t.Errorf("skill of exactly MaxFileBytes = %+v, want it usable", max)
	}
	if _, err := c.Load(context.Background(), e.root, big.ID); !errors.Is(err, ErrInvalid) {
		t.Errorf("Load(oversized) error = %v, want ErrInvalid", err)
	}
	l, err := c.Load(context.Background(), e.root, max.ID)
	if err != nil || len(l.Body) != MaxFileBytes-len(head) {
		t.Errorf("Load(max) = body of %d bytes, %v", len(l.Body), err)
	}
}

func TestSymlinks(t *testing.T) {
	e := newEnv(t)
	// A skill outside the Project, reached three ways; none may count.
	write(t, filepath.Join(e.outside, "evil", "SKILL.md"), skillMD("evil", "Outside.", ""))
	skillsDir := filepath.Join(e.project, ".agents", "skills")
	symlink(t, filepath.Join(e.outside, "evil"), filepath.Join(skillsDir, "abs"))
	symlink(t, "../../../outside/evil", filepath.Join(skillsDir, "rel"))
	symlink(t, filepath.Join(e.outside, "nope"), filepath.Join(skillsDir, "dangling"))
	// SKILL.md itself leading out of its skill directory, even within the
	// Project.
	write(t, filepath.Join(e.project, "docs", "SKILL.md"), skillMD("docs", "Docs.", ""))
	symlink(t, "../../../docs/SKILL.md", filepath.Join(skillsDir, "linkfile", "SKILL.md"))
	// A symlinked skill directory staying inside the Project is followed.
	write(t, filepath.Join(e.project, "tools", "shared", "SKILL.md"), skillMD("shared", "Shared.", ""))
	symlink(t, "../../tools/shared", filepath.Join(skillsDir, "shared"))

	got := list(t, e.catalog(t), e.root)
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
	}
	if diff := cmp.Diff([]string{"shared"}, names); diff != "" {
		t.Errorf("skills (-want +got):\n%s", diff)
	}
}

func TestAgentsDirSymlinkedOut(t *testing.T) {
	e := newEnv(t)
	write(t, filepath.Join(e.outside, "skills", "evil", "SKILL.md"), skillMD("evil", "Outside.", ""))
	symlink(t, e.outside, filepath.Join(e.project, ".agents"))
	if got := list(t, e.catalog(t), e.root); len(got) != 0 {
		t.Errorf("List = %+v, want none", got)
	}
}

func TestSearch(t *testing.T) {
	e := newEnv(t)
	for i := range 5 {
		n := fmt.Sprintf("db-%d", i)
		e.repoSkill(t, n, skillMD(n, "Migrate the DATABASE schema.", ""))
	}
	e.repoSkill(t, "lint", skillMD("lint", "Run linters.", ""))
	e.trustedSkill(t, "deploy", skillMD("deploy", "Deploy; may touch the database.", ""))
	c := e.catalog(t)
	ctx := context.Background()

	type page struct {
		Names []string
		Next  int
		Done  bool
	}
	search := func(q string, offset, limit int) page {
		t.Helper()
		items, next, done, err := c.Search(ctx, e.root, q, offset, limit)
		if err != nil {
			t.Fatalf("Search(%q, %d, %d): %v", q, offset, limit, err)
		}
		p := page{Names: []string{}, Next: next, Done: done}
		for _, s := range items {
			p.Names = append(p.Names, s.Name)
		}
		return p
	}
	tests := []struct {
		name          string
		q             string
		offset, limit int
		want          page
	}{
		{"first page", "database", 0, 2, page{[]string{"deploy", "db-0"}, 2, false}},
		{"second page", "database", 2, 2, page{[]string{"db-1", "db-2"}, 4, false}},
		{"last page", "database", 4, 2, page{[]string{"db-3", "db-4"}, 0, true}},
		{"past the end", "database", 10, 2, page{[]string{}, 0, true}},
		{"exact fit", "database", 0, 6, page{[]string{"deploy", "db-0", "db-1", "db-2", "db-3", "db-4"}, 0, true}},
		{"case-insensitive name", "LINT", 0, 0, page{[]string{"lint"}, 0, true}},
		{"all terms", "database  Deploy", 0, 0, page{[]string{"deploy"}, 0, true}},
		{"no match", "kubernetes", 0, 0, page{[]string{}, 0, true}},
		{"empty matches all", "", 0, 3, page{[]string{"deploy", "db-0", "db-1"}, 3, false}},
		{"limit capped", "", 0, 1000, page{[]string{"deploy", "db-0", "db-1", "db-2", "db-3", "db-4", "lint"}, 0, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, search(tt.q, tt.offset, tt.limit)); diff != "" {
				t.Errorf("Search (-want +got):\n%s", diff)
			}
		})
	}
	for _, tt := range []struct {
		name          string
		q             string
		offset, limit int
	}{
		{"negative offset", "", -1, 0},
		{"negative limit", "", 0, -1},
		{"long query", strings.Repeat("q", MaxQueryBytes+1), 0, 0},
		{"invalid UTF-8", "\xff", 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, _, err := c.Search(ctx, e.root, tt.q, tt.offset, tt.limit); !errors.Is(err, ErrBadQuery) {
				t.Errorf("error = %v, want ErrBadQuery", err)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	e := newEnv(t)
	dir := e.repoSkill(t, "pdf", skillMD("pdf", "PDFs.", "# PDF\r\n\nUse \x1b[1mscripts/fill.py\x07.\n"))
	for _, f := range []string{"scripts/fill.py", "references/forms.md", "references/deep/a/b.md", "README.md", ".hidden", "scripts/.cache", ".env", "keys/server.pem", "nested/SKILL.md"} {
		write(t, filepath.Join(dir, f), "x")
	}
	write(t, filepath.Join(e.project, "src", "main.go"), "package main")
	symlink(t, "../../../src/main.go", filepath.Join(dir, "outlink.go"))       // leaves the skill dir
	symlink(t, "scripts/fill.py", filepath.Join(dir, "inlink.py"))             // stays inside
	symlink(t, "references", filepath.Join(dir, "refs"))                       // a directory: not walked
	symlink(t, filepath.Join(e.outside, "nope"), filepath.Join(dir, "dangle")) // dangling
	c := e.catalog(t)
	id := list(t, c, e.root)[0].ID

	got, err := c.Load(context.Background(), e.root, id)
	if err != nil {
		t.Fatal(err)
	}
	want := &Loaded{
		Skill: Skill{ID: id, Name: "pdf", Description: "PDFs.", Trust: TrustRepository, Source: SourceRepository},
		Body:  "# PDF\n\nUse [1mscripts/fill.py.\n",
		Files: []string{"README.md", "inlink.py", "nested/SKILL.md", "references/deep/a/b.md", "references/forms.md", "scripts/fill.py"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load (-want +got):\n%s", diff)
	}

	for _, bad := range []string{"sk_AAAAAAAAAAAAAAAA", "nope", "", id + "x"} {
		if _, err := c.Load(context.Background(), e.root, bad); !errors.Is(err, ErrNotFound) {
			t.Errorf("Load(%q) error = %v, want ErrNotFound", bad, err)
		}
	}
	// A repository skill is not found without the Project.
	if _, err := c.Load(context.Background(), nil, id); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load without Project error = %v, want ErrNotFound", err)
	}
}

func TestLoadTrusted(t *testing.T) {
	e := newEnv(t)
	e.trustedSkill(t, "ops", skillMD("ops", "Ops.", "Do ops.\n"))
	c := e.catalog(t)
	id := list(t, c, e.root)[0].ID
	got, err := c.Load(context.Background(), e.root, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Trust != TrustAdmin || got.Source != SourceConfigured || got.Body != "Do ops.\n" || got.Files == nil || len(got.Files) != 0 {
		t.Errorf("Load = %+v", got)
	}
}

func TestSupportFilesBounded(t *testing.T) {
	e := newEnv(t)
	dir := e.repoSkill(t, "many", skillMD("many", "Many files.", ""))
	for i := range MaxSupportFiles + 20 {
		write(t, filepath.Join(dir, "refs", fmt.Sprintf("f%03d.md", i)), "x")
	}
	c := e.catalog(t)
	got, err := c.Load(context.Background(), e.root, list(t, c, e.root)[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Files) != MaxSupportFiles || !got.FilesTruncated || got.Files[0] != "refs/f000.md" {
		t.Errorf("Files = %d (first %q), truncated %v; want %d, true", len(got.Files), got.Files[0], got.FilesTruncated, MaxSupportFiles)
	}
}

func TestOpenSupport(t *testing.T) {
	e := newEnv(t)
	dir := e.repoSkill(t, "pdf", skillMD("pdf", "PDFs.", ""))
	write(t, filepath.Join(dir, "scripts", "fill.py"), "print('fill')\n")
	other := e.repoSkill(t, "other", skillMD("other", "Other.", ""))
	write(t, filepath.Join(other, "secret.md"), "sibling")
	write(t, filepath.Join(e.project, "src", "main.go"), "package main")
	write(t, filepath.Join(e.outside, "x"), "outside")
	symlink(t, "../other/secret.md", filepath.Join(dir, "sib.md"))
	symlink(t, "../../../src/main.go", filepath.Join(dir, "proj.go"))
	symlink(t, filepath.Join(e.outside, "x"), filepath.Join(dir, "abs"))
	symlink(t, "../../../../outside/nope", filepath.Join(dir, "dangling"))

	c := e.catalog(t)
	ctx := context.Background()
	id := byName(t, list(t, c, e.root), "pdf").ID
	uri := URI(id, "scripts/fill.py")

	if _, _, err := c.OpenSupport(ctx, e.root, uri, nil); !errors.Is(err, ErrNotLoaded) {
		t.Fatalf("before Load: error = %v, want ErrNotLoaded", err)
	}
	if _, _, err := c.OpenSupport(ctx, e.root, uri, map[string]bool{"sk_AAAAAAAAAAAAAAAA": true}); !errors.Is(err, ErrNotLoaded) {
		t.Fatalf("other skill loaded: error = %v, want ErrNotLoaded", err)
	}
	loaded := map[string]bool{id: true, "sk_AAAAAAAAAAAAAAAA": true}

	r, rel, err := c.OpenSupport(ctx, e.root, "skill://"+id+"/./scripts//fill.py", loaded)
	if err != nil {
		t.Fatalf("OpenSupport: %v", err)
	}
	data, err := r.ReadFile(rel)
	r.Close()
	if err != nil || string(data) != "print('fill')\n" || rel != ".agents/skills/pdf/scripts/fill.py" {
		t.Errorf("read %q = %q, %v", rel, data, err)
	}

	tests := []struct {
		name string
		uri  string
		want error
	}{
		{"parent escape", "skill://" + id + "/../../x", project.ErrPathDenied},
		{"parent to sibling skill", "skill://" + id + "/../other/secret.md", project.ErrPathDenied},
		{"absolute", "skill://" + id + "//etc/passwd", project.ErrPathDenied},
		{"NUL", "skill://" + id + "/scripts/fill.py\x00", project.ErrPathDenied},
		{"symlink to sibling skill", "skill://" + id + "/sib.md", project.ErrPathDenied},
		{"symlink into the Project", "skill://" + id + "/proj.go", project.ErrPathDenied},
		{"absolute symlink", "skill://" + id + "/abs", project.ErrPathDenied},
		{"dangling symlink out", "skill://" + id + "/dangling", project.ErrPathDenied},
		{"malformed", "file:///etc/passwd", project.ErrPathDenied},
		{"no path", "skill://" + id, project.ErrPathDenied},
		{"missing file", "skill://" + id + "/nope.md", ErrNotFound},
		{"unknown skill", "skill://sk_AAAAAAAAAAAAAAAA/x", ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _, err := c.OpenSupport(ctx, e.root, tt.uri, loaded)
			if r != nil {
				r.Close()
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("error = %v, want %v", err, tt.want)
			}
			for _, frag := range []string{e.base, "outside", "passwd"} {
				if strings.Contains(err.Error(), frag) {
					t.Errorf("error %q contains %q", err, frag)
				}
			}
		})
	}
}

func TestParseURI(t *testing.T) {
	tests := []struct {
		uri     string
		id, rel string
		ok      bool
	}{
		{"skill://sk_abc/scripts/a.py", "sk_abc", "scripts/a.py", true},
		{"skill://sk_abc/../x", "sk_abc", "../x", true},
		{"skill://sk_abc/", "", "", false},
		{"skill://sk_abc", "", "", false},
		{"skill:///x", "", "", false},
		{"file:///x", "", "", false},
		{"SKILL://sk_abc/x", "", "", false},
	}
	for _, tt := range tests {
		id, rel, ok := ParseURI(tt.uri)
		if id != tt.id || rel != tt.rel || ok != tt.ok {
			t.Errorf("ParseURI(%q) = %q, %q, %v; want %q, %q, %v", tt.uri, id, rel, ok, tt.id, tt.rel, tt.ok)
		}
	}
}

func TestSkillIDs(t *testing.T) {
	e := newEnv(t)
	secretDir := filepath.Join(e.base, "host-secret-path")
	write(t, filepath.Join(secretDir, "alpha", "SKILL.md"), skillMD("alpha", "A.", ""))
	e.trustedSkill(t, "alpha", skillMD("alpha", "A.", ""))
	e.repoSkill(t, "alpha", skillMD("alpha", "A.", ""))
	c, err := New([]string{e.trusted, secretDir})
	if err != nil {
		t.Fatal(err)
	}
	first := list(t, c, e.root)
	if len(first) != 3 {
		t.Fatalf("List = %+v, want 3", first)
	}
	shape := regexp.MustCompile(`^sk_[A-Za-z0-9_-]{16}$`)
	seen := map[string]bool{}
	for _, s := range first {
		if !shape.MatchString(s.ID) {
			t.Errorf("ID %q does not match %v", s.ID, shape)
		}
		for _, frag := range []string{"host", "secret", "trusted", "alpha", "project", "skills"} {
			if strings.Contains(strings.ToLower(s.ID), frag) {
				t.Errorf("ID %q contains %q", s.ID, frag)
			}
		}
		if seen[s.ID] {
			t.Errorf("duplicate ID %q", s.ID)
		}
		seen[s.ID] = true
	}
	// Stable across calls, across Catalogs, and across edits of the skill.
	e.trustedSkill(t, "alpha", skillMD("renamed", "Changed.", ""))
	c2, err := New([]string{e.trusted, secretDir})
	if err != nil {
		t.Fatal(err)
	}
	again := list(t, c2, e.root)
	for _, s := range again {
		if !seen[s.ID] {
			t.Errorf("ID %q of %q changed", s.ID, s.Name)
		}
	}
}

func TestSkillsPerSourceBounded(t *testing.T) {
	e := newEnv(t)
	for i := range 500 {
		n := fmt.Sprintf("s%03d", i)
		e.repoSkill(t, n, skillMD(n, "Numbered.", ""))
	}
	got := list(t, e.catalog(t), e.root)
	if len(got) != MaxSkillsPerSource {
		t.Fatalf("List returned %d skills, want %d", len(got), MaxSkillsPerSource)
	}
	// Deterministic: the first directories by name.
	if got[0].Name != "s000" || got[len(got)-1].Name != "s199" {
		t.Errorf("skills run from %q to %q, want s000 to s199", got[0].Name, got[len(got)-1].Name)
	}
	// A skill beyond the bound cannot be loaded either.
	src := &source{kind: SourceRepository, trust: TrustRepository}
	if _, err := e.catalog(t).Load(context.Background(), e.root, src.id("s300")); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load(beyond bound) error = %v, want ErrNotFound", err)
	}
}

func TestContextCanceled(t *testing.T) {
	e := newEnv(t)
	e.repoSkill(t, "a", skillMD("a", "A.", ""))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.catalog(t).List(ctx, e.root); !errors.Is(err, context.Canceled) {
		t.Errorf("List error = %v, want context.Canceled", err)
	}
}
