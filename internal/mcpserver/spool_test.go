package mcpserver_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/apptest"
)

// readAll pages through the retained output ref of g and returns it with
// the final page's answer.
func (g *grantConn) readAll(t *testing.T, ref string) (string, map[string]any) {
	t.Helper()
	var out strings.Builder
	args := map[string]any{"outputRef": ref, "limit": 256000}
	for {
		sc, res := callTool(t, g.cs, "read_process_output", args, g.me)
		if res.IsError {
			return out.String(), sc
		}
		out.WriteString(sc["output"].(string))
		if sc["nextCursor"] == nil {
			return out.String(), sc
		}
		args["cursor"] = sc["nextCursor"]
	}
}

// headAndTail returns the first and last n bytes g reads of ref.
func (g *grantConn) headAndTail(t *testing.T, ref string, n int) (head, tail string) {
	t.Helper()
	h, _ := callTool(t, g.cs, "read_process_output", map[string]any{"outputRef": ref, "limit": n}, g.me)
	tl, _ := callTool(t, g.cs, "read_process_output", map[string]any{"outputRef": ref, "mode": "tail", "limit": n}, g.me)
	head, _ = h["output"].(string)
	tail, _ = tl["output"].(string)
	return head, tail
}

// TestOutputGrantShare (issue 31, item 4) is the reported attack through
// OAuth and MCP: a grant runs 16 commands of 64 MiB of output each, the
// whole 1 GiB spool. Another grant's output from before the flood is
// still readable afterwards, also after the sweep the flood brings, and
// its new output is kept whole. The flooding grant pays: its own oldest
// output goes, its own new output is truncated, and each of its
// commands, the running one too, keeps its head and its tail. Before the
// share, the other grant's new command kept none of its output and its
// earlier output answered process_not_found after the next sweep.
func TestOutputGrantShare(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"a", "b"}, Env: execScopes})
	scopes := []string{"project:read", "process:execute"}
	flooder := openGrant(t, env, "flooder", "a", scopes)
	other := openGrant(t, env, "other", "b", scopes)
	run := func(g *grantConn, op, command string) map[string]any {
		t.Helper()
		sc, res := callTool(t, g.cs, "exec_command", map[string]any{"operationId": op, "shell": true, "command": command, "timeoutMs": 120000}, g.me)
		if res.IsError {
			t.Fatalf("%s: %v", op, sc)
		}
		return sc
	}
	// seqOutput is what seq from..to prints between a HEAD and a TAIL line.
	seqOutput := func(from, to int) (command, output string) {
		var b strings.Builder
		b.WriteString("HEAD\n")
		for i := from; i <= to; i++ {
			fmt.Fprintf(&b, "%d\n", i)
		}
		b.WriteString("TAIL\n")
		return fmt.Sprintf("echo HEAD; seq %d %d; echo TAIL", from, to), b.String()
	}
	checkWhole := func(what, ref, want string) {
		t.Helper()
		got, last := other.readAll(t, ref)
		if got != want || last["truncated"] == true || last["omittedBytes"] != nil {
			t.Errorf("%s: read %d bytes (truncated %v, omitted %v): %v; want its %d bytes whole",
				what, len(got), last["truncated"], last["omittedBytes"], errCode(last), len(want))
		}
	}

	cmd, before := seqOutput(1, 100000)
	earlier := other.finish(t, run(other, "before", cmd)["processRef"].(string), time.Minute)

	start := time.Now()
	flood := make([]map[string]any, 16)
	for i := range flood {
		sc := run(flooder, fmt.Sprint("flood-", i), "echo HEAD; head -c 64M /dev/zero; echo TAIL")
		flood[i] = flooder.finish(t, sc["processRef"].(string), 2*time.Minute)
	}
	// The flooder's next command runs on, past its share.
	live := run(flooder, "live", "echo HEAD; head -c 64M /dev/zero; echo TAIL; exec sleep 600")
	for deadline := time.Now().Add(time.Minute); ; {
		if sc, _ := callTool(t, flooder.cs, "read_process_output", map[string]any{"outputRef": live["outputRef"], "mode": "tail", "limit": 5}, flooder.me); sc["output"] == "TAIL\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the flooder's running command never wrote its output")
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("flood of 16 × 64 MiB and a running 64 MiB: %s", time.Since(start).Round(time.Millisecond))

	cmd, after := seqOutput(100001, 200000)
	next := other.finish(t, run(other, "after", cmd)["processRef"].(string), time.Minute)
	checkWhole("the other grant's new command beside the flood", next["outputRef"].(string), after)

	// The flood asks for a sweep, which retires the flooder's oldest
	// output. (Allow the minute's periodic sweep too, so that code without
	// the share fails on what the other grant keeps, not on the wait.)
	for deadline := time.Now().Add(90 * time.Second); ; {
		if sc, _ := callTool(t, flooder.cs, "read_process_output", map[string]any{"outputRef": flood[0]["outputRef"], "limit": 1}, flooder.me); errCode(sc) == "process_not_found" {
			t.Logf("the flooder's oldest output retired %s after the flood", time.Since(start).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the flooder's oldest output is still retained 90 s after its flood")
		}
		time.Sleep(100 * time.Millisecond)
	}
	checkWhole("the other grant's earlier command after the sweep", earlier["outputRef"].(string), before)
	checkWhole("the other grant's new command after the sweep", next["outputRef"].(string), after)

	// What the flooder keeps: within its share (the gauge is the grant
	// holding the most), each command with its head and tail.
	if most, share := gauge(t, env, "devspace_output_bytes_retained_grant_max"), gauge(t, env, "devspace_output_grant_share_bytes"); most > share {
		t.Errorf("the flooder holds %d bytes of the spool, over its share of %d", most, share)
	}
	kept := 0
	for i, sc := range append(flood, live) {
		h, tl := flooder.headAndTail(t, sc["outputRef"].(string), 5)
		if h == "" && tl == "" {
			continue // retired
		}
		kept++
		if h != "HEAD\n" || tl != "TAIL\n" {
			t.Errorf("the flooder's command %d kept head %q and tail %q", i, h, tl)
		}
	}
	if kept < 2 {
		t.Errorf("the flooder kept %d of its commands' output", kept)
	}
	if sc, _ := callTool(t, flooder.cs, "read_process_output", map[string]any{"outputRef": live["outputRef"], "limit": 1}, flooder.me); sc["status"] != "running" || sc["truncated"] != true {
		t.Errorf("the flooder's running command past its share: %v", sc)
	}
}
