package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Bounds of the nested repository check.
const (
	maxNestedEntries = 2_000_000 // directory entries read
)

// indexEntries lists the index: `ls-files --stage`, split into gitlink
// paths and every other path.
func (g *gitRunner) indexEntries(ctx context.Context) (gitlinks, files []string, err error) {
	res, err := g.run(ctx, indexListCap, "ls-files", "-z", "--stage")
	if err != nil {
		return nil, nil, err
	}
	if res.truncated {
		return nil, nil, fmt.Errorf("gitrepo: index listing over %d bytes: %w", indexListCap, ErrGit)
	}
	if res.exitCode != 0 {
		return nil, nil, g.failed("ls-files", res)
	}
	for _, e := range bytes.Split(res.stdout, []byte{0}) {
		if len(e) == 0 {
			continue
		}
		meta, p, ok := bytes.Cut(e, []byte{'\t'})
		if !ok {
			return nil, nil, fmt.Errorf("gitrepo: unexpected git ls-files output: %w", ErrGit)
		}
		if bytes.HasPrefix(meta, []byte("160000 ")) {
			gitlinks = append(gitlinks, string(p))
		} else {
			files = append(files, string(p))
		}
	}
	return gitlinks, files, nil
}

// checkNested returns ErrRepositoryUnsafe (wrapped) when a directory Git
// would look at while listing untracked files holds a .git leading outside
// the allowed directories, or a .gitignore or .gitattributes Git would
// block on (checkPerDirFile). `ls-files --others` (and `git status`) asks of
// every untracked directory it meets whether it is a nested repository,
// which means reading the HEAD and commondir its .git names; it meets the
// untracked directories inside tracked ones, and descends into those that
// are not ignored. This walks the same directories: tracked ones from the
// index, untracked ones level by level, asking `git check-ignore` (which
// looks at no nested repository) which of them Git skips. It reads
// directory listings only, and a nested .git only after checking where it
// leads.
func (g *gitRunner) checkNested(ctx context.Context, gitlinks, files []string) error {
	tracked := map[string]bool{"": true}
	for _, f := range files {
		for d := path.Dir(f); d != "." && !tracked[d]; d = path.Dir(d) {
			tracked[d] = true
		}
	}
	skip := map[string]bool{}
	for _, l := range gitlinks {
		skip[l] = true // checkSubmodule's business
	}
	entries := 0
	level := []string{""} // directories Git lists: tracked, or untracked and not ignored
	for len(level) > 0 {
		var next, untracked []string
		for _, dir := range level {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("gitrepo: check nested repositories: %w", err)
			}
			ents, err := os.ReadDir(filepath.Join(g.repo.WorkTree, filepath.FromSlash(dir)))
			if err != nil {
				continue // Git cannot list it either
			}
			entries += len(ents)
			if entries > maxNestedEntries {
				return fmt.Errorf("gitrepo: work tree over %d entries to check: %w", maxNestedEntries, ErrGit)
			}
			for _, e := range ents {
				if err := g.repo.checkPerDirFile(dir, e); err != nil {
					return err
				}
				// Git treats a symlink as a file, and never lists .git.
				if !e.IsDir() || e.Name() == ".git" {
					continue
				}
				p := path.Join(dir, e.Name())
				switch {
				case skip[p]:
				case tracked[p]:
					next = append(next, p)
				default:
					nested, err := g.repo.checkProbe(p)
					if err != nil {
						return err
					}
					if !nested {
						untracked = append(untracked, p)
					}
				}
			}
		}
		ignored, err := g.ignored(ctx, untracked)
		if err != nil {
			return err
		}
		for _, p := range untracked {
			if !ignored[p] {
				next = append(next, p)
			}
		}
		level = next
	}
	return nil
}

