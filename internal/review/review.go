// Package review produces a read-only Git review of a Project root: the
// staged, unstaged and untracked changes behind show_changes
// `source: repository` (docs/design.md §7). It knows nothing about MCP; the tool
// handler pages Changes.Diff with Page and signs cursors over
// Changes.Revision.
//
// Reviewing must not let repository content run code or change the
// repository, because a grant with only project:read may ask for it while the
// repository (including .git/config, which apply_patch can write) is
// untrusted input. Every Git invocation goes through package gitrepo, which
// checks the repository's metadata before Git starts, runs Git with
// everything the repository could configure as a program switched off
// (optionally confined), and refuses executable filters and unsafe
// submodule or nested repository metadata before Git compares work tree
// content; its package doc has those rules and why. On top of them:
//
//   - Only plumbing runs: rev-parse, config, diff-index --cached, diff-files
//     and ls-files. Porcelain `git diff` and `git status` refresh and rewrite
//     .git/index even with --no-optional-locks (Git 2.39), plumbing never
//     does. Stat-only differences (a touched but unchanged file), which
//     plumbing lists without a line count, are dropped.
//   - Diffs add --no-ext-diff --no-textconv --no-color and
//     --ignore-submodules=dirty (a dirty check would run `git status`
//     inside the submodule, under the submodule's own config).
//   - Untracked files come from `ls-files --others --exclude-standard -z` and
//     are rendered as new-file diffs by this package, reading them through an
//     os.Root (bounded, FIFOs and devices skipped, symlinks shown as their
//     target like Git does), never through `git diff --no-index`.
//   - Options.Timeout bounds the whole review, every Git invocation
//     included.
package review

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/devspace-dev/devspace/internal/fault"
	"github.com/devspace-dev/devspace/internal/gitrepo"
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

// listCap bounds the listing part (raw status, numstat, untracked names)
// of one Git invocation's output.
const listCap = 8 << 20

// ErrTimeout: a review took longer than Options.Timeout (it wraps
// context.DeadlineExceeded too). The review package owns it
// (repository_review_timeout). Changes and ChangesSince also return the
// errors of package gitrepo.
var ErrTimeout = fault.New("repository_review_timeout", "git took longer than the review timeout")

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
	// Confine, when set, confines each Git invocation of a review
	// (gitrepo.GitOptions.Confine, read-only). Nil runs Git unconfined.
	Confine gitrepo.Confiner
}

// Reviewer runs reviews. It holds no mutable state and is safe for
// concurrent use; the zero value is not usable, use New.
type Reviewer struct {
	git          *gitrepo.Git
	timeout      time.Duration
	maxDiffBytes int64
	maxFiles     int
	withhold     func(string) bool
}

