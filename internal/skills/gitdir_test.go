package skills

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// TestSkillsSkipGitDirNotNamedDotGit: a Git directory under another name
// inside a skill (a bare repository, a --separate-git-dir target) holds
// no support file, and a skill directory that is one is not listed, as
// for .git.
func TestSkillsSkipGitDirNotNamedDotGit(t *testing.T) {
	e := newEnv(t)
	skill := "---\nname: %s\ndescription: a skill\n---\nbody\n"
	skills := filepath.Join(e.project, ".agents", "skills")
	dir := filepath.Join(skills, "tools")
	write(t, filepath.Join(dir, "SKILL.md"), fmt.Sprintf(skill, "tools"))
	write(t, filepath.Join(dir, "ok.md"), "fine")
	write(t, filepath.Join(dir, "plain", "HEAD"), "a file named HEAD") // no Git directory
	write(t, filepath.Join(dir, "work", "README"), "work tree")
	testutil.Git(t, dir, "init", "-q", "--bare", "mirror.git")
	testutil.Git(t, dir, "init", "-q", "--separate-git-dir", "meta", "work")
	testutil.Git(t, skills, "init", "-q", "--bare", "repo")
	write(t, filepath.Join(skills, "repo", "SKILL.md"), fmt.Sprintf(skill, "repo"))

	c := e.catalog(t)
	ctx := context.Background()
	got := list(t, c, e.root)
	if slices.ContainsFunc(got, func(s Skill) bool { return s.Name == "repo" }) {
		t.Error("listed a skill whose directory is a bare repository")
	}
	tools := byName(t, got, "tools")
	loaded, err := c.Load(ctx, e.root, tools.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := "[ok.md plain/HEAD work/README]"; fmt.Sprint(loaded.Files) != want {
		t.Errorf("support files = %v, want %s", loaded.Files, want)
	}
	for _, rel := range []string{"mirror.git/config", "meta/config", "work/.git"} {
		if _, oerr := readerOpens(t, ctx, c, e.root, tools.ID, rel); oerr != nil {
			if pe, ok := errors.AsType[*project.PathError](oerr); !ok || pe.Reason != project.ReasonRepository {
				t.Errorf("skill file %q: %v, want repository_metadata", rel, oerr)
			}
		}
	}
}
