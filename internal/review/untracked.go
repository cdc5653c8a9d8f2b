package review

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/devspace-dev/devspace/internal/gitrepo"
	"github.com/devspace-dev/devspace/internal/project"
)

// binarySniff is how much of a file Git inspects for a NUL byte to call it
// binary.
const binarySniff = 8000

// untracked lists the untracked, not ignored files and renders them as
// new-file diffs within the remaining budget.
func (b *builder) untracked(ctx context.Context, repo *gitrepo.Repository) error {
	out, truncated, err := b.r.run(ctx, repo, listCap, "ls-files", "-z", "--others", "--exclude-standard", "--")
	if err != nil {
		return err
	}
	if truncated {
		b.truncated = true
	}
	names := parseNames(out)
	if room := b.r.maxFiles - b.tracked; len(names) > room {
		names = names[:max(0, room)]
		b.truncated = true
	}
	if len(names) == 0 {
		return nil
	}
	root, err := os.OpenRoot(repo.WorkTree)
	if err != nil {
		return fmt.Errorf("review: open root: %w", err)
	}
	defer root.Close()
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("review: render untracked files: %w", err)
		}
		if _, dup := b.files[name]; dup {
			continue
		}
		fc := &FileChange{Path: name, Status: "untracked"}
		b.files[name] = fc
		if b.diffFull {
			continue // the budget is spent: list only
		}
		text, complete := b.renderUntracked(root, name, fc, int(min(b.remaining(), int64(maxInt))))
		b.diff.Write(text)
		if !complete {
			b.truncated, b.diffFull = true, true
		}
	}
	return nil
}

const maxInt = int(^uint(0) >> 1)

// renderUntracked renders one untracked file as a new-file diff of at most
// budget bytes, filling in fc's counts. complete is false when the file did
// not fit. Files that cannot be shown as content (nested repositories, which
// ls-files lists with a trailing slash; FIFOs, sockets, devices; unreadable
// files) render as nothing.
func (b *builder) renderUntracked(root *os.Root, name string, fc *FileChange, budget int) (text []byte, complete bool) {
	if strings.HasSuffix(name, "/") {
		return nil, true
	}
	info, err := root.Lstat(name)
	if err != nil {
		return nil, true
	}
	var mode string
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		mode = "120000"
	case info.Mode().IsRegular() && info.Mode()&0o100 != 0:
		mode = "100755"
	case info.Mode().IsRegular():
		mode = "100644"
	default:
		return nil, true
	}
	var out bytes.Buffer
	out.WriteString("diff --git " + quotePath("a/"+name) + " " + quotePath("b/"+name) + "\n")
	out.WriteString("new file mode " + mode + "\n")

	if b.r.withhold != nil && b.r.withhold(name) {
		fc.Withheld = true
		out.WriteString(withholdNote)
		return fitted(out.Bytes(), budget)
	}

	var data []byte
	more := false
	if mode == "120000" {
		target, err := root.Readlink(name)
		if err != nil {
			return nil, true
		}
		data = []byte(target)
	} else {
		data, more, err = readRegular(root, name, max(budget, binarySniff))
		if err != nil {
			return nil, true
		}
	}
	if len(data) == 0 {
		return fitted(out.Bytes(), budget)
	}
	if bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0 {
		fc.Binary = true
		out.WriteString("Binary files /dev/null and " + quotePath("b/"+name) + " differ\n")
		return fitted(out.Bytes(), budget)
	}

	out.WriteString("--- /dev/null\n")
	// Git ends ---/+++ lines with a tab when the name holds a space.
	tab := ""
	if strings.Contains(name, " ") {
		tab = "\t"
	}
	out.WriteString("+++ " + quotePath("b/"+name) + tab + "\n")
	// Reserve room for the hunk header and the no-newline marker, then take
	// whole lines while they fit.
	const noNewline = "\\ No newline at end of file\n"
	room := budget - out.Len() - len("@@ -0,0 +1,"+strconv.Itoa(maxInt)+" @@\n") - len(noNewline)
	var body bytes.Buffer
	lines := 0
	rest := data
	complete = !more
	for len(rest) > 0 {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		} else if more {
			break // a partial last line: the file goes on
		}
		if body.Len()+1+len(line) > room {
			complete = false
			break
		}
		body.WriteByte('+')
		body.Write(line)
		lines++
		rest = rest[len(line):]
		if line[len(line)-1] != '\n' {
			body.WriteString("\n" + noNewline)
		}
	}
	if !complete {
		if lines == 0 {
			return nil, false
		}
	}
	fc.Added = lines
	if lines == 1 {
		out.WriteString("@@ -0,0 +1 @@\n")
	} else {
		out.WriteString("@@ -0,0 +1," + strconv.Itoa(lines) + " @@\n")
	}
	out.Write(body.Bytes())
	return out.Bytes(), complete
}

// fitted returns text when it fits the budget.
func fitted(text []byte, budget int) ([]byte, bool) {
	if len(text) > budget {
		return nil, false
	}
	return text, true
}

// readRegular reads at most limit bytes of a regular file; more reports that
// the file holds more. The file is opened with project.Open and must be
// reached through no link (git listed it as a file at that path): a
// directory swapped for a link since cannot put another file's content,
// a secret's say, under the listed name.
func readRegular(root *os.Root, name string, limit int) (data []byte, more bool, err error) {
	f, real, err := project.Open(root, name, true)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	if real != name {
		return nil, false, errors.New("the path changed since git listed it")
	}
	info, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	if !info.Mode().IsRegular() {
		return nil, false, errors.New("not a regular file")
	}
	data, err = io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, false, err
	}
	if len(data) > limit {
		return data[:limit], true, nil
	}
	return data, false, nil
}

// quotePath quotes a path the way Git does in diff headers with
// core.quotePath=false: when it holds a control character, a double quote or
// a backslash, the whole name is put in double quotes with C escapes (octal
// for control characters without a letter escape); bytes from 0x80 up are
// left as they are.
func quotePath(s string) string {
	needs := false
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c == 0x7f {
			needs = true
			break
		}
	}
	if !needs {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(&b, `\%03o`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