// New returns a Reviewer with opts' zero fields replaced by the defaults. It
// captures the server's PATH once, for Git to find its helpers.
func New(opts Options) *Reviewer {
	r := &Reviewer{
		timeout:      opts.Timeout,
		maxDiffBytes: opts.MaxDiffBytes,
		maxFiles:     opts.MaxFiles,
		withhold:     opts.Withhold,
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
	// Each invocation's own timeout is the whole review's: the review's
	// deadline, set first, always comes first.
	r.git = gitrepo.NewGit(gitrepo.GitOptions{Git: opts.Git, Timeout: r.timeout, Confine: opts.Confine})
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
// It first checks the repository's metadata with gitrepo.OpenRepository,
// allowing nothing outside rootPath, and runs no Git when that fails.
//
// Errors: gitrepo.ErrNotRepository, gitrepo.ErrNotTopLevel,
// gitrepo.ErrRepositoryUnsafe, gitrepo.ErrUnsafeFilters and gitrepo.ErrGit
// (wrapped); the error of ctx, also
// ErrTimeout (wrapping context.DeadlineExceeded) when Options.Timeout
// expires; a filesystem error when rootPath cannot be resolved. It never
// returns (nil, nil).
func (r *Reviewer) Changes(ctx context.Context, rootPath string) (_ *Changes, err error) {
	defer func(parent context.Context) { err = timedOut(parent, err) }(ctx)
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()

	repo, err := gitrepo.OpenRepository(rootPath)
	if err != nil {
		return nil, err
	}
	format, err := r.git.Check(ctx, repo)
	if err != nil {
		return nil, err
	}
	head, err := r.git.Head(ctx, repo)
	if err != nil {
		return nil, err
	}
	if err := r.git.CheckContent(ctx, repo); err != nil {
		return nil, err
	}

	base := head
	if base == "" {
		base = emptyTree(format)
	}
	return r.diff(ctx, repo, base, head)
}

// ChangesSince is Changes with the staged side diffed against base, a full
// commit ID, instead of HEAD: for a managed worktree whose base is its branch
// point, the review then covers what was committed on the branch as well as
// what is staged, unstaged or untracked. Committed and staged changes are
// both reported as Staged. Changes.Head is still HEAD.
//
// source is the Project root the worktree belongs to: the worktree's
// metadata may point inside rootPath or source (its .git file names
// source's .git/worktrees/<id>), nowhere else.
//
// Errors: as Changes; gitrepo.ErrGit (wrapped) also when base is not a full
// lowercase hexadecimal commit ID that names a commit in the repository.
func (r *Reviewer) ChangesSince(ctx context.Context, rootPath, base, source string) (_ *Changes, err error) {
	if !gitrepo.IsObjectID(base) || len(base) > 64 {
		return nil, fmt.Errorf("review: base %q is not a full commit ID: %w", base, gitrepo.ErrGit)
	}
	defer func(parent context.Context) { err = timedOut(parent, err) }(ctx)
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()

	repo, err := gitrepo.OpenRepository(rootPath, source)
	if err != nil {
		return nil, err
	}
	if _, err := r.git.Check(ctx, repo); err != nil {
		return nil, err
	}
	head, err := r.git.Head(ctx, repo)
	if err != nil {
		return nil, err
	}
	out, _, err := r.run(ctx, repo, 1024, "rev-parse", "-q", "--verify", base+"^{commit}")
	var exit *gitrepo.ExitError
	if err != nil && !errors.As(err, &exit) {
		return nil, err
	}
	if err != nil || !bytes.Equal(bytes.TrimSpace(out), []byte(base)) {
		return nil, fmt.Errorf("review: base %s is not a commit of the repository: %w", base, gitrepo.ErrGit)
	}
	if err := r.git.CheckContent(ctx, repo); err != nil {
		return nil, err
	}

	return r.diff(ctx, repo, base, head)
}

// diff builds the review of repo, which passed the checks: the staged side
// diffed against base, the unstaged side, the untracked files. head is the
// full HEAD commit ID, "" when HEAD is unborn.
func (r *Reviewer) diff(ctx context.Context, repo *gitrepo.Repository, base, head string) (*Changes, error) {
	b := &builder{r: r, files: map[string]*FileChange{}}
	if err := b.side(ctx, repo, true, "diff-index", "--cached", "-M", base); err != nil {
		return nil, err
	}
	if err := b.side(ctx, repo, false, "diff-files", "--ignore-submodules=dirty"); err != nil {
		return nil, err
	}
	if err := b.untracked(ctx, repo); err != nil {
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
func (b *builder) side(ctx context.Context, repo *gitrepo.Repository, staged bool, cmd string, args ...string) error {
	budget := b.remaining()
	full := []string{cmd, "-z", "--raw", "--numstat", "--no-ext-diff", "--no-textconv", "--no-color",
		"--submodule=short", "--src-prefix=a/", "--dst-prefix=b/"}
	if budget > 0 {
		full = append(full, "-p")
	}
	full = append(full, args...)
	full = append(full, "--")
	stdout, truncated, err := b.r.run(ctx, repo, listCap+budget, full...)
	if err != nil {
		return err
	}
	out, err := parseDiff(stdout, !truncated)
	if err != nil {
		return fmt.Errorf("review: parse git %s output: %w: %w", cmd, gitrepo.ErrGit, err)
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

// run runs one Git invocation keeping at most limit bytes of its stdout;
// truncated reports that the output went on (Git was killed).
// Errors: those of gitrepo.Git.RunCapped but ErrOutputTooLarge.
func (r *Reviewer) run(ctx context.Context, repo *gitrepo.Repository, limit int64, args ...string) (stdout []byte, truncated bool, err error) {
	stdout, err = r.git.RunCapped(ctx, repo, limit, args...)
	if errors.Is(err, gitrepo.ErrOutputTooLarge) {
		return stdout, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	return stdout, false, nil
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