// checkPerDirFile returns ErrRepositoryUnsafe when the entry e of the
// work tree directory dir (work-tree-relative, slash-separated) is a
// .gitignore or .gitattributes that is neither a regular file nor a
// symlink. Git opens those in every directory it visits (check-ignore and
// the untracked walk read each .gitignore, a diff each .gitattributes on
// its paths) with a blocking open, so a FIFO would hold Git until
// its timeout; a device is not a file to read either. Git since 2.32
// opens them with O_NOFOLLOW and never follows a symlink, but an older
// Git does: a symlink leading to a FIFO or a device is refused too. This
// runs while dir is listed, before check-ignore is asked about the
// directories below it.
func (r *Repository) checkPerDirFile(dir string, e fs.DirEntry) error {
	if e.Name() != ".gitignore" && e.Name() != ".gitattributes" {
		return nil
	}
	switch t := e.Type(); {
	case t.IsRegular():
		return nil
	case t&fs.ModeSymlink == 0:
		return unsafe("%s is a special file", e.Name())
	}
	// Stat, not open: a stat of a FIFO does not block.
	fi, err := os.Stat(filepath.Join(r.WorkTree, filepath.FromSlash(dir), e.Name()))
	if err != nil {
		return nil // dangling or unreadable: Git finds no patterns either
	}
	if fi.Mode()&(fs.ModeNamedPipe|fs.ModeDevice|fs.ModeCharDevice) != 0 {
		return unsafe("%s leads to a special file", e.Name())
	}
	return nil
}

// ignored returns which of paths (untracked directories) Git's exclude
// rules ignore.
func (g *gitRunner) ignored(ctx context.Context, paths []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(paths) == 0 {
		return out, nil
	}
	var in bytes.Buffer
	for _, p := range paths {
		in.WriteString("./" + p)
		in.WriteByte(0)
	}
	res, err := g.runInput(ctx, listCap, in.Bytes(), "check-ignore", "-z", "--stdin")
	if err != nil {
		return nil, err
	}
	if res.truncated || res.exitCode > 1 {
		return nil, g.failed("check-ignore", res)
	}
	for _, p := range bytes.Split(res.stdout, []byte{0}) {
		if len(p) > 0 {
			out[strings.TrimPrefix(strings.TrimSuffix(string(p), "/"), "./")] = true
		}
	}
	return out, nil
}

// checkProbe checks what Git reads to decide whether the untracked
// directory rel (work-tree-relative, slash-separated) is a nested
// repository: its .git, and the HEAD and commondir of the directory that
// .git is or names. It reports whether rel holds a .git at all (Git then
// lists it as a repository and does not descend). Anything leading outside
// the allowed directories, or a FIFO, is ErrRepositoryUnsafe.
func (r *Repository) checkProbe(rel string) (nested bool, err error) {
	dotgit := filepath.Join(r.WorkTree, filepath.FromSlash(rel), ".git")
	fi, err := os.Lstat(dotgit)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return true, unsafe("nested .git: %s", errUnsafeUnknown)
	}
	v := &verifier{allowed: r.allowed, seen: map[string]bool{}}
	var dir string
	switch {
	case fi.IsDir():
		dir = dotgit
	case fi.Mode()&fs.ModeSymlink != 0 || fi.Mode().IsRegular():
		real, err := filepath.EvalSymlinks(dotgit)
		if err != nil {
			return true, nil // dangling: Git finds nothing either
		}
		if !v.inside(real) {
			return true, unsafe("nested .git points outside the allowed directories")
		}
		if st, err := os.Stat(real); err == nil && st.IsDir() {
			dir = real
			break
		}
		data, err := v.read("nested .git file", dotgit)
		if err != nil {
			return true, err
		}
		target, ok := strings.CutPrefix(strings.TrimRight(string(data), " \t\r\n"), gitfilePrefix)
		if !ok {
			return true, nil // not a gitfile: Git sees no repository
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(dotgit), target)
		}
		if dir, err = v.resolve("nested .git file gitdir", target, true); err != nil {
			return true, err
		}
	default:
		return true, unsafe("nested .git is a special file")
	}
	for _, name := range []string{"HEAD", "commondir"} {
		p := filepath.Join(dir, name)
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if name == "HEAD" {
			// A symbolic-link HEAD is read as a link, not opened.
			if st, err := os.Lstat(p); err == nil && st.Mode()&fs.ModeSymlink != 0 {
				if real, err := filepath.EvalSymlinks(p); err == nil && !v.inside(real) {
					return true, unsafe("nested HEAD points outside the allowed directories")
				}
				continue
			}
		}
		if _, err := v.resolve("nested "+name, p, false); err != nil {
			return true, err
		}
	}
	if _, err := v.commonDir(dir); err != nil {
		return true, err
	}
	return true, nil
}
