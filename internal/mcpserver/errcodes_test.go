package mcpserver

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestErrorCodesDocumented holds docs/errors.md and the code to each
// other: every code a tool can return (an error envelope built by toolErr,
// or a per-item code of read_files and inspect) is documented — envelope
// codes with the category the code gives them — and every documented code
// is returned somewhere. The lists come from the source, so a new code
// cannot be added without its documentation, nor a documented one left
// behind when its last use goes.
func TestErrorCodesDocumented(t *testing.T) {
	envelope, items := documentedCodes(t, "../../docs/errors.md")
	emitted := emittedCodes(t)
	for code, cat := range emitted {
		doc, ok := envelope[code]
		switch {
		case !ok:
			t.Errorf("code %q (category %s) is returned but not in docs/errors.md", code, cat)
		case doc != cat:
			t.Errorf("code %q: docs/errors.md says category %s, the code says %s", code, doc, cat)
		}
	}
	for code := range envelope {
		if _, ok := emitted[code]; !ok {
			t.Errorf("docs/errors.md documents %q, which no tool returns", code)
		}
	}
	itemCodes := emittedItemCodes(t)
	for _, code := range itemCodes {
		if !items[code] {
			t.Errorf("per-item code %q is returned but not in docs/errors.md's per-item table", code)
		}
	}
	for code := range items {
		if !slices.Contains(itemCodes, code) {
			t.Errorf("docs/errors.md documents per-item code %q, which no tool returns", code)
		}
	}
	if len(emitted) < 40 || len(itemCodes) < 8 {
		t.Fatalf("found only %d envelope and %d item codes: the scan is broken", len(emitted), len(itemCodes))
	}
}

var docRow = regexp.MustCompile("^\\| `([a-z_]+)`[^|]*\\| ([a-z_, `]+) \\|")

// documentedCodes reads the tables of errors.md: envelope codes (a table
// whose header is "| Code | Category |…") with their category, and
// per-item codes (header "| Code | Tools |…").
func documentedCodes(t *testing.T, path string) (envelope map[string]string, items map[string]bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	envelope, items = map[string]string{}, map[string]bool{}
	table := ""
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "| Code | Category |"):
			table = "envelope"
			continue
		case strings.HasPrefix(line, "| Code | Tools |"):
			table = "items"
			continue
		case !strings.HasPrefix(line, "|"):
			table = ""
			continue
		}
		m := docRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		switch table {
		case "envelope":
			if prev, ok := envelope[m[1]]; ok && prev != m[2] {
				t.Errorf("docs/errors.md gives %q two categories", m[1])
			}
			envelope[m[1]] = m[2]
		case "items":
			items[m[1]] = true
		}
	}
	return envelope, items
}

// parsePackage parses the non-test Go files of dir.
func parsePackage(t *testing.T, dir string) []*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	fset := token.NewFileSet()
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// stringConsts returns the string constants of files whose names match.
func stringConsts(files []*ast.File, name *regexp.Regexp) map[string]string {
	out := map[string]string{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, id := range vs.Names {
				if i < len(vs.Values) && name.MatchString(id.Name) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						out[id.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			}
			return true
		})
	}
	return out
}

// emittedCodes returns each code this package builds with toolErr, with
// its category.
func emittedCodes(t *testing.T) map[string]string {
	files := parsePackage(t, ".")
	cats := stringConsts(files, regexp.MustCompile(`^cat[A-Z]`))
	out := map[string]string{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 2 {
				return true
			}
			if fn, ok := call.Fun.(*ast.Ident); !ok || fn.Name != "toolErr" {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			cat, okCat := call.Args[1].(*ast.Ident)
			if !ok || !okCat {
				t.Errorf("toolErr with a computed code or category: the code list cannot see it")
				return true
			}
			code, _ := strconv.Unquote(lit.Value)
			if prev, ok := out[code]; ok && prev != cats[cat.Name] {
				t.Errorf("code %q is built with two categories", code)
			}
			out[code] = cats[cat.Name]
			return true
		})
	}
	if _, ok := out["invalid_tool_input"]; !ok {
		t.Fatal("the scan found no invalid_tool_input: it is broken")
	}
	return out
}

// emittedItemCodes returns the per-item codes of read_files (package files)
// and inspect (package search).
func emittedItemCodes(t *testing.T) []string {
	var out []string
	for _, dir := range []string{"../files", "../search"} {
		for _, v := range stringConsts(parsePackage(t, dir), regexp.MustCompile(`^Code[A-Z]`)) {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	slices.Sort(out)
	return out
}
