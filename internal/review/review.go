// Package review produces a read-only Git review of a Project root: the
// staged, unstaged and untracked changes behind show_changes
// `source: repository` (docs/design.md §7). It knows nothing about MCP; the tool
// handler pages Changes.Diff with Page and signs cursors over
// Changes.Revision.
//
// Reviewing must not let repository content run code or change the
// repository, because a grant with only project:read may ask for it while the
// repository (including .git/config, which apply_patch can write) is
// untrusted input. The rules, and why:
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
//     metadata, and DevSpace's Git is not confined. docs/decisions.md
//     ("Git runs only in verified repositories") has the list and why the
//     configuration is parsed here rather than by `git config`.
//   - Only plumbing runs: rev-parse, config, diff-index --cached, diff-files
//     and ls-files. Porcelain `git diff` and `git status` refresh and rewrite
//     .git/index even with --no-optional-locks (Git 2.39), plumbing never
//     does. Stat-only differences (a touched but unchanged file), which
//     plumbing lists without a line count, are dropped.
//   - Every invocation (this package's and, through Git.Run, the worktree
//     package's: one runner, git.go) is `git --no-pager --no-optional-locks
//     --literal-pathspecs --no-replace-objects` with `-c` overrides that win
//     over the repository's configuration: core.fsmonitor=false,
//     core.untrackedCache=false, core.hooksPath=/dev/null, core.pager=cat,
//     core.editor=:, core.sshCommand=false, credential.helper=,
//     diff.external=, gc.auto=0, maintenance.auto=false,
//     submodule.recurse=false, protocol.allow=never (and
//     protocol.<name>.allow=never for every built-in transport) and
//     others (see hardening in git.go); diffs add --no-ext-diff
//     --no-textconv --no-color and --ignore-submodules=dirty (a dirty check
//     would run `git status` inside the submodule, under the submodule's
//     own config). Comparing a checked-out submodule's commit still reads
//     its HEAD and refs through its .git, which is work tree content a
//     write grant can point anywhere: before any diff, every gitlink whose
//     directory holds a .git is checked like the repository itself
//     (ErrRepositoryUnsafe), and so is every .gitignore and
//     .gitattributes in the directories Git visits: Git opens them
//     with a blocking open, so one that is not a regular file or a
//     symlink is ErrRepositoryUnsafe too.
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
//     therefore not read either: they could inject helpers, and the review
//     must not depend on who runs the server. The repository's own
//     configuration (.git/config, config.worktree and their includes, all
//     verified) is read, which is what the filter check below inspects.
//     A conditional include (includeIf) is refused (ErrRepositoryUnsafe):
//     its condition (onbranch, gitdir, hasconfig) can hold where Git runs
//     and not where the check ran — in a worktree, on another branch, after
//     a branch switch — so what the check saw would not be what Git uses.
//   - safe.directory is set on the command line to the verified work tree,
//     repository and common directories, so a root owned by another UID (a
//     bind mount in the container) can be reviewed: the owner approved that
//     root, and the rules here, not Git's ownership check, keep its
//     configuration from running code.
//   - Changes refuses with ErrUnsafeFilters when the configuration Git would
//     use defines any filter.<driver>.clean, .smudge or .process, any
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
//   - The check and the diffs are separate Git invocations. The caller holds
//     the root's read lock, which excludes apply_patch, but a command
//     running meanwhile can change .git/config between them, and Git then
//     runs the filter it adds. So with Options.Confine every invocation
//     runs in a Landlock domain (process.Manager.Confine): the
//     repository's directories read-only, TCP and everything else denied;
//     Git.RunWriting names what a writing invocation may write, the
//     narrowest directories it needs (never .git itself for an invocation
//     that reads work tree content: it holds hooks/ and config, which the
//     owner's Git runs). What the repository makes Git run can do no more
//     than a read-only command, or that invocation's write.
//   - Untracked files come from `ls-files --others --exclude-standard -z` and
//     are rendered as new-file diffs by this package, reading them through an
//     os.Root (bounded, FIFOs and devices skipped, symlinks shown as their
//     target like Git does), never through `git diff --no-index`.
//   - Every invocation has stdin from /dev/null, runs in its own process
//     group, is killed (the whole group) when Options.Timeout expires or
//     when its output passes its cap, and has its output read through a
//     bounded writer.
package review

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/devspace-dev/devspace/internal/sandbox"
)

