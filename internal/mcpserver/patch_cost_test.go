package mcpserver_test

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/devspace-dev/devspace/internal/apptest"
)

// statements records the SQL a store runs while armed.
type statements struct {
	armed atomic.Bool
	mu    sync.Mutex
	list  []string
}

func (s *statements) record(sql string) {
	if !s.armed.Load() {
		return
	}
	s.mu.Lock()
	s.list = append(s.list, sql)
	s.mu.Unlock()
}

func (s *statements) take() []string {
	s.armed.Store(false)
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.list
	s.list = nil
	return out
}

// TestApplyPatchStatements counts the SQL statements of one typical
// apply_patch call (one small update with ifMatch and an operationId,
// authentication included) and of its replay, which must answer what the
// first call did. docs/performance.md quotes these numbers; the bounds
// keep them from growing unnoticed.
func TestApplyPatchStatements(t *testing.T) {
	t.Parallel()
	var sql statements
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}, OnStatement: sql.record})
	cs, me, version := openToPatch(t, env, "main.go", "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n")
	args := map[string]any{"operationId": "p1", "ifMatch": map[string]any{"main.go": version},
		"patch": "*** Begin Patch\n*** Update File: main.go\n@@ func main() {\n-\tprintln(\"hi\")\n+\tprintln(\"hello\")\n*** End Patch\n"}

	var first map[string]any
	for _, tc := range []struct {
		name string
		max  int
	}{
		{"apply", 9},
		{"replay", 4},
	} {
		sql.armed.Store(true)
		sc, res := callTool(t, cs, "apply_patch", args, me)
		got := sql.take()
		if res.IsError {
			t.Fatalf("%s: %v", tc.name, sc)
		}
		t.Logf("%s: %d statements:\n\t%s", tc.name, len(got), strings.Join(got, "\n\t"))
		if len(got) > tc.max {
			t.Errorf("%s: %d statements, want at most %d", tc.name, len(got), tc.max)
		}
		if first == nil {
			first = sc
			continue
		}
		if sc["replayed"] != true {
			t.Errorf("%s: not replayed: %v", tc.name, sc)
		}
		delete(sc, "replayed")
		if diff := cmp.Diff(first, sc); diff != "" {
			t.Errorf("%s: result differs from the first call's (-first +replay):\n%s", tc.name, diff)
		}
	}
}
