package skills

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/project"
)

// TestSkillsNeverShowSecrets is the attack: a skill directory that
// is a link to .kube (with a SKILL.md planted there), a skill whose support
// files link to .env and .kube/config, one linking into .git: no listing,
// load or support-file resolution reaches a secret.
func TestSkillsNeverShowSecrets(t *testing.T) {
	e := newEnv(t)
	const marker = "SECRET-MARKER-5d0e"
	skill := "---\nname: %s\ndescription: a skill\n---\nbody\n"
	write(t, filepath.Join(e.project, ".kube", "config"), "token: "+marker)
	write(t, filepath.Join(e.project, ".kube", "SKILL.md"), fmt.Sprintf(skill, "kube"))
	write(t, filepath.Join(e.project, ".env"), "TOKEN="+marker)
	write(t, filepath.Join(e.project, ".git", "config"), marker)
	write(t, filepath.Join(e.project, ".git", "SKILL.md"), fmt.Sprintf(skill, "git"))
	symlink(t, "../../.kube", filepath.Join(e.project, ".agents", "skills", "kube"))
	symlink(t, "../../.git", filepath.Join(e.project, ".agents", "skills", "gitmeta"))
	dir := filepath.Join(e.project, ".agents", "skills", "tools")
	write(t, filepath.Join(dir, "SKILL.md"), fmt.Sprintf(skill, "tools"))
	write(t, filepath.Join(dir, "ok.md"), "fine")
	symlink(t, "../../../.env", filepath.Join(dir, "env.txt"))
	symlink(t, "../../../.kube", filepath.Join(dir, "kube"))
	symlink(t, "../../../.kube/config", filepath.Join(dir, "cfg"))
	symlink(t, "../../../.git/config", filepath.Join(dir, "gcfg"))

	c := e.catalog(t)
	ctx := context.Background()
	got := list(t, c, e.root)
	for _, s := range got {
		if s.Name == "kube" || s.Name == "git" {
			t.Errorf("listed the skill %q behind a link to a sensitive or metadata directory", s.Name)
		}
	}
	tools := byName(t, got, "tools")
	loaded, err := c.Load(ctx, e.root, tools.ID)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(loaded.Files) != "[ok.md]" {
		t.Errorf("support files = %v, want only ok.md", loaded.Files)
	}
	for _, rel := range []string{"env.txt", "kube/config", "cfg", "gcfg"} {
		real, oerr := readerOpens(t, ctx, c, e.root, tools.ID, rel)
		if oerr != nil && !errors.Is(oerr, project.ErrSensitive) && !errors.Is(oerr, project.ErrPathDenied) {
			t.Errorf("skill file %q: %v", rel, oerr)
		}
		if strings.Contains(real, marker) {
			t.Errorf("leak in %q", real)
		}
	}
}

// readerOpens resolves skill file rel of skill id and opens what it
// resolves to as a reader would (the reader's rules see the real path).
// It returns what rel resolved to and the reader's error; nothing when
// OpenSupport refused it outright. A file the reader may open is
// reported.
func readerOpens(t *testing.T, ctx context.Context, c *Catalog, root *os.Root, id, rel string) (string, error) {
	t.Helper()
	r, real, err := c.OpenSupport(ctx, root, URI(id, rel), map[string]bool{id: true})
	if err != nil {
		return "", nil
	}
	f, _, oerr := project.Open(r, real, false)
	r.Close()
	if oerr == nil {
		f.Close()
		t.Errorf("skill file %q resolves to %q, which a reader may open", rel, real)
	}
	return real, oerr
}
