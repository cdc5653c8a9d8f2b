package worktree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/devspace-dev/devspace/internal/gitrepo"
)

// What each writing Git invocation of this package may write, confined
// (gitrepo.Git.RunWriting); every other invocation (rev-parse, worktree
// list, for-each-ref, the configuration check and the dirty check's
// plumbing) writes nothing. A writable directory is writable with its
// whole subtree (Landlock), so each set names the narrowest directories
// the invocation needs, and none of those that read work tree content,
// where a filter could run, holds the source's .git itself: its hooks/ and
// config are run by the owner's own Git.

// refWrites is what update-ref creating a ref writes: the loose ref and its
// lock under refs/, its reflog under logs/.
func refWrites(src *gitrepo.Repository) []string {
	return []string{filepath.Join(src.CommonDir, "refs"), filepath.Join(src.CommonDir, "logs")}
}

// refDeleteWrites is what deleting a ref writes (update-ref -d, branch -D):
// besides the ref and its reflog, Git takes packed-refs.lock next to
// packed-refs, in the common dir itself, for every deletion, and rewrites
// packed-refs when the ref was packed; branch -D also rewrites config when
// the branch has a section there. A file cannot be made creatable in a
// directory without its subdirectories, so this is the whole common dir,
// hooks/ and config included. That is bearable only because a deletion
// reads no work tree content and nothing in it runs a program the
// repository configures (hooks are off): keep it to deletions.
func refDeleteWrites(src *gitrepo.Repository) []string {
	return []string{src.CommonDir}
}

// adminWrites is what `git worktree add` and `git worktree remove` write
// for the worktree at path: the administrative directory they create or
// delete under worktrees/ (its name is Git's choice, so worktrees/ as a
// whole), and the worktree directory, which removing needs the parent of
// (the directory of this repository's managed worktrees).
func adminWrites(src *gitrepo.Repository, path string) []string {
	return []string{filepath.Dir(path), worktreesDir(src)}
}

// worktreesDir is the source's directory of worktree administrative
// directories.
func worktreesDir(src *gitrepo.Repository) string {
	return filepath.Join(src.CommonDir, "worktrees")
}

// makeMetadataDirs creates, when missing, the directories of the source's
// common dir that Create's Git writes beneath (logs/ for reflogs,
// worktrees/): a confined Git may write beneath them but could create them
// only with the common dir itself writable. They are made through an
// os.Root of the source's work tree, which holds its common dir
// (OpenRepository), so a .git a command swapped for a symlink leading out
// of the Project is not followed.
func makeMetadataDirs(src *gitrepo.Repository) error {
	rel, err := filepath.Rel(src.WorkTree, src.CommonDir)
	if err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	root, err := os.OpenRoot(src.WorkTree)
	if err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	defer root.Close()
	for _, name := range []string{"logs", "worktrees"} {
		if err := root.Mkdir(filepath.Join(rel, name), 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("worktree: create the repository's %s directory: %w", name, err)
		}
	}
	return nil
}
