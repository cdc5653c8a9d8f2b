package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/patch"
	"github.com/devspace-dev/devspace/internal/testutil"
	"github.com/devspace-dev/devspace/internal/undo"
)

// The benchmarks here reproduce the profiles behind the findings of the
// performance budget (go test -run '^$' -bench Profile -cpuprofile …
// ./bench, or -trace for time spent in system calls). The server runs in
// this process so that its stacks appear in the profile.

func profileSession(b *testing.B) (*apptest.Env, *session) {
	env := apptest.Start(b, apptest.Options{Projects: []string{"alpha"}, Env: map[string]string{
		"DEVSPACE_OAUTH_SCOPES": "project:read project:write process:execute", "DEVSPACE_LOG_LEVEL": "warn"}})
	_, tok := env.Grant(apptest.Approval{Scopes: allScopes})
	client := mcp.NewClient(&mcp.Implementation{Name: "profile", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: env.URL + "/mcp", DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: testutil.Bearer(tok.AccessToken, transport)}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	s := &session{cs: cs, meta: map[string]any{"openai/session": "profile"}}
	s.must(b, "project_control", map[string]any{"action": "open", "operationId": "open"})
	return env, s
}

// BenchmarkProfileExecCommand is exec_command true through /mcp.
func BenchmarkProfileExecCommand(b *testing.B) {
	_, s := profileSession(b)
	n := 0
	for b.Loop() {
		n++
		s.must(b, "exec_command", map[string]any{"operationId": fmt.Sprintf("x%d", n), "program": "true"})
	}
}

// BenchmarkProfileListProjects is list_projects through /mcp.
func BenchmarkProfileListProjects(b *testing.B) {
	_, s := profileSession(b)
	for b.Loop() {
		s.must(b, "list_projects", map[string]any{})
	}
}

// BenchmarkProfileReadFiles is read_files of one 4 KiB file through /mcp.
func BenchmarkProfileReadFiles(b *testing.B) {
	env, s := profileSession(b)
	if err := os.WriteFile(filepath.Join(env.Roots["alpha"], "f4k.txt"), []byte(bareBody()), 0o644); err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"files": []any{map[string]any{"path": "f4k.txt"}}}
	for b.Loop() {
		s.must(b, "read_files", args)
	}
}

// BenchmarkProfileApplyPatch is the 1,000-hunk patch through /mcp, new
// contents every round.
func BenchmarkProfileApplyPatch(b *testing.B) {
	env, s := profileSession(b)
	pt := testutil.NewPatchBench("")
	n := 0
	for b.Loop() {
		b.StopTimer()
		n++
		ifMatch, err := resetPatchTree(pt, env.Roots["alpha"], n)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		s.must(b, "apply_patch", map[string]any{"operationId": fmt.Sprintf("p%d", n), "patch": pt.Codex, "ifMatch": ifMatch})
	}
}

// BenchmarkProfileUndoRecord splits a 200-file patch into patch.Apply,
// undo.Store.Record (the snapshot apply_patch takes for undo_patch) and
// patch.RenderDiff (the journal's diff), reporting each one's median.
func BenchmarkProfileUndoRecord(b *testing.B) {
	pt := testutil.NewPatchBench("")
	dir := b.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	us, err := undo.NewStore(undo.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer us.Close()
	var tApply, tRecord, tDiff durations
	n := 0
	for b.Loop() {
		n++
		hashes, err := resetPatchTree(pt, dir, n)
		if err != nil {
			b.Fatal(err)
		}
		pre := map[string]patch.Precondition{}
		for name, h := range hashes {
			pre[name] = patch.Precondition{Set: true, ContentHash: h.(string)}
		}
		p, err := patch.Parse(pt.Codex)
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		res, err := patch.Apply(context.Background(), root, p, pre, patch.Options{})
		if err != nil {
			b.Fatal(err)
		}
		tApply = append(tApply, time.Since(t0))
		t0 = time.Now()
		if err := us.Record(context.Background(), "exe_profile", fmt.Sprintf("op%d", n), res, func(p string) (string, error) { return p, nil }); err != nil {
			b.Fatal(err)
		}
		tRecord = append(tRecord, time.Since(t0))
		t0 = time.Now()
		_ = patch.RenderDiff(res)
		tDiff = append(tDiff, time.Since(t0))
	}
	b.ReportMetric(ms(tApply.p50()), "apply-ms")
	b.ReportMetric(ms(tRecord.p50()), "undo-record-ms")
	b.ReportMetric(ms(tDiff.p50()), "render-diff-ms")
}