// Defaults used when the corresponding Options field is zero.
const (
	DefaultTimeout      = 20 * time.Second
	DefaultMaxDiffBytes = 16 << 20
	DefaultMaxFiles     = 10000
	// DefaultPageBytes is the show_changes page size (docs/design.md §9), used by
	// Page when pageBytes is not positive.
	DefaultPageBytes = 32000
)

// listCap bounds the listing part (raw status, numstat, untracked names,
// configuration) of one Git invocation's output.
const listCap = 8 << 20

// Errors returned by Changes. The review package owns them; the MCP edge maps
// ErrNotRepository and ErrNotTopLevel to repository_review_unavailable,
// ErrUnsafeFilters to a safety error and ErrGit to an internal one. Changes
// wraps them with lowercase context meant for logs (it may contain Git's
// first stderr line, which can name host paths, so never show it to a
// client); test them with errors.Is.
var (
	// ErrNotRepository: the root is not inside any Git work tree.
	ErrNotRepository = errors.New("not a git repository")
	// ErrNotTopLevel: the root is inside a Git repository but is not its
	// work tree's top level (a subdirectory, or a directory inside .git).
	ErrNotTopLevel = errors.New("project root is not the git top level")
	// ErrUnsafeFilters: the repository configures executable clean, smudge or
	// process filters, textconv or external diff drivers, or merge drivers,
	// which Git could run while diffing; nothing was diffed.
	ErrUnsafeFilters = errors.New("repository configures executable git filters or diff drivers")
	// ErrRepositoryUnsafe: the repository's metadata points outside the
	// locations allowed for it, its configuration includes a file under a
	// condition (includeIf), or a work tree .gitignore or .gitattributes
	// Git would open is a special file (a FIFO would block it); Git was not
	// run, or not past the checks.
	ErrRepositoryUnsafe = errors.New("repository metadata points outside the project")
	// ErrGit: Git could not be started, failed, or printed something this
	// package could not parse.
	ErrGit = errors.New("git failed")
	// ErrTimeout: a review took longer than Options.Timeout (it wraps
	// context.DeadlineExceeded too).
	ErrTimeout = errors.New("git took longer than the review timeout")
)

