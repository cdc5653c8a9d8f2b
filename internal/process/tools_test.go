package process

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCommandEnv(t *testing.T) {
	base := []string{"HOME=/home/dev", "TMPDIR=/tmp", "PATH=/usr/bin:/bin", "GOFLAGS=-mod=mod", "GOCACHE=/caller/gocache"}
	tests := []struct {
		name     string
		tools    string
		readOnly bool
		want     []string
	}{
		{
			name: "no tool home", want: []string{"GOFLAGS=-mod=mod", "GOCACHE=/caller/gocache", "HOME=/s", "TMPDIR=/s", "PATH=/usr/bin:/bin"},
		},
		{
			name: "workspaceWrite", tools: "/t",
			want: []string{"GOFLAGS=-mod=mod", "GOCACHE=/caller/gocache", "HOME=/t", "TMPDIR=/s",
				"XDG_CACHE_HOME=/t/.cache", "XDG_CONFIG_HOME=/t/.config", "XDG_DATA_HOME=/t/.local/share", "XDG_STATE_HOME=/t/.local/state",
				"GOPATH=/t/go", "GOMODCACHE=/t/go/pkg/mod", "npm_config_cache=/t/.npm", "npm_config_prefix=/t/.local",
				"PIP_CACHE_DIR=/t/.cache/pip", "PYTHONUSERBASE=/t/.local", "UV_CACHE_DIR=/t/.cache/uv", "CARGO_HOME=/t/.cargo", "RUSTUP_HOME=/t/.rustup",
				"PATH=/t/bin:/t/.local/bin:/t/go/bin:/t/.cargo/bin:/usr/bin:/bin"},
		},
		{
			name: "readOnly: HOME and caches in scratch, tools read from the tool home", tools: "/t", readOnly: true,
			want: []string{"GOFLAGS=-mod=mod", "GOCACHE=/caller/gocache", "HOME=/s", "TMPDIR=/s",
				"XDG_CACHE_HOME=/s/.cache", "XDG_CONFIG_HOME=/t/.config", "XDG_DATA_HOME=/t/.local/share", "XDG_STATE_HOME=/s/.local/state",
				"GOPATH=/t/go", "GOMODCACHE=/t/go/pkg/mod", "npm_config_cache=/s/.npm", "npm_config_prefix=/t/.local",
				"PIP_CACHE_DIR=/s/.cache/pip", "PYTHONUSERBASE=/t/.local", "UV_CACHE_DIR=/s/.cache/uv", "CARGO_HOME=/t/.cargo", "RUSTUP_HOME=/t/.rustup",
				"PATH=/t/bin:/t/.local/bin:/t/go/bin:/t/.cargo/bin:/usr/bin:/bin"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, commandEnv(base, "/s", tt.tools, tt.readOnly)); d != "" {
				t.Errorf("commandEnv (-want +got):\n%s", d)
			}
		})
	}
}

func TestToolHomeName(t *testing.T) {
	a, b := ToolHome("/tools", "fpA"), ToolHome("/tools", "fpB")
	if a == b || filepath.Dir(a) != "/tools" || filepath.Dir(b) != "/tools" || a != ToolHome("/tools", "fpA") {
		t.Errorf("ToolHome: %q and %q", a, b)
	}
	if d := ToolHome("/tools", "../../etc"); filepath.Dir(d) != "/tools" {
		t.Errorf("ToolHome of a hostile key = %q, outside /tools", d)
	}
}

