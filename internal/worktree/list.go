package worktree

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/devspace-dev/devspace/internal/gitrepo"
)

// lockInitializing is the lock reason `git worktree add` writes while it
// creates a worktree and removes once the checkout is complete; Create
// passes it to `git worktree add --lock` and unlocks after its own
// checkout. A worktree still locked with it was cut short (a crash, a
// kill): half-created.
const lockInitializing = "initializing"

// entry is one worktree as `git worktree list --porcelain -z` reports it.
type entry struct {
	path       string
	head       string
	branch     string // full ref name, "" when detached
	bare       bool
	locked     bool
	lockReason string
	prunable   bool // git would prune its metadata
}

// halfCreated reports whether e is a worktree whose `git worktree add` never
// finished: Git's own lock says so, and so does the marker Create keeps
// beside the worktree, in the server's directory, until it is done
// (creatingMarker). Git's lock alone is not trusted: it lives in the
// source's .git, which a command of that Project may write, and a forged
// lock made a finished worktree, uncommitted work included, look
// half-created to Prune, which removed it.
func (e entry) halfCreated() bool {
	return e.locked && e.lockReason == lockInitializing && !missing(creatingMarker(e.path))
}

// creatingMarker is the file Create keeps beside the worktree at path
// while it creates it.
func creatingMarker(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".creating")
}

// list returns the worktrees of the repository src, the main one first.
func (m *Manager) list(ctx context.Context, src *gitrepo.Repository) ([]entry, error) {
	out, err := m.git.Run(ctx, src, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return nil, fmt.Errorf("worktree: list worktrees: %w", err)
	}
	return parseList(out), nil
}

// parseList parses `git worktree list --porcelain -z`: attribute lines
// ended by NUL, records ended by an empty line. Unknown attributes are
// ignored.
func parseList(out []byte) []entry {
	var (
		list []entry
		cur  *entry
	)
	for _, field := range bytes.Split(out, []byte{0}) {
		line := string(field)
		if line == "" {
			cur = nil
			continue
		}
		key, value, _ := strings.Cut(line, " ")
		if key == "worktree" {
			list = append(list, entry{path: value})
			cur = &list[len(list)-1]
			continue
		}
		if cur == nil {
			continue
		}
		switch key {
		case "HEAD":
			cur.head = value
		case "branch":
			cur.branch = value
		case "bare":
			cur.bare = true
		case "locked":
			cur.locked, cur.lockReason = true, value
		case "prunable":
			cur.prunable = true
		}
	}
	return list
}

// find returns the entry at path.
func find(list []entry, path string) (entry, bool) {
	for _, e := range list {
		if e.path == path {
			return e, true
		}
	}
	return entry{}, false
}