// timedOut wraps err with ErrTimeout when it is the review's own timeout
// (the caller's context, parent, is still live).
func timedOut(parent context.Context, err error) error {
	if err != nil && errors.Is(err, context.DeadlineExceeded) && parent.Err() == nil {
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	return err
}

// Options configures a Reviewer. The zero value means "all defaults".
type Options struct {
	// Git is the git executable: a path, or a name looked up in the server's
	// PATH. Empty means "git".
	Git string
	// Timeout bounds one whole Changes call, all Git invocations and file
	// reads included. Zero means DefaultTimeout.
	Timeout time.Duration
	// MaxDiffBytes caps Changes.Diff. Beyond it the diff is cut at a line
	// boundary and Changes.Truncated is set. Zero means DefaultMaxDiffBytes.
	MaxDiffBytes int64
	// MaxFiles caps Changes.Files (tracked changes first, then untracked
	// files). Beyond it Changes.Truncated is set. Zero means DefaultMaxFiles.
	MaxFiles int
	// Withhold reports whether the content of a root-relative, slash-separated
	// path must be left out of the diff (for example project.IsSensitive):
	// the file is still listed, with FileChange.Withheld set, and its diff
	// section keeps only its header and a note. Nil withholds nothing.
	Withhold func(path string) bool
	// Confine, when set, makes each Git invocation run in a kernel
	// sandbox (process.Manager.Confine): p lists the repository's
	// directories, read-only, and for Git.RunWriting the directories the
	// invocation writes.
	// Whatever the repository makes Git run then has no more access than
	// that. Nil runs Git unconfined. An error refuses the invocation.
	Confine Confiner
}

// Confiner makes cmd run confined to p (see Options.Confine).
type Confiner func(cmd *exec.Cmd, p sandbox.Policy) error

// Reviewer runs reviews. It holds no mutable state and is safe for
// concurrent use; the zero value is not usable, use New.
type Reviewer struct {
	git          string
	timeout      time.Duration
	maxDiffBytes int64
	maxFiles     int
	withhold     func(string) bool
	confine      Confiner
	pathEnv      string
}

// New returns a Reviewer with opts' zero fields replaced by the defaults. It
// captures the server's PATH once, for Git to find its helpers.
func New(opts Options) *Reviewer {
	r := &Reviewer{
		git:          opts.Git,
		timeout:      opts.Timeout,
		maxDiffBytes: opts.MaxDiffBytes,
		maxFiles:     opts.MaxFiles,
		withhold:     opts.Withhold,
		confine:      opts.Confine,
		pathEnv:      os.Getenv("PATH"),
	}
	if r.git == "" {
		r.git = "git"
	}
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
	}
	if r.maxDiffBytes <= 0 {
		r.maxDiffBytes = DefaultMaxDiffBytes
	}
	if r.maxFiles <= 0 {
		r.maxFiles = DefaultMaxFiles
	}
	if r.pathEnv == "" {
		r.pathEnv = "/usr/local/bin:/usr/bin:/bin"
	}
	return r
}

// Changes is one review of a repository.
type Changes struct {
	// Revision is "sha256:" of the head, the file list, the truncation flag
	// and the diff text: it changes whenever anything visible in the review
	// changes, so a cursor bound to it detects a changed repository. Content
	// of untracked files beyond the diff budget is not covered.
	Revision string `json:"revision"`
	// Head is the first 12 hex digits of the HEAD commit, or "" before the
	// first commit.
	Head string `json:"head,omitempty"`
	// Files lists every changed path once, sorted by path (byte order).
	Files []FileChange `json:"files"`
	// Diff is the unified diff: staged (HEAD, or the empty tree, against the
	// index), then unstaged (index against the work tree), then untracked
	// files as new-file diffs. Page it with Page.
	Diff string `json:"-"`
	// Truncated reports that Diff or Files was cut at a cap.
	Truncated bool `json:"truncated,omitempty"`
}

// FileChange describes one changed path.
type FileChange struct {
	// Path is root-relative and slash-separated, as Git spells it (raw
	// bytes, not quoted). For a rename it is the new path.
	Path string `json:"path"`
	// OldPath is the source of a staged rename, otherwise empty.
	OldPath string `json:"oldPath,omitempty"`
	// Status is added, modified, deleted, renamed, typechange, unmerged or
	// untracked. A path changed both in the index and in the work tree has
	// its staged status.
	Status string `json:"status"`
	// Staged and Unstaged say which side changed the path; both are false
	// for an untracked file.
	Staged   bool `json:"staged"`
	Unstaged bool `json:"unstaged"`
	// Added and Removed count lines over both sides. For an untracked file
	// they count the rendered lines, which is all of them unless the diff
	// was truncated.
	Added   int `json:"added"`
	Removed int `json:"removed"`
	// Binary is set when Git (or, for untracked files, Git's NUL heuristic)
	// considers the content binary; no lines are counted then.
	Binary bool `json:"binary,omitempty"`
	// Withheld is set when Options.Withhold kept the content out of Diff.
	Withheld bool `json:"withheld,omitempty"`
}

