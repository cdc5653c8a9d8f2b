package files

import (
	"os"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// TestReadRefusesGitDirNotNamedDotGit is the attacker review's case: a
// repository whose directory is not named .git — nested/.git is a
// "gitdir: ../meta" file (git init --separate-git-dir), mirror.git is
// bare — holds the same config (remote URLs with credentials, hooks,
// core.fsmonitor) as a .git directory. read_files refuses every path
// into it, and the directory itself, as repository metadata, as writes
// already did. Before, meta/config came back with its token.
func TestReadRefusesGitDirNotNamedDotGit(t *testing.T) {
	e := newEnv(t)
	if err := os.Mkdir(e.abs("nested"), 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, e.proj, "init", "-q", "--separate-git-dir", "meta", "nested")
	testutil.Git(t, e.proj, "init", "-q", "--bare", "mirror.git")
	const token = "ghp_SECRETTOKEN"
	for _, cfg := range []string{"meta/config", "mirror.git/config"} {
		f, err := os.OpenFile(e.abs(cfg), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("[remote \"origin\"]\n\turl = https://user:" + token + "@github.com/o/r\n")
		f.Close()
	}
	e.symlink(t, "meta", "lmeta")
	// A plain directory with a file named HEAD (and objects, but no refs)
	// is no Git directory: it stays readable.
	e.write(t, "plain/HEAD", "just a file\n")
	e.write(t, "plain/objects/o.txt", "object\n")
	e.write(t, "nested/README", "work tree\n")

	denied := []string{"meta/config", "meta", "meta/HEAD", "nested/.git", "lmeta/config", "mirror.git/config",
		"mirror.git/HEAD", "mirror.git"}
	var reqs []Request
	for _, p := range denied {
		reqs = append(reqs, Request{Path: p})
	}
	for i, it := range e.read(t, NewReader(Limits{}), true, reqs...) {
		if it.Error == nil || it.Error.Code != CodePathDenied || it.Error.DenyReason != project.ReasonRepository {
			t.Errorf("%q: %+v, want path_denied (repository_metadata)", denied[i], it)
		}
		if strings.Contains(it.Content, token) {
			t.Errorf("%q returned the repository's config:\n%s", denied[i], it.Content)
		}
	}
	allowed := map[string]string{"plain/HEAD": "just a file\n", "plain/objects/o.txt": "object\n", "nested/README": "work tree\n"}
	for p, want := range allowed {
		it := e.read(t, NewReader(Limits{}), false, Request{Path: p})[0]
		if it.Error != nil || it.Content != want {
			t.Errorf("%q: %+v, want its content", p, it)
		}
	}
}
