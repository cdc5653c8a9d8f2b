//go:build unix

package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Escape is one way a repository's metadata can point Git outside the
// repository's root.
type Escape struct {
	// Name names the case for t.Run.
	Name string
	// Plant changes the committed repository at root so that Git, run
	// there, would open something under outside (an empty directory next to
	// root, never inside it). What it points at is a FIFO wherever Git would
	// read: Git opening it blocks, so a test that answers within its
	// timeout proves that nothing outside was opened.
	Plant func(t testing.TB, root, outside string)
}

// Mkfifo creates a FIFO at p.
func Mkfifo(t testing.TB, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
}

// OutsideRepo creates a committed repository at dir (one file, secret.txt)
// and, with fifoConfig, replaces its .git/config with a FIFO so that Git
// blocks as soon as it reads that repository's configuration.
func OutsideRepo(t testing.TB, dir string, fifoConfig bool) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "init", "-q")
	WriteFile(t, dir, "secret.txt", "outside secret\n")
	Git(t, dir, "add", "secret.txt")
	Git(t, dir, "-c", "user.name=o", "-c", "user.email=o@example.com", "-c", "commit.gpgsign=false", "commit", "-q", "-m", "outside")
	if fifoConfig {
		cfg := filepath.Join(dir, ".git", "config")
		if err := os.Remove(cfg); err != nil {
			t.Fatal(err)
		}
		Mkfifo(t, cfg)
	}
}

func rel(t testing.TB, from, to string) string {
	t.Helper()
	r, err := filepath.Rel(from, to)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func appendFile(t testing.TB, p, text string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// headRef returns the path, under .git, of the branch HEAD names.
func headRef(t testing.TB, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, ".git", "HEAD"))
	if err != nil {
		t.Fatal(err)
	}
	ref, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "ref: ")
	if !ok {
		t.Fatalf("detached HEAD %q", b)
	}
	return ref
}

