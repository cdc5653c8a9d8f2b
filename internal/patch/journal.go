package patch

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
)

// Journal limits per execution (docs/design.md §9).
const (
	MaxJournalOps   = 1000
	MaxJournalBytes = 64 << 20
)

// Entry is one successful patch in a Journal.
type Entry struct {
	Seq    int     // 1-based position in the journal
	OpID   string  // the operationId that applied it
	Patch  string  // the patch text as received
	Result *Result // what it changed, with before/after contents
	Bytes  int64   // what the entry counts against MaxJournalBytes
}

// Journal records an execution's successful patches in memory, for
// show_changes(apply_patch_history) and undo. The zero value is an empty
// journal. It is safe for concurrent use; entries and their results must
// not be modified after Append.
type Journal struct {
	mu      sync.Mutex
	entries []Entry
	bytes   int64
}

// Append records a successful patch. It returns ErrJournalFull, leaving
// the journal unchanged, when the entry would exceed MaxJournalOps or
// MaxJournalBytes.
func (j *Journal) Append(opID string, res *Result, patchText string) error {
	if res == nil {
		return fmt.Errorf("journal: nil result")
	}
	size := int64(len(patchText) + len(opID))
	for _, f := range res.Files {
		size += int64(len(f.BeforeContent) + len(f.AfterContent) + len(f.ReplacedContent) + len(f.Path) + len(f.MovedFrom))
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.entries) >= MaxJournalOps {
		return fmt.Errorf("%w: %d patches recorded", ErrJournalFull, len(j.entries))
	}
	if j.bytes+size > MaxJournalBytes {
		return fmt.Errorf("%w: %d bytes recorded", ErrJournalFull, j.bytes)
	}
	j.entries = append(j.entries, Entry{Seq: len(j.entries) + 1, OpID: opID, Patch: patchText, Result: res, Bytes: size})
	j.bytes += size
	return nil
}

// Entries returns the recorded entries, oldest first. The slice is a
// copy; the entries share their results with the journal.
func (j *Journal) Entries() []Entry {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]Entry(nil), j.entries...)
}

// Bytes returns what the journal counts against MaxJournalBytes.
func (j *Journal) Bytes() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.bytes
}

// RenderDiff renders an entry as a unified diff (three lines of
// context), one file after another, for show_changes.
func RenderDiff(e Entry) string {
	if e.Result == nil {
		return ""
	}
	var b strings.Builder
	for _, f := range e.Result.Files {
		renderFile(&b, f)
	}
	return b.String()
}

func renderFile(b *strings.Builder, f FileResult) {
	oldName, newName := "a/"+f.Path, "b/"+f.Path
	before, after := f.BeforeContent, f.AfterContent
	switch f.Action {
	case ActionAdd:
		if f.Before == "" {
			oldName = "/dev/null"
		}
	case ActionDelete:
		newName = "/dev/null"
	case ActionMove:
		oldName = "a/" + f.MovedFrom
		fmt.Fprintf(b, "rename from %s\nrename to %s\n", f.MovedFrom, f.Path)
	}
	fmt.Fprintf(b, "--- %s\n+++ %s\n", oldName, newName)
	if f.Sensitive {
		// A secret never reaches a record, even one allowSensitive wrote.
		fmt.Fprintf(b, "(sensitive file: content not recorded; before %s, after %s)\n", orNone(f.Before), orNone(f.After))
		return
	}
	if (f.Before != "" && before == nil) || (f.After != "" && after == nil) {
		b.WriteString("(content not recorded)\n")
		return
	}
	if !isText(before) || !isText(after) {
		b.WriteString("Binary content differs\n")
		return
	}
	unifiedDiff(b, splitKeep(before), splitKeep(after), 3)
}

func orNone(hash string) string {
	if hash == "" {
		return "none"
	}
	return hash
}

// splitKeep splits content into lines that keep their terminators.
func splitKeep(content []byte) []string {
	if len(content) == 0 {
		return nil
	}
	// One copy of the content; the lines are slices of it (a string per
	// line was ~40% of apply_patch's allocations).
	s := string(content)
	out := make([]string, 0, bytes.Count(content, []byte{'\n'})+1)
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}
