package gitrepo

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Bounds of the metadata check. Anything beyond them is refused as unsafe
// rather than half checked.
const (
	maxMetaFile      = 1 << 20 // a .git file, commondir, alternates or config file
	maxIncludeDepth  = 10      // Git's own limit for nested includes
	maxAltDepth      = 5       // Git's own limit for nested alternates
	maxWalkEntries   = 500000  // entries of .git and alternate object stores
	gitfilePrefix    = "gitdir: "
	errUnsafePrefix  = "gitrepo: repository metadata: "
	errUnsafeUnknown = "cannot be checked"
)

// Repository is a Git repository whose metadata OpenRepository checked:
// every location it names lies inside the directories allowed for it. Run
// Git in it with Git.Run, which passes exactly these locations to Git
// (GIT_DIR, GIT_COMMON_DIR, GIT_WORK_TREE), so Git does not look them up
// again. A Repository is immutable and safe for concurrent use.
type Repository struct {
	// WorkTree is the absolute, symlink-free top level of the work tree.
	WorkTree string
	// GitDir is the repository directory of that work tree: WorkTree/.git,
	// or for a linked worktree the directory its .git file names.
	GitDir string
	// CommonDir holds the objects, refs and configuration; it is GitDir
	// unless GitDir has a commondir file.
	CommonDir string

	allowed []string // canonical; WorkTree first
}

// checkSubmodule checks the submodule at the work-tree-relative,
// slash-separated path rel, when checked out, like OpenRepository with the
// same allowed directories. A path that is missing, has no .git, or is
// reached through a symlink is skipped: Git does not look into it either.
func (r *Repository) checkSubmodule(rel string) error {
	dir := filepath.Join(r.WorkTree, filepath.FromSlash(rel))
	if !strings.HasPrefix(dir, r.WorkTree+string(filepath.Separator)) {
		return unsafe("submodule path leaves the work tree")
	}
	if real, err := filepath.EvalSymlinks(dir); err != nil || real != dir {
		return nil
	}
	if _, err := os.Lstat(filepath.Join(dir, ".git")); err != nil {
		return nil
	}
	_, err := OpenRepository(dir, r.allowed...)
	if errors.Is(err, ErrRepositoryUnsafe) {
		return fmt.Errorf("gitrepo: submodule: %w", err)
	}
	return nil
}

// OpenRepository checks, without running Git, that the repository whose
// work tree top level is workTree keeps all its metadata inside workTree or
// one of the allowed directories, and returns it. It reads only files inside
// those directories, each after checking it is one: the .git file or
// directory, commondir, objects/info/alternates (recursively), the
// configuration (config and config.worktree with every include.path,
// recursively; a conditional include, includeIf.*.path, is refused
// whatever its condition) and core.worktree; and it walks .git (hooks
// excepted, which no DevSpace Git runs) and every alternate object store
// refusing symlinks that lead elsewhere, FIFOs and devices. See the package
// doc for why.
//
// Errors: ErrNotRepository when neither workTree nor any parent has a .git;
// ErrNotTopLevel when a parent has one but workTree does not;
// ErrRepositoryUnsafe when any location leaves the allowed directories, is
// not the kind of file Git expects there, or cannot be checked within the
// bounds, and when the configuration includes a file under a condition;
// all wrapped, their text meant for logs. os.ErrInvalid (wrapped)
// when an allowed directory is not absolute; a filesystem error when
// workTree or an allowed directory cannot be resolved.
func OpenRepository(workTree string, allowed ...string) (*Repository, error) {
	wt, err := canonical(workTree)
	if err != nil {
		return nil, fmt.Errorf("gitrepo: resolve work tree: %w", err)
	}
	v := &verifier{allowed: []string{wt}, seen: map[string]bool{}}
	for _, a := range allowed {
		if !filepath.IsAbs(a) {
			return nil, fmt.Errorf("gitrepo: allowed directory %q is not absolute: %w", a, os.ErrInvalid)
		}
		c, err := canonical(a)
		if err != nil {
			return nil, fmt.Errorf("gitrepo: resolve allowed directory: %w", err)
		}
		v.allowed = append(v.allowed, c)
	}
	repo := &Repository{WorkTree: wt, allowed: v.allowed}
	if repo.GitDir, err = v.gitDir(wt); err != nil {
		return nil, err
	}
	if repo.CommonDir, err = v.commonDir(repo.GitDir); err != nil {
		return nil, err
	}
	for _, dir := range []string{repo.GitDir, repo.CommonDir} {
		if err := v.walk(dir, true); err != nil {
			return nil, err
		}
	}
	if err := v.alternates(filepath.Join(repo.CommonDir, "objects"), 0); err != nil {
		return nil, err
	}
	for _, cfg := range []string{filepath.Join(repo.CommonDir, "config"), filepath.Join(repo.GitDir, "config.worktree")} {
		if err := v.config(cfg, repo, 0); err != nil {
			return nil, err
		}
	}
	return repo, nil
}