// Escapes lists the repository metadata through which Git can be pointed
// outside the root: the .git file, commondir, alternates (also through a
// symlinked objects directory), core.worktree, include.path and includeIf
// (also nested and in config.worktree), and symlinks inside .git.
func Escapes() []Escape {
	return []Escape{
		{"gitfile", func(t testing.TB, root, outside string) {
			OutsideRepo(t, filepath.Join(outside, "repo"), true)
			if err := os.RemoveAll(filepath.Join(root, ".git")); err != nil {
				t.Fatal(err)
			}
			WriteFile(t, root, ".git", "gitdir: "+filepath.Join(outside, "repo", ".git")+"\n")
		}},
		{"relative gitfile", func(t testing.TB, root, outside string) {
			OutsideRepo(t, filepath.Join(outside, "repo"), true)
			if err := os.RemoveAll(filepath.Join(root, ".git")); err != nil {
				t.Fatal(err)
			}
			WriteFile(t, root, ".git", "gitdir: "+rel(t, root, filepath.Join(outside, "repo", ".git"))+"\n")
		}},
		{"commondir", func(t testing.TB, root, outside string) {
			// The reproduced attack: commondir and no index.
			OutsideRepo(t, filepath.Join(outside, "repo"), true)
			gitDir := filepath.Join(root, ".git")
			WriteFile(t, gitDir, "commondir", rel(t, gitDir, filepath.Join(outside, "repo", ".git"))+"\n")
			if err := os.Remove(filepath.Join(gitDir, "index")); err != nil {
				t.Fatal(err)
			}
		}},
		{"alternates", func(t testing.TB, root, outside string) {
			objects := filepath.Join(outside, "objects")
			Mkfifo(t, filepath.Join(objects, "info", "alternates"))
			WriteFile(t, filepath.Join(root, ".git", "objects", "info"), "alternates", objects+"\n")
		}},
		{"relative alternates", func(t testing.TB, root, outside string) {
			objects := filepath.Join(outside, "objects")
			Mkfifo(t, filepath.Join(objects, "info", "alternates"))
			own := filepath.Join(root, ".git", "objects")
			WriteFile(t, own, "info/alternates", "# comment\n\n"+rel(t, own, objects)+"\n")
		}},
		{"symlinked objects", func(t testing.TB, root, outside string) {
			objects := filepath.Join(outside, "objects")
			Mkfifo(t, filepath.Join(objects, "info", "alternates"))
			own := filepath.Join(root, ".git", "objects")
			if err := os.Rename(own, filepath.Join(outside, "moved-objects")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(objects, own); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlinked branch", func(t testing.TB, root, outside string) {
			fifo := filepath.Join(outside, "ref")
			Mkfifo(t, fifo)
			ref := filepath.Join(root, ".git", filepath.FromSlash(headRef(t, root)))
			if err := os.Remove(ref); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(fifo, ref); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlinked exclude", func(t testing.TB, root, outside string) {
			fifo := filepath.Join(outside, "exclude")
			Mkfifo(t, fifo)
			p := filepath.Join(root, ".git", "info", "exclude")
			_ = os.Remove(p)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(fifo, p); err != nil {
				t.Fatal(err)
			}
		}},
		{"core.worktree", func(t testing.TB, root, outside string) {
			OutsideRepo(t, filepath.Join(outside, "repo"), false)
			Mkfifo(t, filepath.Join(outside, "repo", ".gitignore"))
			appendFile(t, filepath.Join(root, ".git", "config"), "[core]\n\tworktree = "+filepath.Join(outside, "repo")+"\n")
		}},
		{"include.path", func(t testing.TB, root, outside string) {
			Mkfifo(t, filepath.Join(outside, "inc"))
			appendFile(t, filepath.Join(root, ".git", "config"), "[include]\n\tpath = "+filepath.Join(outside, "inc")+"\n")
		}},
		{"relative include.path", func(t testing.TB, root, outside string) {
			Mkfifo(t, filepath.Join(outside, "inc"))
			gitDir := filepath.Join(root, ".git")
			appendFile(t, filepath.Join(gitDir, "config"), "[include]\n\tpath = \""+rel(t, gitDir, filepath.Join(outside, "inc"))+"\"\n")
		}},
		{"home include.path", func(t testing.TB, root, outside string) {
			appendFile(t, filepath.Join(root, ".git", "config"), "[include]\n\tpath = ~/.gitconfig\n")
		}},
		{"includeIf", func(t testing.TB, root, outside string) {
			Mkfifo(t, filepath.Join(outside, "inc"))
			appendFile(t, filepath.Join(root, ".git", "config"), "[includeIf \"gitdir:/\"]\n\tpath = "+filepath.Join(outside, "inc")+"\n")
		}},
		{"nested include", func(t testing.TB, root, outside string) {
			Mkfifo(t, filepath.Join(outside, "inc"))
			gitDir := filepath.Join(root, ".git")
			WriteFile(t, gitDir, "inner.cfg", "[include]\n\tpath = "+filepath.Join(outside, "inc")+"\n")
			appendFile(t, filepath.Join(gitDir, "config"), "[include]\n\tpath = inner.cfg\n")
		}},
		{"config.worktree include", func(t testing.TB, root, outside string) {
			Mkfifo(t, filepath.Join(outside, "inc"))
			gitDir := filepath.Join(root, ".git")
			appendFile(t, filepath.Join(gitDir, "config"), "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tworktreeConfig = true\n")
			WriteFile(t, gitDir, "config.worktree", "[include]\n\tpath = "+filepath.Join(outside, "inc")+"\n")
		}},
	}
}

// CodePlants lists the names PlantRepositoryCode gives its markers.
var CodePlants = []string{
	"hook-post-checkout", "hook-post-index-change", "hook-reference-transaction",
	"hook-pre-commit", "hook-post-commit", "hook-pre-auto-gc", "hook-post-rewrite",
	"fsmonitor", "pager", "pager-diff", "external-diff", "ssh",
}

// PlantRepositoryCode plants, in the repository at root, hooks and
// configuration that make Git run a program: hooks (post-checkout,
// post-index-change, reference-transaction and others) in .git/hooks,
// core.fsmonitor, core.pager, pager.diff, diff.external and core.sshCommand
// in .git/config. Each program creates a file named after its entry of
// CodePlants in markers, which must be outside root.
func PlantRepositoryCode(t testing.TB, root, markers string) {
	t.Helper()
	if err := os.MkdirAll(markers, 0o755); err != nil {
		t.Fatal(err)
	}
	touch := func(name string) string { return "touch '" + filepath.Join(markers, name) + "'" }
	hooks := filepath.Join(root, ".git", "hooks")
	for _, name := range CodePlants {
		hook, ok := strings.CutPrefix(name, "hook-")
		if !ok {
			continue
		}
		p := filepath.Join(hooks, hook)
		if err := os.MkdirAll(hooks, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+touch(name)+"\ncat >/dev/null\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sh := func(name string) string { return "\"sh -c \\\"" + touch(name) + "\\\" --\"" }
	appendFile(t, filepath.Join(root, ".git", "config"), "[core]\n"+
		"\tfsmonitor = "+sh("fsmonitor")+"\n"+
		"\tpager = "+sh("pager")+"\n"+
		"\tsshCommand = "+sh("ssh")+"\n"+
		"[pager]\n\tdiff = "+sh("pager-diff")+"\n"+
		"[diff]\n\texternal = "+sh("external-diff")+"\n")
}

// PlantFilters configures, in the repository at root, a clean/smudge
// filter and a textconv driver for every file (through .git/info/attributes)
// that create files named filter-clean, filter-smudge and textconv in
// markers.
func PlantFilters(t testing.TB, root, markers string) {
	t.Helper()
	if err := os.MkdirAll(markers, 0o755); err != nil {
		t.Fatal(err)
	}
	sh := func(name string) string {
		return "\"sh -c \\\"touch '" + filepath.Join(markers, name) + "'; cat\\\" --\""
	}
	appendFile(t, filepath.Join(root, ".git", "config"), "[filter \"x\"]\n"+
		"\tclean = "+sh("filter-clean")+"\n\tsmudge = "+sh("filter-smudge")+"\n"+
		"[diff \"x\"]\n\ttextconv = "+sh("textconv")+"\n")
	WriteFile(t, filepath.Join(root, ".git", "info"), "attributes", "* filter=x diff=x\n")
}

// Markers lists the files in markers (nil when there is none).
func Markers(t testing.TB, markers string) []string {
	t.Helper()
	ents, err := os.ReadDir(markers)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
