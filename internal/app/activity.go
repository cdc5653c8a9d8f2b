package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/devspace-dev/devspace/internal/activity"
	"github.com/devspace-dev/devspace/internal/commands"
	"github.com/devspace-dev/devspace/internal/store"
)

// The Owner's view of what DevSpace does (the console, issue 33): tool
// calls, commands of every grant, patches and undos. Each method answers
// from the service that owns the fact; none serves a tool.

// Bounds of the activity listings.
const (
	// DefaultTail is CommandTail's bound when max is not positive.
	DefaultTail = 64 << 10
	// MaxTail bounds CommandTail whatever max asks.
	MaxTail = 1 << 20
	// PatchDiffMax bounds each diff RecentPatches returns, in characters;
	// a longer one is cut at a line with a note.
	PatchDiffMax = 256 << 10
	// MaxListed bounds RecentPatches and UndoHistory whatever n asks.
	MaxListed = 200
	// runningSample is how often the commands running are read again,
	// besides each change the process manager reports.
	runningSample = 15 * time.Second
)

// ErrCommandNotFound: no command of any grant has that ID (its output
// retired, or there never was one). It wraps commands.ErrNotFound.
var ErrCommandNotFound = fmt.Errorf("command not found: %w", commands.ErrNotFound)

// Activity is the recorder of tool calls and commands running: the
// latest calls, a live feed and the last hour by minute. Never nil.
func (a *App) Activity() *activity.Recorder { return a.activity }

// RunningCommands lists the commands of every grant whose tree is alive,
// oldest first, with the command line as the Owner may see it (literal
// credentials redacted) and the grant's client name. Without a command
// manager (OpenState) it is empty.
func (a *App) RunningCommands(ctx context.Context) ([]activity.Command, error) {
	out := []activity.Command{}
	if a.procs == nil {
		return out, nil
	}
	clients := map[string]string{}
	for _, r := range a.commands.RunningAll() {
		name, ok := clients[r.GrantID]
		if !ok {
			g, err := a.store.Grant(ctx, r.GrantID)
			switch {
			case errors.Is(err, store.ErrNotFound):
			case err != nil:
				return nil, fmt.Errorf("grant of a running command: %w", err)
			default:
				name = g.ClientName
			}
			clients[r.GrantID] = name
		}
		out = append(out, activity.Command{ID: r.ProcessRef, GrantID: r.GrantID, Client: name, Project: r.ProjectRef,
			CommandLine: r.CommandLine, Started: r.StartedAt, Running: true})
	}
	return out, nil
}

// CommandTail returns the latest output of a command of any grant: at
// most max bytes (DefaultTail when max is not positive, never more than
// MaxTail), how many it wrote in all and whether it ended. A finished
// command's output is read from its retention while it lasts. Errors:
// ErrCommandNotFound.
func (a *App) CommandTail(ctx context.Context, id string, max int) (activity.Output, error) {
	if max <= 0 {
		max = DefaultTail
	}
	max = min(max, MaxTail)
	tail, total, done, err := a.commands.OwnerTail(ctx, id, max)
	if errors.Is(err, commands.ErrNotFound) {
		return activity.Output{}, ErrCommandNotFound
	}
	if err != nil {
		return activity.Output{}, fmt.Errorf("command output: %w", err)
	}
	return activity.Output{Tail: tail, Total: total, Done: done}, nil
}

// InterruptCommand interrupts a running command of any grant the way
// write_stdin's interrupt does (SIGINT to its tree; what is left is
// killed after a grace), and records an audit event
// (command_interrupted, by the owner) naming its grant. Errors:
// ErrCommandNotFound; process.ErrNotRunning when it ended already.
func (a *App) InterruptCommand(ctx context.Context, id string) error {
	if a.procs == nil {
		return ErrCommandNotFound
	}
	grantID, err := a.commands.OwnerInterrupt(id)
	if errors.Is(err, commands.ErrNotFound) {
		return ErrCommandNotFound
	}
	if err != nil {
		return fmt.Errorf("interrupt command: %w", err)
	}
	a.oauth.AuditOwner(ctx, "command_interrupted", grantID, nil)
	return nil
}

// RecentPatches returns up to n patches apply_patch made (at most
// MaxListed), newest first, from the patch journal of every execution:
// files and unified diff (hashes only for sensitive files), the diff cut
// at PatchDiffMax characters. Journal entries written before the journal
// recorded kinds are listed here too, undos among them.
func (a *App) RecentPatches(ctx context.Context, n int) ([]activity.Patch, error) {
	recs, err := a.store.RecentJournal(ctx, []string{store.JournalApplied, ""}, min(n, MaxListed), PatchDiffMax+1)
	if err != nil {
		return nil, err
	}
	out := make([]activity.Patch, 0, len(recs))
	for _, r := range recs {
		out = append(out, activity.Patch{ID: journalID(r.Seq), GrantID: r.GrantID, Project: r.Project, At: r.CreatedAt,
			Files: journalFiles(r.Files), Diff: cutDiff(r.Diff, r.Bytes)})
	}
	return out, nil
}

// UndoHistory returns up to n undo_patch calls that changed files (at
// most MaxListed), newest first, from the patch journal of every
// execution: Undone for an undo, not for a redo.
func (a *App) UndoHistory(ctx context.Context, n int) ([]activity.Undo, error) {
	recs, err := a.store.RecentJournal(ctx, []string{store.JournalUndone, store.JournalRedone}, min(n, MaxListed), 0)
	if err != nil {
		return nil, err
	}
	out := make([]activity.Undo, 0, len(recs))
	for _, r := range recs {
		out = append(out, activity.Undo{ID: journalID(r.Seq), GrantID: r.GrantID, Project: r.Project, At: r.CreatedAt,
			Files: journalFiles(r.Files), Undone: r.Kind == store.JournalUndone})
	}
	return out, nil
}

// journalID is the ID the console shows of a journal entry.
func journalID(seq int64) string { return "jrn_" + strconv.FormatInt(seq, 10) }

// journalFiles is the paths of a journal entry's file list (edits.File
// as JSON); a move lists its new path.
func journalFiles(list string) []string {
	var files []struct {
		Path string `json:"path"`
	}
	out := []string{}
	if json.Unmarshal([]byte(list), &files) != nil {
		return out
	}
	for _, f := range files {
		out = append(out, f.Path)
	}
	return out
}

// cutDiff ends a diff read up to PatchDiffMax+1 characters of bytes in
// all at PatchDiffMax characters, at the last whole line, with a note
// saying how much is left out.
func cutDiff(diff string, bytes int64) string {
	if len(diff) <= PatchDiffMax || len([]rune(diff)) <= PatchDiffMax {
		return diff
	}
	r := []rune(diff)[:PatchDiffMax]
	kept := string(r)
	if i := strings.LastIndexByte(kept, '\n'); i >= 0 {
		kept = kept[:i+1]
	}
	return kept + fmt.Sprintf("… diff cut here: %d more bytes in the journal\n", bytes-int64(len(kept)))
}

// sampleRunning reads the number of commands running every
// runningSample, until ctx ends: the process manager reports each change
// (processMetrics.RunningChanged), and this corrects a report that
// arrived out of order.
func (a *App) sampleRunning(ctx context.Context) {
	t := time.NewTicker(runningSample)
	defer t.Stop()
	for {
		a.activity.SetRunning(a.procs.Running())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