// unsafe builds an ErrRepositoryUnsafe naming what was wrong (for logs).
func unsafe(what string, args ...any) error {
	return fmt.Errorf(errUnsafePrefix+what+": %w", append(args, ErrRepositoryUnsafe)...)
}

type verifier struct {
	allowed []string
	seen    map[string]bool // walked directories
	entries int
}

// inside reports whether the canonical path p is one of the allowed
// directories or below one.
func (v *verifier) inside(p string) bool {
	for _, a := range v.allowed {
		if p == a || strings.HasPrefix(p, a+string(filepath.Separator)) || a == "/" {
			return true
		}
	}
	return false
}

// resolve returns the symlink-free form of p after checking that it lies
// inside the allowed directories and is a directory (dir) or a regular
// file (!dir). what names p in the error.
func (v *verifier) resolve(what, p string, dir bool) (string, error) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", unsafe("%s cannot be resolved", what)
	}
	if !v.inside(real) {
		return "", unsafe("%s points outside the allowed directories", what)
	}
	fi, err := os.Lstat(real)
	if err != nil {
		return "", unsafe("%s: %s", what, errUnsafeUnknown)
	}
	if dir && !fi.IsDir() || !dir && !fi.Mode().IsRegular() {
		return "", unsafe("%s is not a %s", what, map[bool]string{true: "directory", false: "regular file"}[dir])
	}
	return real, nil
}

// gitDir finds the repository directory of the work tree wt.
func (v *verifier) gitDir(wt string) (string, error) {
	dotgit := filepath.Join(wt, ".git")
	fi, err := os.Lstat(dotgit)
	if errors.Is(err, fs.ErrNotExist) {
		// Not a top level. Whether it is inside a repository only changes
		// the error; only existence is checked, nothing is opened.
		if filepath.Base(wt) == ".git" {
			return "", fmt.Errorf("gitrepo: %w", ErrNotTopLevel)
		}
		for d := filepath.Dir(wt); ; d = filepath.Dir(d) {
			if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
				return "", fmt.Errorf("gitrepo: %w", ErrNotTopLevel)
			}
			if d == filepath.Dir(d) {
				return "", fmt.Errorf("gitrepo: %w", ErrNotRepository)
			}
		}
	}
	if err != nil {
		return "", unsafe(".git: %s", errUnsafeUnknown)
	}
	if fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 {
		if real, err := v.resolve(".git", dotgit, true); err == nil {
			return real, nil
		} else if fi.IsDir() {
			return "", err
		}
	}
	// A .git file: "gitdir: <path>", relative to the work tree.
	data, err := v.read(".git file", dotgit)
	if err != nil {
		return "", err
	}
	target, ok := strings.CutPrefix(strings.TrimRight(string(data), " \t\r\n"), gitfilePrefix)
	if !ok || target == "" || strings.ContainsAny(target, "\n\x00") {
		return "", unsafe(".git file is malformed")
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(wt, target)
	}
	return v.resolve(".git file gitdir", target, true)
}

// commonDir returns the directory gitDir's commondir file names, or gitDir.
func (v *verifier) commonDir(gitDir string) (string, error) {
	p := filepath.Join(gitDir, "commondir")
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return gitDir, nil
	}
	data, err := v.read("commondir", p)
	if err != nil {
		return "", err
	}
	target := strings.TrimRight(string(data), "\r\n")
	if target == "" || strings.ContainsAny(target, "\n\x00") {
		return "", unsafe("commondir is malformed")
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(gitDir, target)
	}
	return v.resolve("commondir", target, true)
}

// read returns the content of the metadata file p after checking that it
// resolves inside the allowed directories to a regular file of bounded
// size. The file is opened non-blocking and checked again once open, so a
// FIFO swapped in meanwhile cannot stall it.
func (v *verifier) read(what, p string) ([]byte, error) {
	real, err := v.resolve(what, p, false)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(real, fileOpenFlags, 0)
	if err != nil {
		return nil, unsafe("%s: %s", what, errUnsafeUnknown)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, unsafe("%s is not a regular file", what)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxMetaFile+1))
	if err != nil {
		return nil, unsafe("%s: %s", what, errUnsafeUnknown)
	}
	if len(data) > maxMetaFile {
		return nil, unsafe("%s is over %d bytes", what, maxMetaFile)
	}
	return data, nil
}

