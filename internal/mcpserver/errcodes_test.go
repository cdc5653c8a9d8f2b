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
// other: the envelope codes (codeCategories, the one list toolErr takes a
// category from) are exactly the documented ones with the same categories,
// every toolErr call in the source names a listed code, and every listed
// code is built by some toolErr call; the per-item codes of read_files and
// inspect (the files and search packages' Code constants) are exactly the
// documented per-item codes. A new code cannot be added without its
// documentation, nor a documented one left behind when its last use goes.
func TestErrorCodesDocumented(t *testing.T) {
	envelope, items := documentedCodes(t, "../../docs/errors.md")
	for code, cat := range codeCategories {
		doc, ok := envelope[code]
		switch {
		case !ok:
			t.Errorf("code %q (category %s) is in codeCategories but not in docs/errors.md", code, cat)
		case doc != cat:
			t.Errorf("code %q: docs/errors.md says category %s, codeCategories says %s", code, doc, cat)
		}
	}
	for code := range envelope {
		if _, ok := codeCategories[code]; !ok {
			t.Errorf("docs/errors.md documents %q, which codeCategories does not list", code)
		}
	}
	built := builtCodes(t)
	for code := range built {
		if _, ok := codeCategories[code]; !ok {
			t.Errorf("toolErr(%q, …) names a code codeCategories does not list", code)
		}
	}
	for code := range codeCategories {
		if !built[code] {
			t.Errorf("code %q is listed, but no toolErr call builds it", code)
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
	if len(built) < 40 || len(itemCodes) < 8 {
		t.Fatalf("found only %d envelope and %d item codes: the scan is broken", len(built), len(itemCodes))
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

// builtCodes returns each code this package's toolErr calls name.
func builtCodes(t *testing.T) map[string]bool {
	out := map[string]bool{}
	for _, f := range parsePackage(t, ".") {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 2 {
				return true
			}
			if fn, ok := call.Fun.(*ast.Ident); !ok || fn.Name != "toolErr" {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok {
				t.Errorf("toolErr with a computed code: the code list cannot see it")
				return true
			}
			code, _ := strconv.Unquote(lit.Value)
			out[code] = true
			return true
		})
	}
	if !out["invalid_tool_input"] {
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
