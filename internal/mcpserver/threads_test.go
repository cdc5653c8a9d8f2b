package mcpserver_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/apptest"
)

func TestThreads(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	c := env.Register("threads", "http://127.0.0.1:9/cb", "client_secret_basic")
	a := env.GrantFor(c, apptest.Approval{Projects: []string{"alpha"}})
	b := env.GrantFor(c, apptest.Approval{Projects: []string{"alpha"}})
	csA, csB := connect(t, env, a.AccessToken, ""), connect(t, env, b.AccessToken, "")
	me := actor("conv-1", "user-1")
	callTool(t, csA, "project_control", map[string]any{"action": "open", "operationId": "o1"}, me)

	sc, res := callTool(t, csA, "project_thread_control", map[string]any{"action": "list"}, me)
	threads := sc["threads"].([]any)
	if res.IsError || len(threads) != 1 {
		t.Fatalf("list: %v", sc)
	}
	th := threads[0].(map[string]any)
	ref := th["threadRef"].(string)
	if th["status"] != "active" || th["projectLabel"] != "alpha" {
		t.Fatalf("thread: %v", th)
	}
	// Another Actor of the same grant, and another grant, see nothing.
	for name, tc := range map[string]struct {
		cs   any
		meta map[string]any
	}{"other actor": {csA, actor("conv-1", "user-2")}, "other grant": {csB, me}} {
		_ = tc.cs
		cs := csA
		if name == "other grant" {
			cs = csB
		}
		sc, _ := callTool(t, cs, "project_thread_control", map[string]any{"action": "status", "threadRef": ref}, tc.meta)
		if errCode(sc) != "project_thread_not_found" {
			t.Fatalf("%s: %v", name, sc)
		}
		sc, _ = callTool(t, cs, "project_thread_control", map[string]any{"action": "list"}, tc.meta)
		if l, _ := sc["threads"].([]any); len(l) != 0 {
			t.Fatalf("%s lists: %v", name, sc)
		}
	}
	// Activity: the open entry, then a long poll woken by a checkpoint.
	sc, _ = callTool(t, csA, "project_thread_control", map[string]any{"action": "activity", "threadRef": ref}, me)
	acts := sc["activity"].([]any)
	if len(acts) != 1 || acts[0].(map[string]any)["kind"] != "opened" {
		t.Fatalf("activity: %v", sc)
	}
	since := acts[0].(map[string]any)["seq"].(float64)
	var wg sync.WaitGroup
	var polled map[string]any
	start := time.Now()
	wg.Add(1)
	go func() {
		defer wg.Done()
		polled, _ = callTool(t, csA, "project_thread_control", map[string]any{"action": "activity", "threadRef": ref, "since": since, "waitMs": 10000}, me)
	}()
	time.Sleep(200 * time.Millisecond)
	callTool(t, csA, "save_progress", map[string]any{"operationId": "s1", "title": "secret plan", "progress": "do not leak this body", "status": "resumable"}, me)
	wg.Wait()
	if time.Since(start) > 5*time.Second || len(polled["activity"].([]any)) != 1 {
		t.Fatalf("long poll: %v after %v", polled, time.Since(start))
	}
	if strings.Contains(mustJSON(polled), "do not leak") || strings.Contains(mustJSON(polled), "secret plan") || strings.Contains(mustJSON(polled), "s1") {
		t.Fatalf("checkpoint carries the Task body or operationId: %v", polled)
	}
	// Lifecycle with ifMatch.
	sc, _ = callTool(t, csA, "project_thread_control", map[string]any{"action": "archive", "threadRef": ref, "ifMatch": 9}, me)
	if errCode(sc) != "thread_revision_conflict" {
		t.Fatalf("stale ifMatch: %v", sc)
	}
	sc, _ = callTool(t, csA, "project_thread_control", map[string]any{"action": "archive", "threadRef": ref, "ifMatch": 1}, me)
	if sc["thread"].(map[string]any)["status"] != "archived" {
		t.Fatalf("archive: %v", sc)
	}
	sc, _ = callTool(t, csA, "project_thread_control", map[string]any{"action": "close", "threadRef": ref, "ifMatch": 2}, me)
	if sc["thread"].(map[string]any)["status"] != "closed" {
		t.Fatalf("close: %v", sc)
	}
	// Closing the Thread closed its execution; the saved Task is untouched.
	sc, _ = callTool(t, csA, "project_control", map[string]any{"action": "hydrate"}, me)
	if errCode(sc) != "project_execution_required" {
		t.Fatalf("execution after close: %v", sc)
	}
	sc, _ = callTool(t, csA, "list_projects", nil, nil)
	if sc["projects"].([]any)[0].(map[string]any)["resumableTaskCount"] != float64(1) {
		t.Fatalf("thread close touched the Task: %v", sc)
	}
}
