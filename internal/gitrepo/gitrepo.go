// Package gitrepo runs Git in a Project repository, or a managed worktree
// of one, without letting the repository run code: before any Git starts,
// OpenRepository checks that the repository's metadata stays inside the
// directories allowed for it; every invocation (Git) runs with everything
// the repository could configure as a program switched off, in an
// environment built from scratch; before Git compares work tree content,
// CheckContent makes sure the configuration Git will use names no
// executable filter or driver; and with GitOptions.Confine each invocation
// runs in a kernel sandbox, so that what the repository makes Git run
// anyway can do no more than that invocation may. show_changes (package
// review) and managed worktrees (package worktree) run all their Git here.
//
// The repository (including .git/config, which apply_patch can write) is
// untrusted input, and a grant with only project:read may ask for a
// review. The rules, and why:
//
//   - Before any Git runs, OpenRepository checks the repository's metadata
//     without running Git: the .git file or directory, commondir,
//     alternates, core.worktree and the other location variables, includes
//     and includeIf (also nested and in config.worktree), symlinks and
//     special files under .git. Everything must stay inside the Project root
//     (for a managed worktree: the worktree and its source Project root);
//     otherwise ErrRepositoryUnsafe, and Git never starts. Git opening a
//     file elsewhere could read another repository or block on a FIFO; a
//     write grant (or a command confined to the Project) can plant such
//     metadata. docs/decisions.md ("Git runs only in verified
//     repositories") has the list and why the configuration is parsed here
//     rather than by `git config`.
//   - Every invocation (one runner, git.go) is `git --no-pager
//     --no-optional-locks --literal-pathspecs --no-replace-objects` with
//     `-c` overrides that win over the repository's configuration:
//     core.fsmonitor=false, core.untrackedCache=false,
//     core.hooksPath=/dev/null, core.pager=cat, core.editor=:,
//     core.sshCommand=false, credential.helper=, diff.external=, gc.auto=0,
//     maintenance.auto=false, submodule.recurse=false, protocol.allow=never
//     (and protocol.<name>.allow=never for every built-in transport) and
//     others (see hardening in git.go). Comparing a checked-out submodule's
//     commit still reads its HEAD and refs through its .git, which is work
//     tree content a write grant can point anywhere: CheckContent checks
//     every gitlink whose directory holds a .git, and every nested
//     repository Git would probe while listing untracked files, like the
//     repository itself (ErrRepositoryUnsafe), and every .gitignore and
//     .gitattributes in the directories Git visits: Git opens them with a
//     blocking open, so one that is not a regular file or a symlink is
//     ErrRepositoryUnsafe too.
//   - The environment is built from scratch: PATH (the server's), the
//     verified GIT_DIR, GIT_COMMON_DIR and GIT_WORK_TREE (Git does not look
//     them up again), GIT_CEILING_DIRECTORIES, HOME and XDG paths pointing
//     at /dev/null, LANG=LC_ALL=C, GIT_CONFIG_NOSYSTEM=1,
//     GIT_CONFIG_SYSTEM=GIT_CONFIG_GLOBAL=/dev/null, GIT_ATTR_NOSYSTEM=1,
//     GIT_OPTIONAL_LOCKS=0, GIT_TERMINAL_PROMPT=0, GIT_NO_LAZY_FETCH=1
//     (Git 2.44+; on older Git the protocol.*.allow=never settings stop a
//     partial clone's lazy fetch), GIT_NO_REPLACE_OBJECTS=1, pagers cat,
//     editor ":".
//     No inherited GIT_* variable (GIT_INDEX_FILE, GIT_EXTERNAL_DIFF,
//     GIT_CONFIG_PARAMETERS…) reaches Git. System and
//     global configuration, attributes and excludes of the server's user are
//     therefore not read either: they could inject helpers, and what Git
//     does must not depend on who runs the server. The repository's own
//     configuration (.git/config, config.worktree and their includes, all
//     verified) is read, which is what the filter check below inspects.
//     A conditional include (includeIf) is refused (ErrRepositoryUnsafe):
//     its condition (onbranch, gitdir, hasconfig) can hold where Git runs
//     and not where the check ran — in a worktree, on another branch, after
//     a branch switch — so what the check saw would not be what Git uses.
//   - safe.directory is set on the command line to the verified work tree,
//     repository and common directories, so a root owned by another UID (a
//     bind mount in the container) can be used: the owner approved that
//     root, and the rules here, not Git's ownership check, keep its
//     configuration from running code.
//   - CheckContent refuses with ErrUnsafeFilters when the configuration Git
//     would use defines any filter.<driver>.clean, .smudge or .process, any
//     diff.<driver>.textconv or .command, or any merge.<driver>.driver —
//     whether or not .gitattributes references it. Checking references
//     would mean evaluating attributes (every directory's .gitattributes,
//     info/attributes, macros) exactly as Git does; "configured at all" is
//     simpler and never weaker. diff-files runs clean filters on worktree
//     files whose stat data changed, so this check is what keeps them from
//     running. A repository using Git LFS with a local `git lfs install` is
//     refused for the same reason. Git is asked in the context it will run
//     in: a new worktree is checked from inside it, with its own HEAD and
//     repository directory, before its checkout.
//   - The check and what follows are separate Git invocations. A review's
//     caller holds the root's read lock, which excludes apply_patch, but a
//     command running meanwhile can change .git/config between them, and
//     Git then runs the filter it adds. So with GitOptions.Confine every
//     invocation runs in a Landlock domain (process.Manager.Confine): the
//     repository's directories read-only, TCP and everything else denied;
//     Git.RunWriting names what a writing invocation may write, the
//     narrowest directories it needs (never .git itself for an invocation
//     that reads work tree content: it holds hooks/ and config, which the
//     owner's Git runs). What the repository makes Git run can do no more
//     than a read-only command, or that invocation's write.
//   - Every invocation has stdin from /dev/null (or the caller's input),
//     runs in its own process group, is killed (the whole group) when
//     GitOptions.Timeout expires or when its output passes its cap, and has
//     its output read through a bounded writer.
package gitrepo

