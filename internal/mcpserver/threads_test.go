package mcpserver_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/apptest"
)

func TestThreads(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	c := env.Register("threads", "http://127.0.0.1:9/cb", "client_secret_basic")
	a := env.GrantFor(c, apptest.Approval{Projects: []string{"alpha"}})
	b := env.GrantFor(c, apptest.Approval{Projects: []string{"alpha"}})
	csA, csB := connect(t, env, a.AccessToken, ""), connect(t, env, b.AccessToken, "")
	me := actor("conv-1", "user-1")
	callTool(t, csA, "project_control", map[string]any{"action": "open", "operationId": "o1"}, me)

	sc, _ := callTool(t, csA, "project_thread_control", map[string]any{"action": "list"}, me)
	threads := mustCall[threadControlView](t, csA, "project_thread_control", map[string]any{"action": "list"}, me).Threads
	if len(threads) != 1 || threads[0].Status != "active" || sc["threads"].([]any)[0].(map[string]any)["projectLabel"] != "alpha" {
		t.Fatalf("list: %v", sc)
	}
	ref := threads[0].ThreadRef
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
	acts := mustCall[threadControlView](t, csA, "project_thread_control", map[string]any{"action": "activity", "threadRef": ref}, me).Activity
	if len(acts) != 1 || acts[0].Kind != "opened" {
		t.Fatalf("activity: %+v", acts)
	}
	since := acts[0].Seq
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
	for i, status := range []string{"archived", "closed"} {
		action := map[string]string{"archived": "archive", "closed": "close"}[status]
		th := mustCall[threadControlView](t, csA, "project_thread_control", map[string]any{"action": action, "threadRef": ref, "ifMatch": i + 1}, me).Thread
		if th == nil || th.Status != status {
			t.Fatalf("%s: %+v", action, th)
		}
	}
	// Closing the Thread closed its execution; the saved Task is untouched.
	sc, _ = callTool(t, csA, "project_control", map[string]any{"action": "hydrate"}, me)
	if errCode(sc) != "project_execution_required" {
		t.Fatalf("execution after close: %v", sc)
	}
	if p := mustCall[listProjectsView](t, csA, "list_projects", nil, nil).Projects; p[0].ResumableTaskCount != 1 {
		t.Fatalf("thread close touched the Task: %+v", p)
	}
}
