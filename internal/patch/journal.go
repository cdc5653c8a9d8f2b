package patch

import (
	"bytes"
	"fmt"
	"strings"
)

// RenderDiff renders what an applied patch changed as a unified diff
// (three lines of context), one file after another, for the execution's
// journal that show_changes reads. A nil res renders as "".
func RenderDiff(res *Result) string {
	if res == nil {
		return ""
	}
	var b strings.Builder
	for _, f := range res.Files {
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
