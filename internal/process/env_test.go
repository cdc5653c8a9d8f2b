package process

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBaseEnv(t *testing.T) {
	host := []string{
		"PATH=/usr/bin:/bin", "HOME=/home/dev", "LANG=en_US.UTF-8", "LC_TIME=C", "TZ=UTC",
		"GOPATH=/go", "DEVSPACE_MASTER_KEY_FILE=/run/key", "GITHUB_TOKEN=ghp_x", "AWS_SECRET_ACCESS_KEY=abc",
		"SSH_AUTH_SOCK=/tmp/agent", "TERM=xterm-256color", "PAGER=less", "HTTPS_PROXY=http://proxy:3128",
		"HTTP_PROXY=http://user:pw@proxy:3128", "LC_BAD-NAME=x", "NOEQUALS",
	}
	want := []string{
		"GIT_PAGER=cat", "GIT_TERMINAL_PROMPT=0", "HOME=/home/dev", "HTTPS_PROXY=http://proxy:3128",
		"LANG=en_US.UTF-8", "LC_TIME=C", "MANPAGER=cat", "NO_COLOR=1", "PAGER=cat", "PATH=/usr/bin:/bin",
		"TERM=dumb", "TZ=UTC",
	}
	if diff := cmp.Diff(want, BaseEnv(host)); diff != "" {
		t.Errorf("BaseEnv (-want +got):\n%s", diff)
	}
	empty := BaseEnv(nil)
	if v := envValue(empty, "PATH"); v != defaultPath {
		t.Errorf("default PATH = %q", v)
	}
	if v := envValue(empty, "LANG"); v != "C.UTF-8" {
		t.Errorf("default LANG = %q", v)
	}
}

func TestMergeEnv(t *testing.T) {
	got := MergeEnv([]string{"A=1", "TERM=dumb"}, map[string]string{"TERM": "xterm", "B": "x=y"})
	if diff := cmp.Diff([]string{"A=1", "B=x=y", "TERM=xterm"}, got); diff != "" {
		t.Errorf("MergeEnv (-want +got):\n%s", diff)
	}
}

func TestValidateEnv(t *testing.T) {
	many := map[string]string{}
	for i := 0; i <= MaxEnvEntries; i++ {
		many["V"+strings.Repeat("x", i)] = "1"
	}
	tests := []struct {
		name string
		env  map[string]string
		ok   bool
	}{
		{name: "nil", env: nil, ok: true},
		{name: "simple", env: map[string]string{"FOO": "bar", "_x1": "", "CI": "true"}, ok: true},
		{name: "ld_preload_allowed", env: map[string]string{"LD_PRELOAD": "/lib/x.so"}, ok: true},
		{name: "value_with_newline_and_equals", env: map[string]string{"A": "x=y\nz"}, ok: true},
		{name: "leading_digit", env: map[string]string{"1A": "x"}},
		{name: "dash", env: map[string]string{"MY-VAR": "x"}},
		{name: "empty_name", env: map[string]string{"": "x"}},
		{name: "equals_in_name", env: map[string]string{"A=B": "x"}},
		{name: "nul_in_name", env: map[string]string{"A\x00": "x"}},
		{name: "nul_in_value", env: map[string]string{"A": "x\x00y"}},
		{name: "unicode_name", env: map[string]string{"É": "x"}},
		{name: "too_many", env: many},
		{name: "too_big", env: map[string]string{"A": strings.Repeat("x", MaxEnvBytes)}},
		{name: "at_size_limit", env: map[string]string{"A": strings.Repeat("x", MaxEnvBytes-2)}, ok: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateEnv(tc.env)
			if tc.ok && err != nil {
				t.Errorf("ValidateEnv = %v, want nil", err)
			}
			if !tc.ok && !errors.Is(err, ErrInvalidEnv) {
				t.Errorf("ValidateEnv = %v, want ErrInvalidEnv", err)
			}
		})
	}
}

func TestCgroupAvailable(t *testing.T) {
	ok, reason := CgroupAvailable()
	t.Logf("cgroup available: %v (%s)", ok, reason)
	if reason == "" || strings.Contains(reason, "/") {
		t.Errorf("reason %q must be a sentence without a path", reason)
	}
}
