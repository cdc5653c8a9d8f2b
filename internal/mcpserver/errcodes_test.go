package mcpserver

import (
	"fmt"
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

	"github.com/devspace-dev/devspace/internal/commands"
	"github.com/devspace-dev/devspace/internal/process"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/tasks"
)

// TestErrorCodesDocumented holds docs/errors.md and the code to each
// other: the envelope codes (codes, the one table) are exactly the
// documented ones with the same categories; every code a toolErr call of
// the edge builds or a domain error says (fault.New, a Code method) is
// listed, and a code a domain error says has the guidance mapError
// answers it with; every listed code is built or said somewhere; the
// per-item codes of read_files and inspect (the files and search
// packages' Code constants) are exactly the documented per-item codes. A
// new code cannot be added without its documentation, nor a documented
// one left behind when its last use goes.
func TestErrorCodesDocumented(t *testing.T) {
	envelope, items := documentedCodes(t, "../../docs/errors.md")
	for code, c := range codes {
		doc, ok := envelope[code]
		switch {
		case !ok:
			t.Errorf("code %q (category %s) is in codes but not in docs/errors.md", code, c.category)
		case doc != c.category:
			t.Errorf("code %q: docs/errors.md says category %s, codes says %s", code, doc, c.category)
		}
	}
	for code := range envelope {
		if _, ok := codes[code]; !ok {
			t.Errorf("docs/errors.md documents %q, which codes does not list", code)
		}
	}
	built := builtCodes(t)
	said := saidCodes(t)
	for code, where := range said {
		c, ok := codes[code]
		switch {
		case !ok:
			t.Errorf("%s says code %q, which codes does not list", where, code)
		case c.message == "" && c.render == nil:
			t.Errorf("%s says code %q, for which codes has no guidance", where, code)
		}
	}
	for code := range built {
		if _, ok := codes[code]; !ok {
			t.Errorf("toolErr(%q, …) names a code codes does not list", code)
		}
	}
	for code := range codes {
		if _, ok := said[code]; !built[code] && !ok && code != "internal_error" {
			t.Errorf("code %q is listed, but no toolErr call builds it and no error says it", code)
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
	if len(said) < 40 || len(built) < 2 || len(itemCodes) < 8 {
		t.Fatalf("found only %d codes errors say, %d the edge builds and %d item codes: the scan is broken", len(said), len(built), len(itemCodes))
	}
}

// TestMessagesNameTheLimits: the guidance sentences that state a limit
// or a reason of a domain package, which the edge does not import, state
// the package's.
func TestMessagesNameTheLimits(t *testing.T) {
	share := fmt.Sprintf("(%d per Project and %d in all for its grant, %d per conversation)",
		commands.MaxPerGrantPerProject, commands.MaxPerGrant, process.DefaultMaxPerGroup)
	if !strings.Contains(codes["process_limit"].message, share) {
		t.Errorf("process_limit does not say %s: %s", share, codes["process_limit"].message)
	}
	if capacity := fmt.Sprintf("already has %d resumable Tasks", tasks.MaxResumable); !strings.Contains(codes["project_task_capacity"].message, capacity) {
		t.Errorf("project_task_capacity does not say %s: %s", capacity, codes["project_task_capacity"].message)
	}
	te := mapError(&project.PathError{Reason: project.ReasonRepository})
	if te.Details["reason"] != project.ReasonRepository || !strings.Contains(te.message, ".git") {
		t.Errorf("repository metadata: %+v %q", te, te.message)
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
				if id, ok := call.Args[0].(*ast.Ident); ok && id.Name == "name" {
					return true // mapError's, a code of codes
				}
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

// saidCodes returns each code an error of a package under internal/ says
// (other than this one's): fault.New("code", …) and Code methods that
// return a literal, with where.
func saidCodes(t *testing.T) map[string]string {
	out := map[string]string{}
	dirs, err := filepath.Glob("../*")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || filepath.Base(dir) == "mcpserver" {
			continue
		}
		for _, f := range parsePackage(t, dir) {
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					sel, ok := n.Fun.(*ast.SelectorExpr)
					if !ok || sel.Sel.Name != "New" || len(n.Args) != 2 {
						return true
					}
					if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "fault" {
						return true
					}
					if lit, ok := n.Args[0].(*ast.BasicLit); ok {
						code, _ := strconv.Unquote(lit.Value)
						out[code] = filepath.Base(dir)
					} else {
						t.Errorf("%s: fault.New with a computed code: the code list cannot see it", dir)
					}
				case *ast.FuncDecl:
					if n.Recv == nil || n.Name.Name != "Code" || n.Body == nil {
						return true
					}
					ast.Inspect(n.Body, func(m ast.Node) bool {
						if r, ok := m.(*ast.ReturnStmt); ok && len(r.Results) == 1 {
							if lit, ok := r.Results[0].(*ast.BasicLit); ok {
								code, _ := strconv.Unquote(lit.Value)
								out[code] = filepath.Base(dir)
							}
						}
						return true
					})
				}
				return true
			})
		}
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