import (
	"errors"
	"os/exec"

	"github.com/devspace-dev/devspace/internal/fault"
	"github.com/devspace-dev/devspace/internal/sandbox"
)

// Errors of this package, which owns them, each with its code (ErrGit
// none: an internal error). They come wrapped with lowercase context meant
// for logs (it may contain Git's first stderr line, which can name host
// paths, so never show it to a client: their codes' guidance quotes
// nothing); test them with errors.Is.
var (
	// ErrNotRepository: the root is not inside any Git work tree.
	ErrNotRepository = fault.New("repository_review_unavailable", "not a git repository")
	// ErrNotTopLevel: the root is inside a Git repository but is not its
	// work tree's top level (a subdirectory, or a directory inside .git).
	ErrNotTopLevel = fault.New("repository_review_unavailable", "project root is not the git top level")
	// ErrUnsafeFilters: the repository configures executable clean, smudge or
	// process filters, textconv or external diff drivers, or merge drivers,
	// which Git could run while diffing; nothing was diffed.
	ErrUnsafeFilters = fault.New("repository_review_unsafe", "repository configures executable git filters or diff drivers")
	// ErrRepositoryUnsafe: the repository's metadata points outside the
	// locations allowed for it, its configuration includes a file under a
	// condition (includeIf), or a work tree .gitignore or .gitattributes
	// Git would open is a special file (a FIFO would block it); Git was not
	// run, or not past the checks.
	ErrRepositoryUnsafe = fault.New("repository_unsafe", "repository metadata points outside the project")
	// ErrGit: Git could not be started, failed, or printed something this
	// package could not parse.
	ErrGit = errors.New("git failed")
)

// Confiner makes cmd run confined to p (see GitOptions.Confine).
type Confiner func(cmd *exec.Cmd, p sandbox.Policy) error
