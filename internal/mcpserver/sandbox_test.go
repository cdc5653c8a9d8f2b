package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/sandbox"
)

func needLandlock(t *testing.T) {
	t.Helper()
	if !sandbox.Probe().Available() {
		t.Skip("no Landlock on this kernel")
	}
}

// openExec connects a grant and opens an execution on its first Project.
func openExec(t *testing.T, env *apptest.Env, scopes []string, projects ...string) func(args map[string]any) map[string]any {
	t.Helper()
	_, tok := env.Grant(apptest.Approval{Scopes: scopes, Projects: projects})
	cs := connect(t, env, tok.AccessToken, "")
	me := session("s-" + strings.Join(scopes, "-"))
	if sc, res := callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, me); res.IsError {
		t.Fatalf("open: %v", sc)
	}
	n := 0
	return func(args map[string]any) map[string]any {
		t.Helper()
		n++
		args["operationId"] = "op" + string(rune('a'+n))
		sc, _ := callTool(t, cs, "exec_command", args, me)
		return sc
	}
}

func shellCmd(cmd string, extra ...string) map[string]any {
	m := map[string]any{"shell": true, "command": cmd}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

func exitOK(sc map[string]any) bool { return sc["status"] == "exited" && sc["exitCode"] == float64(0) }

func refused(sc map[string]any) bool {
	out, _ := sc["output"].(string)
	return sc["status"] == "exited" && sc["exitCode"] != float64(0) &&
		(strings.Contains(out, "Permission denied") || strings.Contains(out, "Operation not permitted"))
}

// TestExecSandboxThroughMCP: a command of grant A on alpha cannot read
// the state directory or beta, and the sandbox parameter decides whether
// it may write alpha. A grant without project:write runs commands, always
// read-only.
func TestExecSandboxThroughMCP(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	env := apptest.Start(t, apptest.Options{Env: execScopes})
	alpha, beta := env.Roots["alpha"], env.Roots["beta"]
	os.WriteFile(filepath.Join(alpha, "a.txt"), []byte("alpha"), 0o644)
	os.WriteFile(filepath.Join(beta, "b.txt"), []byte("SECRET-beta"), 0o644)

	rw := openExec(t, env, []string{"project:read", "project:write", "process:execute"}, "alpha")
	for name, cmd := range map[string]string{
		"auth.json":    "cat " + filepath.Join(env.StateDir, "auth.json"),
		"database":     "cat " + filepath.Join(env.StateDir, "devspace.db") + " >/dev/null",
		"output dir":   "ls " + filepath.Join(env.StateDir, "output"),
		"beta":         "cat " + filepath.Join(beta, "b.txt"),
		"server env":   "cat /proc/" + itoa(os.Getpid()) + "/environ",
		"write beta":   "echo x > " + filepath.Join(beta, "pwned"),
		"signal serve": "kill -0 " + itoa(os.Getpid()),
	} {
		if sc := rw(shellCmd(cmd)); !refused(sc) {
			t.Errorf("%s: not refused: %v", name, sc)
		}
	}
	sc := rw(shellCmd("cat a.txt && echo new > new.txt && cat new.txt"))
	if !exitOK(sc) || sc["sandbox"] != "workspaceWrite" || !strings.Contains(sc["output"].(string), "new") {
		t.Errorf("workspaceWrite by default: %v", sc)
	}
	if sc := rw(shellCmd("echo x > ro.txt", "sandbox", "readOnly")); !refused(sc) || sc["sandbox"] != "readOnly" {
		t.Errorf("readOnly wrote alpha: %v", sc)
	}
	if _, err := os.Stat(filepath.Join(alpha, "ro.txt")); err == nil {
		t.Error("ro.txt exists")
	}

	ro := openExec(t, env, []string{"project:read", "process:execute"}, "alpha")
	if sc := ro(shellCmd("cat a.txt")); !exitOK(sc) || sc["sandbox"] != "readOnly" {
		t.Errorf("read-only grant cannot read: %v", sc)
	}
	if sc := ro(shellCmd("echo x > ro2.txt")); !refused(sc) {
		t.Errorf("read-only grant wrote alpha: %v", sc)
	}
	if sc := ro(shellCmd("echo x > ro3.txt", "sandbox", "workspaceWrite")); errCode(sc) != "insufficient_scope" {
		t.Errorf("workspaceWrite without project:write: %v", sc)
	}
}

// TestSandboxFailClosed: where the kernel offers no Landlock (forced by the
// test hook), process:execute is no longer offered, and a grant that got
// it before is refused with sandbox_unavailable.
func TestSandboxFailClosed(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}, Env: execScopes})
	_, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read", "project:write", "process:execute"}})

	env.SetSandboxProbe(func() sandbox.Status { return sandbox.Status{Reason: "forced by the test"} })
	env.Restart()
	resp, err := http.Get(env.URL + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Scopes []string `json:"scopes_supported"`
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	json.Unmarshal(b, &meta)
	if slices.Contains(meta.Scopes, "process:execute") || !slices.Contains(meta.Scopes, "project:write") {
		t.Errorf("scopes offered without a sandbox: %v", meta.Scopes)
	}
	c := env.Register("later", "http://127.0.0.1:9/callback", "none")
	_, challenge := apptest.PKCE()
	res := env.Authorize(env.AuthURL(c, challenge, "st", "project:read process:execute", nil), apptest.Approval{})
	if res.Location == nil || res.Location.Query().Get("error") != "invalid_scope" {
		t.Errorf("process:execute requested without a sandbox: %d %v", res.Status, res.Location)
	}

	cs := connect(t, env, tok.AccessToken, "")
	me := session("old")
	callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, me)
	sc, _ := callTool(t, cs, "exec_command", map[string]any{"operationId": "e", "program": "true"}, me)
	if errCode(sc) != "sandbox_unavailable" {
		t.Errorf("exec_command without a sandbox: %v", sc)
	}
	if body := readyz(t, env); !strings.Contains(body, `"command_sandbox":false`) {
		t.Errorf("/readyz: %s", body)
	}
}

