package mcpserver_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/cli"
)

var (
	writeExec = []string{"project:read", "project:write", "process:execute"}
	readExec  = []string{"project:read", "process:execute"}
)

// toolFiles lists the files named name under the tool homes.
func toolFiles(env *apptest.Env, name string) []string {
	var out []string
	_ = filepath.WalkDir(filepath.Join(filepath.Dir(env.StateDir), "tools"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == name {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestToolHomePersists (issue 34): a tool one execution's command drops in
// its Project's tool home is found on PATH by a later execution's command
// on that Project, under another grant and after a restart too; a readOnly
// command runs it and cannot change it; another Project's command does not
// see it.
func TestToolHomePersists(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"a", "b"}, Env: execScopes})
	install := `mkdir -p "$HOME/bin" && printf '#!/bin/sh\necho hello from the tool home\n' > "$HOME/bin/hello-a" && chmod +x "$HOME/bin/hello-a" && echo installed`
	run := func(g *grantConn, op, cmd string) map[string]any {
		t.Helper()
		sc, _ := callTool(t, g.cs, "exec_command", map[string]any{"operationId": op, "shell": true, "command": cmd}, g.me)
		if sc["status"] == "running" {
			sc = g.finish(t, sc["processRef"].(string), 30*time.Second)
		}
		return sc
	}
	first := openGrant(t, env, "first", "a", writeExec)
	if sc := run(first, "install", install); sc["output"] != "installed\n" {
		t.Fatalf("install: %v", sc)
	}
	if got := toolFiles(env, "hello-a"); len(got) != 1 {
		t.Fatalf("the tool in the tool homes: %v", got)
	}

	later := openGrant(t, env, "later", "a", writeExec)
	if sc := run(later, "use", "hello-a"); sc["output"] != "hello from the tool home\n" {
		t.Errorf("a later execution on the Project: %v", sc)
	}
	reader := openGrant(t, env, "reader", "a", readExec)
	if sc := run(reader, "use", "hello-a"); sc["output"] != "hello from the tool home\n" {
		t.Errorf("a readOnly command: %v", sc)
	}
	if sc := run(reader, "plant", `d=$(dirname "$(command -v hello-a)"); { echo evil > "$d/hello-a"; } 2>/dev/null && echo wrote || echo refused`); sc["output"] != "refused\n" {
		t.Errorf("a readOnly command writing the tool home: %v", sc)
	}
	other := openGrant(t, env, "other", "b", writeExec)
	if sc := run(other, "use", "hello-a"); sc["exitCode"] != float64(127) {
		t.Errorf("another Project's command: %v, want command not found (127)", sc)
	}

	env.Restart()
	after := openGrant(t, env, "after-restart", "a", writeExec)
	if sc := run(after, "use", "hello-a"); sc["output"] != "hello from the tool home\n" {
		t.Errorf("after a restart: %v", sc)
	}
}

// TestToolsQuota (issue 34): a command making its Project's tool home grow
// past DEVSPACE_TOOLS_MAX is stopped (tools_quota); the files stay; a
// command that does not make it grow runs, and one may delete them.
func TestToolsQuota(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"a"},
		Env: map[string]string{"DEVSPACE_OAUTH_SCOPES": execScopes["DEVSPACE_OAUTH_SCOPES"], "DEVSPACE_TOOLS_MAX": "32MiB"}})
	g := openGrant(t, env, "quota", "a", writeExec)
	// About 20 MiB/s, so that the guard's look (every 5 s) stops it
	// long before it ends by itself.
	sc, _ := callTool(t, g.cs, "exec_command", map[string]any{"operationId": "grow", "shell": true,
		"command": `mkdir -p "$HOME/.cache" && for i in $(seq 400); do head -c 1M /dev/zero >> "$HOME/.cache/grow"; sleep 0.05; done; echo survived`}, g.me)
	end := g.finish(t, sc["processRef"].(string), 60*time.Second)
	if end["killReason"] != "tools_quota" {
		t.Fatalf("the command growing its tool home past the quota: %v", end)
	}
	if got := toolFiles(env, "grow"); len(got) != 1 {
		t.Fatalf("the tool home's files after the stop: %v, want them kept", got)
	}
	// Over the quota and not growing: commands run, and may clear it.
	next := func(op, cmd, want string) {
		t.Helper()
		sc, _ := callTool(t, g.cs, "exec_command", map[string]any{"operationId": op, "shell": true, "command": cmd}, g.me)
		if sc["status"] == "running" {
			sc = g.finish(t, sc["processRef"].(string), 30*time.Second)
		}
		if sc["output"] != want {
			t.Errorf("%s: %v, want output %q", op, sc, want)
		}
	}
	next("look", `sleep 6; du -sm "$HOME/.cache/grow" >/dev/null && echo still-here`, "still-here\n")
	next("clear", `rm "$HOME/.cache/grow" && echo cleared`, "cleared\n")
	next("within", `head -c 4M /dev/zero > "$HOME/.cache/small"; sleep 6; echo fine`, "fine\n")
}