// Changes returns the repository's staged, unstaged and untracked changes for
// a Project root that is exactly its Git top level (also before the first
// commit). It never writes to the repository.
//
// It first checks the repository's metadata with OpenRepository, allowing
// nothing outside rootPath, and runs no Git when that fails.
//
// Errors: ErrNotRepository, ErrNotTopLevel, ErrRepositoryUnsafe,
// ErrUnsafeFilters and ErrGit (wrapped); the error of ctx, also
// ErrTimeout (wrapping context.DeadlineExceeded) when Options.Timeout
// expires; a filesystem error when rootPath cannot be resolved. It never
// returns (nil, nil).
func (r *Reviewer) Changes(ctx context.Context, rootPath string) (_ *Changes, err error) {
	defer func(parent context.Context) { err = timedOut(parent, err) }(ctx)
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()

	repo, err := OpenRepository(rootPath)
	if err != nil {
		return nil, err
	}
	g := &gitRunner{r: r, repo: repo}
	format, err := g.checkRepository(ctx)
	if err != nil {
		return nil, err
	}
	head, err := g.head(ctx)
	if err != nil {
		return nil, err
	}
	if err := g.checkContent(ctx); err != nil {
		return nil, err
	}

	b := &builder{r: r, files: map[string]*FileChange{}}
	base := head
	if base == "" {
		base = emptyTree(format)
	}
	if err := b.side(ctx, g, true, "diff-index", "--cached", "-M", base); err != nil {
		return nil, err
	}
	if err := b.side(ctx, g, false, "diff-files", "--ignore-submodules=dirty"); err != nil {
		return nil, err
	}
	if err := b.untracked(ctx, g, repo.WorkTree); err != nil {
		return nil, err
	}

	files := b.list() // may set b.truncated
	c := &Changes{Files: files, Diff: b.diff.String(), Truncated: b.truncated}
	if head != "" {
		c.Head = head[:min(12, len(head))]
	}
	c.Revision = revision(c)
	return c, nil
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

// emptyTree returns the ID of the empty tree in the repository's object
// format, the base of the staged diff before the first commit.
func emptyTree(format string) string {
	if format == "sha256" {
		return "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"
	}
	return "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
}

// revision digests everything a client sees of c.
func revision(c *Changes) string {
	meta, _ := json.Marshal(struct {
		Head      string       `json:"head"`
		Files     []FileChange `json:"files"`
		Truncated bool         `json:"truncated"`
	}{c.Head, c.Files, c.Truncated})
	h := sha256.New()
	h.Write([]byte("devspace review v1\x00"))
	h.Write(meta)
	h.Write([]byte{0})
	h.Write([]byte(c.Diff))
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// builder accumulates one review.
type builder struct {
	r         *Reviewer
	files     map[string]*FileChange
	tracked   int
	diff      bytes.Buffer
	truncated bool // Diff or Files was cut
	diffFull  bool // Diff was cut: render nothing more
}

// remaining is how many more bytes Diff may take.
func (b *builder) remaining() int64 {
	return max(0, b.r.maxDiffBytes-int64(b.diff.Len()))
}

// side runs one plumbing diff (staged or unstaged) and merges its listing and
// patch into b.
func (b *builder) side(ctx context.Context, g *gitRunner, staged bool, cmd string, args ...string) error {
	budget := b.remaining()
	full := []string{cmd, "-z", "--raw", "--numstat", "--no-ext-diff", "--no-textconv", "--no-color",
		"--submodule=short", "--src-prefix=a/", "--dst-prefix=b/"}
	if budget > 0 {
		full = append(full, "-p")
	}
	full = append(full, args...)
	full = append(full, "--")
	res, err := g.run(ctx, listCap+budget, full...)
	if err != nil {
		return err
	}
	if res.exitCode != 0 && !res.truncated {
		return g.failed(cmd, res)
	}
	out, err := parseDiff(res.stdout, !res.truncated)
	if err != nil {
		return fmt.Errorf("review: parse git %s output: %w: %w", cmd, ErrGit, err)
	}
	if !out.complete {
		b.truncated = true
	}
	withheld := map[string]bool{}
	for _, e := range out.entries {
		cnt, counted := out.counts[e.path]
		if !counted && e.status != 'U' && out.complete {
			continue // stat-only difference: nothing changed
		}
		fc := b.files[e.path]
		if fc == nil {
			fc = &FileChange{Path: e.path, OldPath: e.oldPath, Status: statusName(e.status)}
			b.files[e.path] = fc
			b.tracked++
		}
		if staged {
			fc.Staged = true
		} else {
			fc.Unstaged = true
		}
		fc.Added += cnt.added
		fc.Removed += cnt.removed
		fc.Binary = fc.Binary || cnt.binary
		if b.r.withhold != nil && (b.r.withhold(e.path) || (e.oldPath != "" && b.r.withhold(e.oldPath))) {
			fc.Withheld = true
			old := e.path
			if e.oldPath != "" {
				old = e.oldPath
			}
			withheld["diff --git "+quotePath("a/"+old)+" "+quotePath("b/"+e.path)] = true
		}
	}
	patch := out.patch
	if int64(len(patch)) > budget || (budget == 0 && len(out.entries) > 0) {
		patch = cutAtLine(patch, int(budget))
		b.truncated, b.diffFull = true, true
	}
	if len(withheld) > 0 {
		patch = withholdSections(patch, withheld)
	}
	b.diff.Write(patch)
	return nil
}

// list returns the files sorted by path, capped at MaxFiles.
func (b *builder) list() []FileChange {
	files := make([]FileChange, 0, len(b.files))
	for _, fc := range b.files {
		files = append(files, *fc)
	}
	slices.SortFunc(files, func(a, b FileChange) int { return strings.Compare(a.Path, b.Path) })
	if len(files) > b.r.maxFiles {
		files = files[:b.r.maxFiles]
		b.truncated = true
	}
	return files
}

// statusName maps a Git status letter to FileChange.Status.
func statusName(s byte) string {
	switch s {
	case 'A':
		return "added"
	case 'D':
		return "deleted"
	case 'R':
		return "renamed"
	case 'C':
		return "copied"
	case 'T':
		return "typechange"
	case 'U':
		return "unmerged"
	default:
		return "modified"
	}
}

// cutAtLine returns b cut to at most n bytes, ending after a newline (empty
// when b[:n] holds none).
func cutAtLine(b []byte, n int) []byte {
	if n >= len(b) {
		return b
	}
	i := bytes.LastIndexByte(b[:n], '\n')
	return b[:i+1]
}

// withholdNote replaces the body of a withheld file's diff section.
const withholdNote = "Content withheld: sensitive file.\n"

// withholdSections replaces the body of every section whose "diff --git"
// header line is in headers with withholdNote. Sections start at lines
// beginning with "diff --git "; body lines of a unified diff always start
// with ' ', '+', '-' or '\', so no body line can pass for a header.
func withholdSections(patch []byte, headers map[string]bool) []byte {
	var out bytes.Buffer
	skipping := false
	for len(patch) > 0 {
		line := patch
		if i := bytes.IndexByte(patch, '\n'); i >= 0 {
			line = patch[:i+1]
		}
		patch = patch[len(line):]
		text := strings.TrimSuffix(string(line), "\n")
		switch {
		case strings.HasPrefix(text, "diff --git "):
			skipping = headers[text]
			out.Write(line)
			if skipping {
				out.WriteString(withholdNote)
			}
		case strings.HasPrefix(text, "* Unmerged path "):
			skipping = false
			out.Write(line)
		case !skipping:
			out.Write(line)
		}
	}
	return out.Bytes()
}