func readyz(t *testing.T, env *apptest.Env) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, env.URL+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestInterruptFreesProject replays issue 16's interrupt defect: a setsid
// loop in the background ignores SIGINT. The interrupt must still end the
// whole tree, say so, and free the Project for apply_patch. Not
// parallel, like TestWriteStdinInterruptKillsDaemon: the Project must be
// free within 2 s.
func TestInterruptFreesProject(t *testing.T) {
	env := apptest.Start(t, apptest.Options{Projects: []string{"alpha"}, Env: execScopes})
	_, tok := env.Grant(apptest.Approval{Scopes: []string{"project:read", "project:write", "process:execute"}})
	cs := connect(t, env, tok.AccessToken, "")
	me := session("interrupt")
	callTool(t, cs, "project_control", map[string]any{"action": "open", "operationId": "o"}, me)
	mark := marker(t)
	sc, _ := callTool(t, cs, "exec_command", map[string]any{"operationId": "e", "shell": true,
		"command": "setsid sh -c 'while :; do sleep 1; done' " + mark + " & sleep 1000 # " + mark}, me)
	if sc["status"] != "running" {
		t.Fatalf("exec: %v", sc)
	}
	ref := sc["processRef"].(string)
	if sc, _ := callTool(t, cs, "project_control", map[string]any{"action": "interrupt"}, me); sc["interrupted"] != float64(1) {
		t.Fatalf("interrupt: %v", sc)
	}
	waitGone(t, mark)
	var st map[string]any
	for i := 0; i < 50; i++ {
		st, _ = callTool(t, cs, "read_process_output", map[string]any{"processRef": ref}, me)
		if st["status"] != "running" && st["treeAlive"] != true {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st["killReason"] != "interrupt" {
		t.Errorf("the state does not say what the interrupt killed: %v", st)
	}
	start := time.Now()
	sc, _ = callTool(t, cs, "apply_patch", map[string]any{"operationId": "p",
		"patch": "*** Begin Patch\n*** Add File: after.txt\n+free\n*** End Patch\n", "ifMatch": map[string]any{"after.txt": nil}}, me)
	if errCode(sc) != "" || time.Since(start) > 2*time.Second {
		t.Errorf("apply_patch after the interrupt (%s): %v", time.Since(start), sc)
	}
}