// ownerCLI runs the owner's command line against env's state and server.
func ownerCLI(t *testing.T, env *apptest.Env, args ...string) (int, string, string) {
	t.Helper()
	vars := map[string]string{"HOME": t.TempDir()}
	for _, k := range []string{"DEVSPACE_STATE_DIR", "DEVSPACE_SCRATCH_DIR", "DEVSPACE_TOOLS_DIR", "DEVSPACE_PROJECTS", "DEVSPACE_PUBLIC_BASE_URL",
		"DEVSPACE_LISTEN", "DEVSPACE_CONTROL_LISTEN", "DEVSPACE_METRICS_LISTEN", "DEVSPACE_ADMIN_LISTEN"} {
		if v, ok := env.LookupEnv(k); ok {
			vars[k] = v
		}
	}
	var out, errb bytes.Buffer
	code := cli.Main(context.Background(), args, func(k string) (string, bool) { v, ok := vars[k]; return v, ok }, cli.IO{Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

// TestClearTools (issue 34): `devspace projects list` shows a Project's
// tool home's size, and `devspace projects clear-tools LABEL` empties it
// through the running server, stopping the commands that could write it
// (tools_cleared), and without a server too.
func TestClearTools(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Projects: []string{"a", "b"}, Env: execScopes})
	g := openGrant(t, env, "clear", "a", writeExec)
	sc, _ := callTool(t, g.cs, "exec_command", map[string]any{"operationId": "install", "shell": true,
		"command": `mkdir -p "$HOME/bin" && head -c 3M /dev/urandom > "$HOME/bin/blob" && echo ok`}, g.me)
	if sc["output"] != "ok\n" {
		t.Fatalf("install: %v", sc)
	}
	code, out, stderr := ownerCLI(t, env, "projects", "list")
	if code != 0 || !regexp.MustCompile(`(?m)^a .*true +3\.\d MiB$`).MatchString(out) || !regexp.MustCompile(`(?m)^b .*true +0 B$`).MatchString(out) {
		t.Fatalf("projects list: %d %q %s", code, out, stderr)
	}
	hold, _ := callTool(t, g.cs, "exec_command", map[string]any{"operationId": "hold", "shell": true, "command": `sleep 60`}, g.me)
	code, out, stderr = ownerCLI(t, env, "projects", "clear-tools", "a")
	if code != 0 || !strings.Contains(out, "1 command(s) stopped") || !strings.Contains(out, "3.0 MiB freed") {
		t.Fatalf("clear-tools: %d %q %s", code, out, stderr)
	}
	if end := g.finish(t, hold["processRef"].(string), 10*time.Second); end["killReason"] != "tools_cleared" {
		t.Errorf("the command that could write the tool home: %v", end)
	}
	if got := toolFiles(env, "blob"); len(got) != 0 {
		t.Errorf("files left after clear-tools: %v", got)
	}
	if code, _, stderr = ownerCLI(t, env, "projects", "clear-tools", "nope"); code != 1 || !strings.Contains(stderr, `no Project labelled "nope"`) {
		t.Errorf("clear-tools of an unknown label: %d %s", code, stderr)
	}
	// The tool home is still the Project's: the next command writes it.
	if sc, _ := callTool(t, g.cs, "exec_command", map[string]any{"operationId": "again", "shell": true,
		"command": `echo x > "$HOME/again" && echo ok`}, g.me); sc["output"] != "ok\n" {
		t.Fatalf("a command after clear-tools: %v", sc)
	}
	env.StopServing()
	if code, out, stderr = ownerCLI(t, env, "projects", "clear-tools", "a"); code != 0 || !strings.Contains(out, "0 command(s) stopped") {
		t.Errorf("offline clear-tools: %d %q %s", code, out, stderr)
	}
	if got := toolFiles(env, "again"); len(got) != 0 {
		t.Errorf("files left after the offline clear-tools: %v", got)
	}
}