// runTools runs cmd as a command of group on root with the tool home
// keyed by key, and returns its exit code and output.
func (a *appliance) runTools(t *testing.T, group, root, key string, readOnly bool, spec Spec) (int, string) {
	t.Helper()
	spec.Dir, spec.Root, spec.ReadOnly, spec.Tools, spec.Timeout = root, root, readOnly, key, 90*time.Second
	if spec.Env == nil {
		spec.Env = BaseEnv(os.Environ())
	}
	p, err := a.m.Start(context.Background(), group, spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	st := waitExit(t, p, 90*time.Second)
	waitDone(t, p, 10*time.Second)
	out := string(p.Head(1 << 20))
	if st.ExitCode == nil {
		return -1, out
	}
	return *st.ExitCode, out
}

func shell(cmd string) Spec { return Spec{Shell: true, Command: cmd} }

// TestToolHomeConfinement: a Project's tool home keeps what one
// execution's command installs for the next, and no further: a readOnly
// command may run but not change it, another Project's command neither
// sees nor reaches it, and a symlink planted in it leads nowhere new.
func TestToolHomeConfinement(t *testing.T) {
	tools := t.TempDir()
	a := newAppliance(t, Options{Sandbox: SandboxOptions{ToolsDir: tools}})
	homeA, homeB := ToolHome(tools, "fpA"), ToolHome(tools, "fpB")

	// Execution 1 on alpha installs a tool in its tool home's bin.
	code, out := a.runTools(t, "exec1", a.alpha, "fpA", false, shell(
		`test "$HOME" = "`+homeA+`" && test "$TMPDIR" != "$HOME" && mkdir -p "$HOME/bin" && `+
			`printf '#!/bin/sh\necho tool-A "$@"\n' > "$HOME/bin/mytool" && chmod +x "$HOME/bin/mytool" && echo installed`))
	if code != 0 || !strings.Contains(out, "installed") {
		t.Fatalf("install in the tool home: exit %d, %q", code, out)
	}
	if fi, err := os.Stat(homeA); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("tool home: %v %v, want a 0700 directory", fi, err)
	}
	// Execution 1 closes: its scratch goes, the tool home stays.
	a.m.KillGroup("exec1", "close")

	cases := []struct {
		name     string
		group    string
		root     string
		key      string
		readOnly bool
		spec     Spec
		wantCode int
		wantOut  string
	}{
		{"a later execution finds it (direct mode, on PATH)", "exec2", a.alpha, "fpA", false, Spec{Program: "mytool", Args: []string{"x"}}, 0, "tool-A x"},
		{"a later execution finds it (shell)", "exec2", a.alpha, "fpA", false, shell("mytool y"), 0, "tool-A y"},
		{"a readOnly command runs it", "exec3", a.alpha, "fpA", true, shell("mytool z"), 0, "tool-A z"},
		{"a readOnly command cannot write the tool home", "exec3", a.alpha, "fpA", true,
			shell(`echo evil > "` + homeA + `/bin/mytool"; echo rc=$?; mkdir "$GOPATH" 2>&1; echo rc=$?`), 0, "Permission denied"},
		{"a readOnly command's caches are writable (its scratch)", "exec3", a.alpha, "fpA", true,
			shell(`mkdir -p "$GOCACHE" "$npm_config_cache" && touch "$GOCACHE/x" && test "$HOME" = "$TMPDIR" && echo ok`), 0, "ok"},
		{"another Project's command does not find it", "execB", a.beta, "fpB", false, shell("mytool; echo rc=$?"), 0, "rc=127"},
		{"another Project's command cannot read it", "execB", a.beta, "fpB", false, shell(`cat "` + homeA + `/bin/mytool"`), 1, "Permission denied"},
		{"another Project's command cannot list the tools directory", "execB", a.beta, "fpB", false, shell(`ls "` + tools + `"`), 2, "Permission denied"},
		{"another Project's command cannot write it", "execB", a.beta, "fpB", false, shell(`echo x > "` + homeA + `/planted"`), 1, "Permission denied"},
		{"a symlink planted in the tool home leads to another Project", "exec2", a.alpha, "fpA", false,
			shell(`ln -sfn "` + a.beta + `" "$HOME/beta" && cat "$HOME/beta/secret.txt"`), 1, "Permission denied"},
		{"a symlink planted in the tool home leads to another tool home", "exec2", a.alpha, "fpA", false,
			shell(`ln -sfn "` + homeB + `" "$HOME/b" && echo x > "$HOME/b/planted"`), 1, "Permission denied"},
		{"a symlink planted in the tool home leads to the state", "exec2", a.alpha, "fpA", false,
			shell(`ln -sfn "` + a.state + `" "$HOME/s" && cat "$HOME/s/auth.json"`), 1, "Permission denied"},
		{"the tool home cannot be moved away and replaced", "exec2", a.alpha, "fpA", false,
			shell(`mv "$HOME" "$HOME.old"`), 1, "Permission denied"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			code, out := a.runTools(t, tt.group, tt.root, tt.key, tt.readOnly, tt.spec)
			if code != tt.wantCode || !strings.Contains(out, tt.wantOut) {
				t.Errorf("exit %d, output %q; want exit %d and %q", code, out, tt.wantCode, tt.wantOut)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(homeA, "planted")); err == nil {
		t.Error("another Project's command planted a file in alpha's tool home")
	}
	if _, err := os.Stat(filepath.Join(homeB, "planted")); err == nil {
		t.Error("alpha's command planted a file in beta's tool home through a symlink")
	}
	if b, _ := os.ReadFile(filepath.Join(homeA, "bin", "mytool")); strings.Contains(string(b), "evil") {
		t.Error("a readOnly command rewrote the tool")
	}
}

// TestToolHomeOffWithoutToolsDir: without ToolsDir a Spec's Tools
// changes nothing (HOME is the scratch directory, as before tool homes).
func TestToolHomeOffWithoutToolsDir(t *testing.T) {
	a := newAppliance(t, Options{})
	code, out := a.runTools(t, "e", a.alpha, "fpA", false, shell(`test "$HOME" = "$TMPDIR" && test -z "$GOPATH" && echo same`))
	if code != 0 || !strings.Contains(out, "same") {
		t.Errorf("exit %d, %q", code, out)
	}
}