// walk checks every entry below dir: directories are descended into,
// regular files are fine, symlinks must resolve inside the allowed
// directories (a symlinked directory is walked too), sockets are fine
// (opening one fails at once), anything else (FIFO, device) is refused: Git
// opening a FIFO blocks. In a repository directory (gitDir set), the
// hooks directory is skipped: every DevSpace Git has core.hooksPath
// /dev/null and never reads it.
func (v *verifier) walk(dir string, gitDir bool) error {
	if v.seen[dir] {
		return nil
	}
	v.seen[dir] = true
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return unsafe("walk %s: %s", filepath.Base(p), errUnsafeUnknown)
		}
		v.entries++
		if v.entries > maxWalkEntries {
			return unsafe("more than %d entries to check", maxWalkEntries)
		}
		switch t := d.Type(); {
		case t.IsDir():
			if p != dir && v.seen[p] {
				return filepath.SkipDir
			}
			if gitDir && p == filepath.Join(dir, "hooks") {
				return filepath.SkipDir
			}
			return nil
		case t.IsRegular(), t&fs.ModeSocket != 0:
			// Opening a socket fails at once; Git's own fsmonitor daemon
			// keeps one in .git.
			return nil
		case t&fs.ModeSymlink != 0:
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				return unsafe("dangling symlink in repository metadata")
			}
			if !v.inside(real) {
				return unsafe("symlink in repository metadata points outside the allowed directories")
			}
			fi, err := os.Stat(real)
			switch {
			case err != nil:
				return unsafe("symlink in repository metadata: %s", errUnsafeUnknown)
			case fi.IsDir():
				return v.walk(real, false)
			case !fi.Mode().IsRegular() && fi.Mode()&fs.ModeSocket == 0:
				return unsafe("repository metadata holds a special file")
			}
			return nil
		}
		return unsafe("repository metadata holds a special file")
	})
}

// alternates checks the alternate object stores objects/info/alternates
// names, recursively as Git follows them.
func (v *verifier) alternates(objects string, depth int) error {
	p := filepath.Join(objects, "info", "alternates")
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if depth >= maxAltDepth {
		return unsafe("alternates nested deeper than %d", maxAltDepth)
	}
	data, err := v.read("alternates", p)
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '"' {
			// A C-quoted path: any alternate that needs quoting is refused
			// rather than unquoted differently from Git.
			return unsafe("quoted alternate")
		}
		if !filepath.IsAbs(line) {
			line = filepath.Join(objects, line)
		}
		real, err := v.resolve("alternate object directory", line, true)
		if err != nil {
			return err
		}
		if err := v.walk(real, false); err != nil {
			return err
		}
		if err := v.alternates(real, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// config checks the configuration file p (absent is fine) and, recursively,
// every file it includes: it refuses conditional includes, and checks the
// variables naming a location Git opens: include paths, core.worktree
// (relative to the repository directory), core.excludesFile,
// core.attributesFile and diff.orderFile (relative to the work tree, where
// Git runs).
func (v *verifier) config(p string, repo *Repository, depth int) error {
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) && depth == 0 {
		return nil
	}
	if depth > maxIncludeDepth {
		return unsafe("includes nested deeper than %d", maxIncludeDepth)
	}
	data, err := v.read("configuration file", p)
	if err != nil {
		return err
	}
	entries, err := parseConfig(data)
	if err != nil {
		return unsafe("configuration file: %v", err)
	}
	for _, e := range entries {
		switch {
		case (e.section == "include" || e.section == "includeif") && e.name == "path":
			if !e.hasValue || e.value == "" {
				continue // Git ignores an empty include
			}
			if e.section == "includeif" {
				// Its condition (onbranch, gitdir, hasconfig) holds in some
				// of the contexts DevSpace's Git runs in and not in others,
				// and may change between a check and the run (a branch
				// switch): what the check saw would not be what Git uses.
				return unsafe("conditional include (includeIf)")
			}
			target := e.value
			if strings.HasPrefix(target, "~") || strings.HasPrefix(target, "%(prefix)/") {
				return unsafe("include path relative to a home or install directory")
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(p), target)
			}
			if _, err := os.Lstat(target); errors.Is(err, fs.ErrNotExist) && v.inside(filepath.Clean(target)) && v.parentInside(target) {
				continue // Git skips a missing include
			}
			if err := v.config(target, repo, depth+1); err != nil {
				return err
			}
		case e.section == "core" && e.subsection == "" && e.name == "worktree":
			if !e.hasValue || e.value == "" {
				continue
			}
			target := e.value
			if strings.HasPrefix(target, "~") {
				return unsafe("core.worktree relative to a home directory")
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(repo.GitDir, target)
			}
			if _, err := v.resolve("core.worktree", target, true); err != nil {
				return err
			}
		case e.subsection == "" && (e.section == "core" && (e.name == "excludesfile" || e.name == "attributesfile") ||
			e.section == "diff" && e.name == "orderfile"):
			if !e.hasValue || e.value == "" {
				continue
			}
			what, target := e.section+"."+e.name, e.value
			if strings.HasPrefix(target, "~") || strings.HasPrefix(target, "%(prefix)/") {
				return unsafe("%s relative to a home or install directory", what)
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(repo.WorkTree, target)
			}
			if _, err := os.Lstat(target); errors.Is(err, fs.ErrNotExist) && v.inside(filepath.Clean(target)) && v.parentInside(target) {
				continue
			}
			if _, err := v.resolve(what, target, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// parentInside reports whether the nearest existing parent of p resolves
// inside the allowed directories, so that creating p later would not
// create it elsewhere through a symlink.
func (v *verifier) parentInside(p string) bool {
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			return v.inside(real)
		}
		if d == filepath.Dir(d) {
			return false
		}
	}
}

// canonical returns the absolute, symlink-free form of an existing
// directory.
func canonical(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%w: not a directory", os.ErrInvalid)
	}
	return real, nil
}
