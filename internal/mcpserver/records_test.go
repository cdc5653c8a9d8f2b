package mcpserver_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glebarez/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/store"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// TestSensitivePatchLeavesNoRecord: a patch applied with allowSensitive
// that changes secrets every way a patch can (an update, an add, a delete,
// an update through a link to .ssh, a move to a plain name), its replay, a
// failed patch of a secret and a refused undo leave no byte of a secret in
// DevSpace's own records: the journal as show_changes returns it, every
// column of every table of the SQLite store (journal, operations and their
// stored results, Thread activity, audit), every file under the state
// directory (database and write-ahead log, undo snapshots, intent
// records), before and after the server stops, and the log.
func TestSensitivePatchLeavesNoRecord(t *testing.T) {
	t.Parallel()
	const marker = "SECRET_MARKER_15"
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}})
	root := env.Roots["alpha"]
	testutil.WriteTree(t, root, map[string]testutil.File{
		".env":            {Content: "TOKEN=" + marker + "-env\n", Mode: 0o600},
		".env.local":      {Content: "TOKEN=" + marker + "-local\n", Mode: 0o600},
		".ssh/id_ed25519": {Content: marker + "-key\n", Mode: 0o600},
		".ssh/config":     {Content: "Host " + marker + "-ssh\n", Mode: 0o600},
		"plain.txt":       {Content: "visible\n"},
	})
	if err := os.Symlink(".ssh", filepath.Join(root, "keys")); err != nil {
		t.Fatal(err)
	}
	_, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read", "project:write"}})
	cs := connect(t, env, tok.AccessToken, "")
	me := session("s")
	callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, me)

	ifMatch := map[string]any{"config/prod.pem": nil, "notes.txt": nil}
	var reads []any
	for _, p := range []string{".env", ".env.local", ".ssh/id_ed25519", "keys/config", "plain.txt"} {
		reads = append(reads, map[string]any{"path": p})
	}
	sc, _ := callTool(t, cs, "read_files", map[string]any{"files": reads, "allowSensitive": true}, me)
	for _, it := range sc["files"].([]any) {
		f := it.(map[string]any)
		ifMatch[f["path"].(string)] = f["version"].(map[string]any)["contentHash"]
	}
	p := "*** Begin Patch\n" +
		"*** Update File: .env\n@@\n-TOKEN=" + marker + "-env\n+TOKEN=" + marker + "-new\n" +
		"*** Add File: config/prod.pem\n+" + marker + "-pem\n" +
		"*** Delete File: .ssh/id_ed25519\n" +
		"*** Update File: keys/config\n@@\n-Host " + marker + "-ssh\n+Host " + marker + "-ssh2\n" +
		"*** Update File: .env.local\n*** Move to: notes.txt\n@@\n-TOKEN=" + marker + "-local\n+TOKEN=" + marker + "-moved\n" +
		"*** Update File: plain.txt\n@@\n-visible\n+visible-changed\n" +
		"*** End Patch\n"
	args := map[string]any{"operationId": "p1", "patch": p, "ifMatch": ifMatch, "allowSensitive": true}
	var outputs []string
	record := func(sc map[string]any, res *mcp.CallToolResult) map[string]any {
		b, _ := json.Marshal(res)
		outputs = append(outputs, string(b))
		return sc
	}
	if sc, res := callTool(t, cs, "apply_patch", args, me); res.IsError {
		t.Fatalf("apply_patch: %v", sc)
	}
	if sc := record(callTool(t, cs, "apply_patch", args, me)); sc["replayed"] != true {
		t.Fatalf("replay of p1: %v", sc)
	}
	// A patch of a secret that fails: its outcome is not stored, and the
	// context it did not find (the client's own text) reaches no record.
	bad := "*** Begin Patch\n*** Update File: .env\n@@\n-TOKEN=" + marker + "-wrong\n+x\n*** End Patch\n"
	if sc, _ := callTool(t, cs, "apply_patch", map[string]any{"operationId": "p2", "patch": bad, "allowSensitive": true,
		"ifMatch": contentHash([]byte("TOKEN=" + marker + "-new\n"))}, me); errCode(sc) != "patch_context_not_found" {
		t.Fatalf("a patch with the wrong context: %v", sc)
	}
	if sc := record(callTool(t, cs, "undo_patch", map[string]any{"operationId": "u1"}, me)); errCode(sc) != "undo_unavailable" {
		t.Errorf("undo of a sensitive patch: %v", sc)
	}
	history := mustJSON(record(callTool(t, cs, "show_changes", map[string]any{"source": "apply_patch_history"}, me)))
	if !strings.Contains(history, "+visible-changed") || strings.Count(history, "sensitive file: content not recorded") != 5 {
		t.Errorf("the history lacks the plain diff or the five sensitive stubs: %s", history)
	}
	for _, out := range outputs {
		if testutil.HoldsSecret([]byte(out), marker) {
			t.Errorf("a result holds a secret: %s", out)
		}
	}

	rows := noTableHolds(t, env.StateDir, marker)
	for _, table := range []string{"patch_journal", "operations", "thread_activity", "audit_events"} {
		if rows[table] == 0 {
			t.Errorf("table %s is empty: the scan proves nothing about it", table)
		}
	}
	noFileHolds(t, env.StateDir, marker)
	if testutil.HoldsSecret([]byte(env.Logs.String()), marker) {
		t.Error("the log holds a secret")
	}
	env.Stop() // the write-ahead log is checkpointed into the database
	noFileHolds(t, env.StateDir, marker)
}

// noTableHolds fails t if any column of any row of any table of the store
// in stateDir holds marker (testutil.HoldsSecret), and returns each
// table's row count.
func noTableHolds(t *testing.T, stateDir, marker string) map[string]int {
	t.Helper()
	db, err := sql.Open(sqlite.DriverName, "file:"+filepath.Join(stateDir, store.FileName)+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var tables []string
	names, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	for names.Next() {
		var n string
		if err := names.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	if err := names.Err(); err != nil {
		t.Fatal(err)
	}
	names.Close()
	counts := map[string]int{}
	for _, table := range tables {
		rows, err := db.Query(`SELECT * FROM "` + table + `"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			counts[table]++
			for i, v := range vals {
				var b []byte
				switch v := v.(type) {
				case []byte:
					b = v
				case string:
					b = []byte(v)
				default:
					b = fmt.Append(nil, v)
				}
				if testutil.HoldsSecret(b, marker) {
					t.Errorf("%s.%s holds a secret: %q", table, cols[i], b)
				}
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return counts
}

// noFileHolds fails t if any file under dir holds marker
// (testutil.HoldsSecret), read as raw bytes.
func noFileHolds(t *testing.T, dir, marker string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		if testutil.HoldsSecret(b, marker) {
			i := bytes.Index(b, []byte(marker))
			t.Errorf("%s holds a secret (at %d)", p, i)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("no file under %s: the scan proves nothing", dir)
	}
}
