package config

import (
	"bytes"
	"errors"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// env turns a map into a lookup function for Load.
func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// with returns base plus the given key/value pairs.
func with(base map[string]string, kv ...string) map[string]string {
	m := make(map[string]string, len(base)+len(kv)/2)
	for k, v := range base {
		m[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// baseEnv gives a HOME that exists nowhere, so the default state directory
// is predictable and never inside a test project.
var baseEnv = map[string]string{"HOME": "/nonexistent-home"}

// tempDir returns a fresh directory with symlinks resolved, so expected
// paths match what Load stores.
func tempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mkdir(t *testing.T, parts ...string) string {
	t.Helper()
	p := filepath.Join(parts...)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeFile(t *testing.T, parts ...string) string {
	t.Helper()
	p := filepath.Join(parts...)
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func symlink(t *testing.T, target string, parts ...string) string {
	t.Helper()
	p := filepath.Join(parts...)
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// defaultConfig is what Load returns for baseEnv and no flags.
func defaultConfig() *Config {
	return &Config{
		StateDir:           "/nonexistent-home/.local/share/devspace",
		PublicBaseURL:      "http://127.0.0.1:7676",
		CloudflaredMetrics: "http://cloudflared:20241",
		Listen:             "127.0.0.1:7676",
		ControlListen:      "127.0.0.1:7677",
		MetricsListen:      "127.0.0.1:7678",
		AdminListen:        "127.0.0.1:7679",
		AllowedHosts: []string{
			"127.0.0.1", "127.0.0.1:7676", "localhost", "localhost:7676", "[::1]", "[::1]:7676",
		},
		OAuthScopes:               []string{"project:read", "project:write"},
		OAuthAllowedRedirectHosts: []string{"chatgpt.com", "localhost", "127.0.0.1", "[::1]"},
		AccessTTL:                 time.Hour,
		RefreshTTL:                720 * time.Hour,
		LogLevel:                  slog.LevelInfo,
		LogFormat:                 "text",
		Widgets:                   "full",
		MaxRequestBody:            33554432,
		CommandNice:               10,
		Edge:                      defaultEdge(),
		ScratchDir:                "/nonexistent-home/.cache/devspace/scratch",
		ScratchMax:                1 << 30,
		DiskReserve:               256 << 20,
		ToolsDir:                  "/nonexistent-home/.cache/devspace/tools",
		ToolsMax:                  4 << 30,
	}
}

func TestLoadDefaults(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want func(c *Config)
	}{
		{name: "HOME only", env: baseEnv, want: func(*Config) {}},
		{
			name: "XDG_DATA_HOME wins over HOME",
			env:  with(baseEnv, "XDG_DATA_HOME", "/xdg"),
			want: func(c *Config) { c.StateDir = "/xdg/devspace" },
		},
		{
			name: "relative XDG_DATA_HOME is ignored",
			env:  with(baseEnv, "XDG_DATA_HOME", "rel"),
			want: func(*Config) {},
		},
		{
			name: "empty values mean the default",
			env: with(baseEnv, "DEVSPACE_LISTEN", "", "DEVSPACE_OAUTH_SCOPES", "  ",
				"DEVSPACE_PROJECTS", "", "DEVSPACE_MAX_REQUEST_BODY", ""),
			want: func(*Config) {},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Load(nil, env(tt.env))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			want := defaultConfig()
			tt.want(want)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("Load (-want +got):\n%s", d)
			}
		})
	}
}

func TestLoadNoStateDir(t *testing.T) {
	_, err := Load(nil, env(nil))
	want := "DEVSPACE_STATE_DIR: is not set and neither XDG_DATA_HOME nor HOME is set to derive it; set it to the directory for DevSpace's database and keys\n" +
		"DEVSPACE_SCRATCH_DIR: is not set and neither XDG_CACHE_HOME nor HOME is set to derive it; set it to a directory for the commands' scratch space\n" +
		"DEVSPACE_TOOLS_DIR: is not set and neither XDG_CACHE_HOME nor HOME is set to derive it; set it to a directory for the Projects' tool homes"
	if err == nil || err.Error() != want {
		t.Errorf("Load error = %v, want %q", err, want)
	}
}

func TestLoadEnv(t *testing.T) {
	root := tempDir(t)
	app := mkdir(t, root, "app")
	lib := mkdir(t, root, "lib")
	skills := mkdir(t, root, "skills")
	e := with(baseEnv,
		"DEVSPACE_STATE_DIR", "/var/lib/devspace",
		"DEVSPACE_PROJECTS", " web="+app+" , "+lib+",",
		"DEVSPACE_PUBLIC_BASE_URL", "HTTPS://Dev.Example.COM/",
		"DEVSPACE_CLOUDFLARED_METRICS", "http://127.0.0.1:20241/",
		"DEVSPACE_LISTEN", "0.0.0.0:8080",
		"DEVSPACE_CONTROL_LISTEN", "[::1]:8081",
		"DEVSPACE_METRICS_LISTEN", "0.0.0.0:8082",
		"DEVSPACE_ADMIN_LISTEN", "[::1]:8083",
		"DEVSPACE_OAUTH_SCOPES", "project:read,project:write process:execute project:read",
		"DEVSPACE_OAUTH_ALLOWED_REDIRECT_HOSTS", "ChatGPT.com, localhost",
		"DEVSPACE_OAUTH_ACCESS_TTL", "30m",
		"DEVSPACE_OAUTH_REFRESH_TTL", "24h",
		"DEVSPACE_OAUTH_GRANT_MAX_LIFETIME", "2160h",
		"DEVSPACE_OWNER_PASSWORD_FILE", "/run/secrets/owner",
		"DEVSPACE_MASTER_KEY_FILE", "/run/secrets/key",
		"DEVSPACE_LOG_LEVEL", "DEBUG",
		"DEVSPACE_LOG_FORMAT", "json",
		"DEVSPACE_LOG_SHELL_COMMANDS", "1",
		"DEVSPACE_INSTRUCTION_FALLBACKS", "CLAUDE.md, GEMINI.md",
		"DEVSPACE_SKILL_PATHS", skills+"/",
		"DEVSPACE_WIDGETS", "changes",
		"DEVSPACE_MAX_REQUEST_BODY", "64MiB",
		"DEVSPACE_OUTPUT_GRANT_SHARE", "64MiB",
		"DEVSPACE_COMMAND_PIDS_MAX", "500",
		"DEVSPACE_COMMAND_MEMORY_MAX", "2GiB",
		"DEVSPACE_COMMAND_NICE", "19",
	)
	got, err := Load(nil, env(e))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := &Config{
		StateDir:                  "/var/lib/devspace",
		Projects:                  []Project{{Label: "web", Path: app}, {Label: "lib", Path: lib}},
		PublicBaseURL:             "https://dev.example.com",
		CloudflaredMetrics:        "http://127.0.0.1:20241",
		Listen:                    "0.0.0.0:8080",
		ControlListen:             "[::1]:8081",
		MetricsListen:             "0.0.0.0:8082",
		AdminListen:               "[::1]:8083",
		AllowedHosts:              []string{"dev.example.com", "dev.example.com:443", "localhost", "localhost:8080", "127.0.0.1", "127.0.0.1:8080", "[::1]", "[::1]:8080"},
		OAuthScopes:               []string{"project:read", "project:write", "process:execute"},
		OAuthAllowedRedirectHosts: []string{"chatgpt.com", "localhost"},
		AccessTTL:                 30 * time.Minute,
		RefreshTTL:                24 * time.Hour,
		GrantMaxLifetime:          2160 * time.Hour,
		OwnerPasswordFile:         "/run/secrets/owner",
		MasterKeyFile:             "/run/secrets/key",
		LogLevel:                  slog.LevelDebug,
		LogFormat:                 "json",
		LogShellCommands:          true,
		InstructionFallbacks:      []string{"CLAUDE.md", "GEMINI.md"},
		SkillPaths:                []string{skills},
		Widgets:                   "changes",
		MaxRequestBody:            64 << 20,
		OutputGrantShare:          64 << 20,
		CommandPidsMax:            500,
		CommandMemoryMax:          2 << 30,
		CommandNice:               19,
		Edge:                      defaultEdge(),
		ScratchDir:                "/nonexistent-home/.cache/devspace/scratch",
		ScratchMax:                1 << 30,
		DiskReserve:               256 << 20,
		ToolsDir:                  "/nonexistent-home/.cache/devspace/tools",
		ToolsMax:                  4 << 30,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Load (-want +got):\n%s", d)
	}
	if got, want := got.Issuer(), "https://dev.example.com"; got != want {
		t.Errorf("Issuer() = %q, want %q", got, want)
	}
	if got, want := got.Resource(), "https://dev.example.com/mcp"; got != want {
		t.Errorf("Resource() = %q, want %q", got, want)
	}
	if !got.ControlIsLoopback() || got.MetricsIsLoopback() {
		t.Errorf("ControlIsLoopback, MetricsIsLoopback = %v, %v; want true, false", got.ControlIsLoopback(), got.MetricsIsLoopback())
	}
	if !got.ScopeEnabled(ScopeProcessExecute) {
		t.Error("ScopeEnabled(process:execute) = false, want true")
	}
	if p, ok := got.ProjectByLabel("lib"); !ok || p.Path != lib {
		t.Errorf("ProjectByLabel(lib) = %v, %v", p, ok)
	}
}

func TestLoadFlagsOverrideEnv(t *testing.T) {
	root := tempDir(t)
	envProj := mkdir(t, root, "from-env")
	flagProj := mkdir(t, root, "from-flag")
	e := with(baseEnv,
		"DEVSPACE_PROJECTS", envProj,
		"DEVSPACE_LISTEN", "127.0.0.1:9000",
		"DEVSPACE_LOG_LEVEL", "error",
		"DEVSPACE_WIDGETS", "off",
		"DEVSPACE_LOG_SHELL_COMMANDS", "0",
		"DEVSPACE_ALLOWED_HOSTS", "env.example.com",
		"DEVSPACE_OAUTH_ACCESS_TTL", "2h",
	)
	tests := []struct {
		name string
		args []string
		want func(c *Config)
	}{
		{
			name: "no flags keeps env",
			want: func(c *Config) {
				c.Projects = []Project{{Label: "from-env", Path: envProj}}
				c.Listen = "127.0.0.1:9000"
				c.LogLevel = slog.LevelError
				c.Widgets = "off"
				c.AllowedHosts = []string{"env.example.com"}
				c.AccessTTL = 2 * time.Hour
			},
		},
		{
			name: "double and single dash flags override",
			args: []string{
				"--projects", "p=" + flagProj,
				"-listen=127.0.0.1:9100",
				"--log-level=warn",
				"-widgets", "changes",
				"--log-shell-commands",
				"--allowed-hosts=flag.example.com,Flag.example.com:8443",
				"--oauth-access-ttl=15m",
				"--state-dir=/srv/state",
			},
			want: func(c *Config) {
				c.StateDir = "/srv/state"
				c.Projects = []Project{{Label: "p", Path: flagProj}}
				c.Listen = "127.0.0.1:9100"
				c.LogLevel = slog.LevelWarn
				c.Widgets = "changes"
				c.LogShellCommands = true
				c.AllowedHosts = []string{"flag.example.com", "flag.example.com:8443"}
				c.AccessTTL = 15 * time.Minute
			},
		},
		{
			name: "empty flag restores the default",
			args: []string{"--projects=", "--listen=", "--allowed-hosts=", "--log-level=", "--widgets=", "--oauth-access-ttl="},
			want: func(*Config) {},
		},
		{
			name: "boolean flag with explicit value",
			args: []string{"--log-shell-commands=true", "--log-shell-commands=false"},
			want: func(c *Config) {
				c.Projects = []Project{{Label: "from-env", Path: envProj}}
				c.Listen = "127.0.0.1:9000"
				c.LogLevel = slog.LevelError
				c.Widgets = "off"
				c.AllowedHosts = []string{"env.example.com"}
				c.AccessTTL = 2 * time.Hour
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Load(tt.args, env(e))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			want := defaultConfig()
			tt.want(want)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("Load (-want +got):\n%s", d)
			}
		})
	}
}

func TestLoadFlagErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    string
		wantErr error
	}{
		{name: "-h", args: []string{"-h"}, want: "flag: help requested", wantErr: flag.ErrHelp},
		{name: "--help", args: []string{"--help"}, want: "flag: help requested", wantErr: flag.ErrHelp},
		{name: "unknown flag", args: []string{"--porjects=/x"}, want: "flag provided but not defined: -porjects (run with --help to list the flags)"},
		{name: "missing value", args: []string{"--listen"}, want: "flag needs an argument: -listen (run with --help to list the flags)"},
		{name: "positional argument", args: []string{"--listen=:1", "extra"}, want: `unexpected argument "extra" (settings are given as --flag=value or DEVSPACE_* variables)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(tt.args, env(baseEnv))
			if c != nil {
				t.Errorf("Load returned a Config with error %v", err)
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Load error = %v, want %q", err, tt.want)
			}
			if tt.wantErr != nil && err != tt.wantErr {
				t.Errorf("Load error = %#v, want %#v", err, tt.wantErr)
			}
		})
	}
}

func TestLoadInvalidValues(t *testing.T) {
	root := tempDir(t)
	file := writeFile(t, root, "file.txt")
	proj := mkdir(t, root, "proj")
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{
			name: "public URL needs https for a public host",
			env:  with(baseEnv, "DEVSPACE_PUBLIC_BASE_URL", "http://dev.example.com"),
			want: `DEVSPACE_PUBLIC_BASE_URL: "http://dev.example.com" must use https; plain http is allowed only for a loopback host (localhost, 127.0.0.1, [::1])`,
		},
		{
			name: "public URL ending in /mcp",
			env:  with(baseEnv, "DEVSPACE_PUBLIC_BASE_URL", "https://dev.example.com/mcp/"),
			want: `DEVSPACE_PUBLIC_BASE_URL: "https://dev.example.com/mcp" ends in /mcp; give the origin only (https://dev.example.com), DevSpace adds /mcp itself`,
		},
		{
			name: "public URL with another path",
			env:  with(baseEnv, "DEVSPACE_PUBLIC_BASE_URL", "https://dev.example.com/devspace"),
			want: `DEVSPACE_PUBLIC_BASE_URL: "https://dev.example.com/devspace" has a path; give the origin only (https://dev.example.com)`,
		},
		{
			name: "public URL with query",
			env:  with(baseEnv, "DEVSPACE_PUBLIC_BASE_URL", "https://dev.example.com?x=1"),
			want: `DEVSPACE_PUBLIC_BASE_URL: "https://dev.example.com?x=1" must not have a query or fragment; give the origin only`,
		},
		{
			name: "public URL with fragment",
			env:  with(baseEnv, "DEVSPACE_PUBLIC_BASE_URL", "https://dev.example.com#top"),
			want: `DEVSPACE_PUBLIC_BASE_URL: "https://dev.example.com#top" must not have a query or fragment; give the origin only`,
		},
		{
			name: "public URL with userinfo",
			env:  with(baseEnv, "DEVSPACE_PUBLIC_BASE_URL", "https://me:pw@dev.example.com"),
			want: `DEVSPACE_PUBLIC_BASE_URL: "https://me:pw@dev.example.com" must not contain a user name or password`,
		},
		{
			name: "public URL without scheme",
			env:  with(baseEnv, "DEVSPACE_PUBLIC_BASE_URL", "dev.example.com"),
			want: `DEVSPACE_PUBLIC_BASE_URL: "dev.example.com" is not an absolute URL; give the public origin with its scheme, such as https://devspace.example.com`,
		},
		{
			name: "public URL with other scheme",
			env:  with(baseEnv, "DEVSPACE_PUBLIC_BASE_URL", "ftp://dev.example.com"),
			want: `DEVSPACE_PUBLIC_BASE_URL: "ftp://dev.example.com" must start with https:// (or http:// for a loopback host)`,
		},
		{
			name: "public URL without host",
			env:  with(baseEnv, "DEVSPACE_PUBLIC_BASE_URL", "https://"),
			want: `DEVSPACE_PUBLIC_BASE_URL: "https:" has no host; give the public origin, such as https://devspace.example.com`,
		},
		{
			name: "public URL unparsable",
			env:  with(baseEnv, "DEVSPACE_PUBLIC_BASE_URL", "https://dev.example.com:port"),
			want: `DEVSPACE_PUBLIC_BASE_URL: "https://dev.example.com:port" is not a valid URL; give the public origin, such as https://devspace.example.com`,
		},
		{
			name: "control listen on all interfaces",
			env:  with(baseEnv, "DEVSPACE_CONTROL_LISTEN", "0.0.0.0:7677"),
			want: `DEVSPACE_CONTROL_LISTEN: "0.0.0.0:7677" must be a loopback address (127.0.0.1, [::1] or localhost); the control listener is never exposed`,
		},
		{
			name: "control listen with empty host",
			args: []string{"--control-listen=:7677"},
			want: `DEVSPACE_CONTROL_LISTEN: ":7677" must be a loopback address (127.0.0.1, [::1] or localhost); the control listener is never exposed`,
		},
		{
			name: "listen without port",
			env:  with(baseEnv, "DEVSPACE_LISTEN", "127.0.0.1"),
			want: `DEVSPACE_LISTEN: "127.0.0.1" is not a host:port address; write one such as 127.0.0.1:7676`,
		},
		{
			name: "metrics listen bad port",
			env:  with(baseEnv, "DEVSPACE_METRICS_LISTEN", "0.0.0.0:99999"),
			want: `DEVSPACE_METRICS_LISTEN: "0.0.0.0:99999" has an invalid port; use a number from 0 to 65535`,
		},
		{
			name: "listeners share a port",
			env:  with(baseEnv, "DEVSPACE_METRICS_LISTEN", "0.0.0.0:7676"),
			want: `DEVSPACE_METRICS_LISTEN: "0.0.0.0:7676" uses the same port as DEVSPACE_LISTEN ("127.0.0.1:7676"); give each listener its own port`,
		},
		{
			name: "admin listener shares a port",
			env:  with(baseEnv, "DEVSPACE_ADMIN_LISTEN", "127.0.0.1:7677"),
			want: `DEVSPACE_ADMIN_LISTEN: "127.0.0.1:7677" uses the same port as DEVSPACE_CONTROL_LISTEN ("127.0.0.1:7677"); give each listener its own port`,
		},
		{
			name: "admin listen without port",
			env:  with(baseEnv, "DEVSPACE_ADMIN_LISTEN", "localhost"),
			want: `DEVSPACE_ADMIN_LISTEN: "localhost" is not a host:port address; write one such as 127.0.0.1:7676`,
		},
		{
			name: "allowed host with scheme",
			env:  with(baseEnv, "DEVSPACE_ALLOWED_HOSTS", "https://dev.example.com"),
			want: `DEVSPACE_ALLOWED_HOSTS: "https://dev.example.com" is not a host or host:port; write entries such as devspace.example.com or localhost:7676`,
		},
		{
			name: "unknown scope",
			env:  with(baseEnv, "DEVSPACE_OAUTH_SCOPES", "project:read admin"),
			want: `DEVSPACE_OAUTH_SCOPES: unknown scope "admin"; the known scopes are project:read, project:write and process:execute`,
		},
		{
			name: "OpenID scope",
			env:  with(baseEnv, "DEVSPACE_OAUTH_SCOPES", "project:read,openid"),
			want: `DEVSPACE_OAUTH_SCOPES: "openid" is an OpenID Connect scope; DevSpace is not an identity provider, so offer only project:read, project:write and process:execute`,
		},
		{
			name: "scopes without project:read",
			env:  with(baseEnv, "DEVSPACE_OAUTH_SCOPES", "project:write"),
			want: `DEVSPACE_OAUTH_SCOPES: must include project:read, the scope every grant needs`,
		},
		{
			name: "redirect host with scheme",
			env:  with(baseEnv, "DEVSPACE_OAUTH_ALLOWED_REDIRECT_HOSTS", "https://chatgpt.com"),
			want: `DEVSPACE_OAUTH_ALLOWED_REDIRECT_HOSTS: "https://chatgpt.com" is not a bare host name; write names such as chatgpt.com or [::1], without a scheme, port or path`,
		},
		{
			name: "redirect host with port",
			env:  with(baseEnv, "DEVSPACE_OAUTH_ALLOWED_REDIRECT_HOSTS", "localhost:3000"),
			want: `DEVSPACE_OAUTH_ALLOWED_REDIRECT_HOSTS: "localhost:3000" is not a bare host name; write names such as chatgpt.com or [::1], without a scheme, port or path`,
		},
		{
			name: "redirect host unbracketed IPv6",
			env:  with(baseEnv, "DEVSPACE_OAUTH_ALLOWED_REDIRECT_HOSTS", "::1"),
			want: `DEVSPACE_OAUTH_ALLOWED_REDIRECT_HOSTS: "::1" is not a bare host name; write names such as chatgpt.com or [::1], without a scheme, port or path`,
		},
		{
			name: "duration syntax",
			env:  with(baseEnv, "DEVSPACE_OAUTH_ACCESS_TTL", "1 hour"),
			want: `DEVSPACE_OAUTH_ACCESS_TTL: "1 hour" is not a duration; use Go syntax such as 30m, 1h or 720h`,
		},
		{
			name: "unparsable access TTL hides the cross-check against its default",
			env:  with(baseEnv, "DEVSPACE_OAUTH_ACCESS_TTL", "soon", "DEVSPACE_OAUTH_REFRESH_TTL", "30m"),
			want: `DEVSPACE_OAUTH_ACCESS_TTL: "soon" is not a duration; use Go syntax such as 30m, 1h or 720h`,
		},
		{
			name: "zero access TTL",
			env:  with(baseEnv, "DEVSPACE_OAUTH_ACCESS_TTL", "0"),
			want: `DEVSPACE_OAUTH_ACCESS_TTL: must be greater than zero, got 0s`,
		},
		{
			name: "negative refresh TTL",
			env:  with(baseEnv, "DEVSPACE_OAUTH_REFRESH_TTL", "-1h"),
			want: `DEVSPACE_OAUTH_REFRESH_TTL: must be greater than zero, got -1h0m0s`,
		},
		{
			name: "negative grant max lifetime",
			env:  with(baseEnv, "DEVSPACE_OAUTH_GRANT_MAX_LIFETIME", "-5m"),
			want: `DEVSPACE_OAUTH_GRANT_MAX_LIFETIME: must be 0 (no limit) or positive, got -5m0s`,
		},
		{
			name: "access longer than refresh",
			env:  with(baseEnv, "DEVSPACE_OAUTH_ACCESS_TTL", "2h", "DEVSPACE_OAUTH_REFRESH_TTL", "1h"),
			want: `DEVSPACE_OAUTH_ACCESS_TTL: 2h0m0s is longer than DEVSPACE_OAUTH_REFRESH_TTL (1h0m0s); an access token must not outlive its refresh token`,
		},
		{
			name: "log level",
			env:  with(baseEnv, "DEVSPACE_LOG_LEVEL", "verbose"),
			want: `DEVSPACE_LOG_LEVEL: "verbose" is not a log level; use debug, info, warn or error`,
		},
		{
			name: "log format",
			env:  with(baseEnv, "DEVSPACE_LOG_FORMAT", "xml"),
			want: `DEVSPACE_LOG_FORMAT: "xml" is not a log format; use text or json`,
		},
		{
			name: "log shell commands",
			args: []string{"--log-shell-commands=yes"},
			want: `DEVSPACE_LOG_SHELL_COMMANDS: "yes" is not a boolean; use 1 or 0 (or true or false)`,
		},
		{
			name: "command sandbox",
			env:  with(baseEnv, "DEVSPACE_COMMAND_SANDBOX", "maybe"),
			want: `DEVSPACE_COMMAND_SANDBOX: "maybe" is not a sandbox mode; use on or off`,
		},
		{
			name: "command network",
			env:  with(baseEnv, "DEVSPACE_COMMAND_NETWORK", "block"),
			want: `DEVSPACE_COMMAND_NETWORK: "block" is not a network policy; use allow or deny`,
		},
		{
			name: "command read paths",
			env:  with(baseEnv, "DEVSPACE_COMMAND_READ_PATHS", "/opt/go,relative/sdk"),
			want: `DEVSPACE_COMMAND_READ_PATHS: "relative/sdk" is not an absolute path`,
		},
		{
			name: "widgets",
			env:  with(baseEnv, "DEVSPACE_WIDGETS", "some"),
			want: `DEVSPACE_WIDGETS: "some" is not a widget mode; use full, changes or off`,
		},
		{
			name: "request body not a number",
			env:  with(baseEnv, "DEVSPACE_MAX_REQUEST_BODY", "lots"),
			want: `DEVSPACE_MAX_REQUEST_BODY: "lots" is not a size in bytes; write a number of bytes such as 33554432, or use a KiB/MiB suffix such as 32MiB`,
		},
		{
			name: "request body too small",
			env:  with(baseEnv, "DEVSPACE_MAX_REQUEST_BODY", "1023KiB"),
			want: `DEVSPACE_MAX_REQUEST_BODY: 1047552 bytes is out of range; use 1MiB (1048576) to 256MiB (268435456)`,
		},
		{
			name: "request body too large",
			env:  with(baseEnv, "DEVSPACE_MAX_REQUEST_BODY", "268435457"),
			want: `DEVSPACE_MAX_REQUEST_BODY: 268435457 bytes is out of range; use 1MiB (1048576) to 256MiB (268435456)`,
		},
		{
			name: "output grant share too small",
			env:  with(baseEnv, "DEVSPACE_OUTPUT_GRANT_SHARE", "1023KiB"),
			want: `DEVSPACE_OUTPUT_GRANT_SHARE: 1047552 bytes is too small; use at least 1MiB (1048576), a few commands' first and last 64KiB`,
		},
		{
			name: "command pids not a number",
			env:  with(baseEnv, "DEVSPACE_COMMAND_PIDS_MAX", "many"),
			want: `DEVSPACE_COMMAND_PIDS_MAX: "many" is not a whole number`,
		},
		{
			name: "command pids too few",
			env:  with(baseEnv, "DEVSPACE_COMMAND_PIDS_MAX", "15"),
			want: `DEVSPACE_COMMAND_PIDS_MAX: 15 is out of range; use auto or 16 to 4194304`,
		},
		{
			name: "command nice above the lowest",
			env:  with(baseEnv, "DEVSPACE_COMMAND_NICE", "20"),
			want: `DEVSPACE_COMMAND_NICE: 20 is out of range; use 0 (the server's priority) to 19 (the lowest)`,
		},
		{
			name: "command nice above the server",
			env:  with(baseEnv, "DEVSPACE_COMMAND_NICE", "-5"),
			want: `DEVSPACE_COMMAND_NICE: -5 is out of range; use 0 (the server's priority) to 19 (the lowest)`,
		},
		{
			name: "command memory too little",
			env:  with(baseEnv, "DEVSPACE_COMMAND_MEMORY_MAX", "63MiB"),
			want: `DEVSPACE_COMMAND_MEMORY_MAX: 66060288 bytes is out of range; use auto or 64MiB (67108864) to 1024GiB (1099511627776)`,
		},
		{
			name: "instruction fallback with slash",
			env:  with(baseEnv, "DEVSPACE_INSTRUCTION_FALLBACKS", "CLAUDE.md,docs/AI.md"),
			want: `DEVSPACE_INSTRUCTION_FALLBACKS: "docs/AI.md" is not a plain file name; give names such as CLAUDE.md, without "/" or ".."`,
		},
		{
			name: "instruction fallback dot-dot",
			env:  with(baseEnv, "DEVSPACE_INSTRUCTION_FALLBACKS", ".."),
			want: `DEVSPACE_INSTRUCTION_FALLBACKS: ".." is not a plain file name; give names such as CLAUDE.md, without "/" or ".."`,
		},
		{
			name: "relative skill path",
			env:  with(baseEnv, "DEVSPACE_SKILL_PATHS", "skills"),
			want: `DEVSPACE_SKILL_PATHS: "skills" is not an absolute path; give the full path, starting with /`,
		},
		{
			name: "missing skill path",
			env:  with(baseEnv, "DEVSPACE_SKILL_PATHS", root+"/nope"),
			want: `DEVSPACE_SKILL_PATHS: "` + root + `/nope" does not exist; create it or correct the path`,
		},
		{
			name: "skill path is a file",
			env:  with(baseEnv, "DEVSPACE_SKILL_PATHS", file),
			want: `DEVSPACE_SKILL_PATHS: "` + file + `" is not a directory`,
		},
		{
			name: "state dir is a file",
			env:  with(baseEnv, "DEVSPACE_STATE_DIR", file),
			want: `DEVSPACE_STATE_DIR: "` + file + `" is not a directory`,
		},
		{
			name: "state dir inside a project",
			env:  with(baseEnv, "DEVSPACE_PROJECTS", proj, "DEVSPACE_STATE_DIR", proj+"/.devspace/state"),
			want: `DEVSPACE_STATE_DIR: "` + proj + `/.devspace/state" is inside "` + proj + `" (project "proj"), where the model could read the database and keys; keep it outside every approved root`,
		},
		{
			name: "master key inside a project",
			env:  with(baseEnv, "DEVSPACE_PROJECTS", proj, "DEVSPACE_MASTER_KEY_FILE", proj+"/key"),
			want: `DEVSPACE_MASTER_KEY_FILE: "` + proj + `/key" is inside "` + proj + `" (project "proj"), where the model could read it; keep secrets outside every approved root`,
		},
		{
			name: "owner password file is a directory",
			args: []string{"--owner-password-file", root},
			want: `DEVSPACE_OWNER_PASSWORD_FILE: "` + root + `" is a directory; give the file that holds the secret`,
		},
		{
			name: "every problem at once",
			env: with(baseEnv,
				"DEVSPACE_PROJECTS", "rel",
				"DEVSPACE_CONTROL_LISTEN", "0.0.0.0:7677",
				"DEVSPACE_LOG_LEVEL", "loud",
				"DEVSPACE_WIDGETS", "some",
			),
			want: `DEVSPACE_PROJECTS: "rel" is not an absolute path; give the full path, starting with /
DEVSPACE_CONTROL_LISTEN: "0.0.0.0:7677" must be a loopback address (127.0.0.1, [::1] or localhost); the control listener is never exposed
DEVSPACE_LOG_LEVEL: "loud" is not a log level; use debug, info, warn or error
DEVSPACE_WIDGETS: "some" is not a widget mode; use full, changes or off`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.env
			if e == nil {
				e = baseEnv
			}
			c, err := Load(tt.args, env(e))
			if err == nil {
				t.Fatalf("Load succeeded with %+v, want error %q", c, tt.want)
			}
			if c != nil {
				t.Errorf("Load returned a Config with its error")
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("Load error:\n got %s\nwant %s", got, tt.want)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Errorf("Load error %T holds no *Error", err)
			}
		})
	}
}

func TestLoadProjects(t *testing.T) {
	root := tempDir(t)
	home := mkdir(t, root, "home")
	t.Setenv("HOME", home)
	app := mkdir(t, home, "src", "app")
	proj := mkdir(t, root, "x", "proj")
	projEvil := mkdir(t, root, "x", "proj_evil")
	sub := mkdir(t, proj, "sub")
	other := mkdir(t, root, "other", "app")
	spaced := mkdir(t, root, "my app")
	withEquals := mkdir(t, root, "k=v")
	file := writeFile(t, root, "file.txt")
	link := symlink(t, app, root, "linked")
	subLink := symlink(t, sub, root, "sublink")
	homeLink := symlink(t, home, root, "homelink")

	tests := []struct {
		name    string
		value   string
		want    []Project
		wantErr string
	}{
		{
			name:  "label=path and bare path",
			value: "web=" + app + "," + proj,
			want:  []Project{{Label: "web", Path: app}, {Label: "proj", Path: proj}},
		},
		{
			name:  "path is cleaned",
			value: proj + "/../proj/./",
			want:  []Project{{Label: "proj", Path: proj}},
		},
		{
			name:  "symlink is resolved and keeps its own name as label",
			value: link,
			want:  []Project{{Label: "linked", Path: app}},
		},
		{
			name:    "a path containing = is not split into a label",
			value:   withEquals,
			wantErr: `DEVSPACE_PROJECTS: label "k=v" of "` + withEquals + `" is not valid; a label has 1 to 64 letters, digits, '.', '_' or '-' and starts with a letter or digit (choose one with label=path)`,
		},
		{
			name:  "label for a path containing =",
			value: "kv=" + withEquals,
			want:  []Project{{Label: "kv", Path: withEquals}},
		},
		{
			name:  "proj and proj_evil do not overlap",
			value: proj + "," + projEvil,
			want:  []Project{{Label: "proj", Path: proj}, {Label: "proj_evil", Path: projEvil}},
		},
		{
			name:  "a directory inside home is fine",
			value: app,
			want:  []Project{{Label: "app", Path: app}},
		},
		{
			name:    "filesystem root",
			value:   "/",
			wantErr: `DEVSPACE_PROJECTS: "/" is the filesystem root; approve a project directory instead`,
		},
		{
			name:    "filesystem root with a label",
			value:   "all=/",
			wantErr: `DEVSPACE_PROJECTS: "/" is the filesystem root; approve a project directory instead`,
		},
		{
			name:    "home directory",
			value:   home,
			wantErr: `DEVSPACE_PROJECTS: "` + home + `" is your home directory; approve a project directory inside it instead`,
		},
		{
			name:    "home directory through a symlink",
			value:   homeLink,
			wantErr: `DEVSPACE_PROJECTS: "` + home + `" is your home directory; approve a project directory inside it instead`,
		},
		{
			name:    "file instead of directory",
			value:   file,
			wantErr: `DEVSPACE_PROJECTS: "` + file + `" is not a directory; approve the directory that contains the project`,
		},
		{
			name:    "missing path",
			value:   root + "/missing",
			wantErr: `DEVSPACE_PROJECTS: "` + root + `/missing" does not exist; create it or correct the path`,
		},
		{
			name:    "relative path",
			value:   "src/app",
			wantErr: `DEVSPACE_PROJECTS: "src/app" is not an absolute path; give the full path, starting with /`,
		},
		{
			name:    "label without path",
			value:   "app=",
			wantErr: `DEVSPACE_PROJECTS: entry "app=" has no path; write label=/path/to/project`,
		},
		{
			name:    "child inside parent",
			value:   proj + "," + sub,
			wantErr: `DEVSPACE_PROJECTS: "` + sub + `" (project "sub") is inside "` + proj + `" (project "proj"); approved roots must not overlap, so approve one or the other`,
		},
		{
			name:    "parent listed after child",
			value:   sub + "," + proj,
			wantErr: `DEVSPACE_PROJECTS: "` + sub + `" (project "sub") is inside "` + proj + `" (project "proj"); approved roots must not overlap, so approve one or the other`,
		},
		{
			name:    "overlap through a symlink",
			value:   proj + ",s=" + subLink,
			wantErr: `DEVSPACE_PROJECTS: "` + sub + `" (project "s") is inside "` + proj + `" (project "proj"); approved roots must not overlap, so approve one or the other`,
		},
		{
			name:    "same directory twice through a symlink",
			value:   "a=" + app + "," + link,
			wantErr: `DEVSPACE_PROJECTS: projects "a" and "linked" are the same directory "` + app + `"; list it once`,
		},
		{
			name:    "duplicate labels",
			value:   app + "," + other,
			wantErr: `DEVSPACE_PROJECTS: label "app" is used for both "` + app + `" and "` + other + `"; give one of them another label with label=path`,
		},
		{
			name:    "invalid derived label",
			value:   spaced,
			wantErr: `DEVSPACE_PROJECTS: label "my app" of "` + spaced + `" is not valid; a label has 1 to 64 letters, digits, '.', '_' or '-' and starts with a letter or digit (choose one with label=path)`,
		},
		{
			name:    "invalid explicit label",
			value:   "-x=" + app,
			wantErr: `DEVSPACE_PROJECTS: label "-x" of "` + app + `" is not valid; a label has 1 to 64 letters, digits, '.', '_' or '-' and starts with a letter or digit (choose one with label=path)`,
		},
		{
			name:  "an empty label means the base name",
			value: "=" + app,
			want:  []Project{{Label: "app", Path: app}},
		},
		{
			name:  "label of 64 characters",
			value: strings.Repeat("a", 64) + "=" + app,
			want:  []Project{{Label: strings.Repeat("a", 64), Path: app}},
		},
		{
			name:    "label of 65 characters",
			value:   strings.Repeat("a", 65) + "=" + app,
			wantErr: `DEVSPACE_PROJECTS: label "` + strings.Repeat("a", 65) + `" of "` + app + `" is not valid; a label has 1 to 64 letters, digits, '.', '_' or '-' and starts with a letter or digit (choose one with label=path)`,
		},
		{
			name:  "every project problem at once",
			value: "rel," + root + "/missing," + file + "," + proj + "," + sub,
			wantErr: `DEVSPACE_PROJECTS: "rel" is not an absolute path; give the full path, starting with /
DEVSPACE_PROJECTS: "` + root + `/missing" does not exist; create it or correct the path
DEVSPACE_PROJECTS: "` + file + `" is not a directory; approve the directory that contains the project
DEVSPACE_PROJECTS: "` + sub + `" (project "sub") is inside "` + proj + `" (project "proj"); approved roots must not overlap, so approve one or the other`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load([]string{"--projects", tt.value}, env(baseEnv))
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("Load succeeded with %+v, want error %q", c.Projects, tt.wantErr)
				}
				if got := err.Error(); got != tt.wantErr {
					t.Errorf("Load error:\n got %s\nwant %s", got, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if d := cmp.Diff(tt.want, c.Projects); d != "" {
				t.Errorf("Projects (-want +got):\n%s", d)
			}
		})
	}
}

func TestValidateHandBuilt(t *testing.T) {
	dir := tempDir(t)
	link := symlink(t, dir, tempDir(t), "link")
	tests := []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{name: "defaults are valid", edit: func(*Config) {}},
		{name: "empty projects are valid", edit: func(c *Config) { c.Projects = nil }},
		{
			name: "relative project path",
			edit: func(c *Config) { c.Projects = []Project{{Label: "a", Path: "a"}} },
			want: `DEVSPACE_PROJECTS: "a" is not an absolute path; give the full path, starting with /`,
		},
		{
			name: "trailing slash on public URL",
			edit: func(c *Config) { c.PublicBaseURL = "https://dev.example.com/" },
			want: `DEVSPACE_PUBLIC_BASE_URL: "https://dev.example.com/" has a path; give the origin only (https://dev.example.com)`,
		},
		{
			name: "odd log level",
			edit: func(c *Config) { c.LogLevel = slog.Level(2) },
			want: `DEVSPACE_LOG_LEVEL: "INFO+2" is not a log level; use debug, info, warn or error`,
		},
		{
			name: "empty allowed hosts",
			edit: func(c *Config) { c.AllowedHosts = nil },
			want: `DEVSPACE_ALLOWED_HOSTS: is empty, so every request would be refused; list the host names clients use, or unset it for the default`,
		},
		{
			name: "empty redirect hosts",
			edit: func(c *Config) { c.OAuthAllowedRedirectHosts = nil },
			want: `DEVSPACE_OAUTH_ALLOWED_REDIRECT_HOSTS: is empty, so no OAuth client could be redirected; list host names such as chatgpt.com, or unset it for the default`,
		},
		{
			name: "scratch dir in a project",
			edit: func(c *Config) {
				c.Projects = []Project{{Label: "d", Path: dir}}
				c.ScratchDir = link + "/scratch"
			},
			want: `DEVSPACE_SCRATCH_DIR: "` + link + `/scratch" is inside "` + dir + `" (project "d"), where every grant of that project would see other executions' scratch; keep it outside every approved root`,
		},
		{
			name: "scratch dir holding the state",
			edit: func(c *Config) { c.ScratchDir = "/nonexistent-home/.local" },
			want: `DEVSPACE_SCRATCH_DIR: "/nonexistent-home/.local" contains the state directory, which commands would then reach`,
		},
		{
			name: "tools dir in a project",
			edit: func(c *Config) {
				c.Projects = []Project{{Label: "d", Path: dir}}
				c.ToolsDir = link + "/tools"
			},
			want: `DEVSPACE_TOOLS_DIR: "` + link + `/tools" is inside "` + dir + `" (project "d"); keep the tool homes outside every approved root`,
		},
		{
			name: "tools dir holding the state",
			edit: func(c *Config) { c.ToolsDir = "/nonexistent-home" },
			want: `DEVSPACE_TOOLS_DIR: "/nonexistent-home" contains the state directory, which commands would then reach` + "\n" +
				`DEVSPACE_TOOLS_DIR: "/nonexistent-home" overlaps DEVSPACE_SCRATCH_DIR "/nonexistent-home/.cache/devspace/scratch"; keep the tool homes and the scratch directories apart`,
		},
		{
			name: "tools dir inside the scratch dir",
			edit: func(c *Config) { c.ToolsDir = "/nonexistent-home/.cache/devspace/scratch/tools" },
			want: `DEVSPACE_TOOLS_DIR: "/nonexistent-home/.cache/devspace/scratch/tools" overlaps DEVSPACE_SCRATCH_DIR "/nonexistent-home/.cache/devspace/scratch"; keep the tool homes and the scratch directories apart`,
		},
		{
			name: "tiny tools quota",
			edit: func(c *Config) { c.ToolsMax = 1 << 20 },
			want: "DEVSPACE_TOOLS_MAX: 1048576 bytes is too small; use at least 16MiB",
		},
		{
			name: "tiny scratch quota and reserve",
			edit: func(c *Config) { c.ScratchMax, c.DiskReserve = 1<<20, 128<<30 },
			want: "DEVSPACE_SCRATCH_MAX: 1048576 bytes is too small; use at least 16MiB\nDEVSPACE_DISK_RESERVE: 137438953472 bytes is out of range; use 16MiB to 64GiB",
		},
		{
			name: "relative state dir",
			edit: func(c *Config) { c.StateDir = "state" },
			want: `DEVSPACE_STATE_DIR: "state" is not an absolute path; give the full path, starting with /`,
		},
		{
			name: "state dir through a project symlink",
			edit: func(c *Config) {
				c.Projects = []Project{{Label: "d", Path: dir}}
				c.StateDir = link + "/state"
			},
			want: `DEVSPACE_STATE_DIR: "` + link + `/state" is inside "` + dir + `" (project "d"), where the model could read the database and keys; keep it outside every approved root`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defaultConfig()
			tt.edit(c)
			want := tt.want
			err := c.Validate()
			if want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || err.Error() != want {
				t.Errorf("Validate error:\n got %v\nwant %s", err, want)
			}
		})
	}
}

func TestListeners(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr bool
	}{
		{name: "IPv6 loopback control", args: []string{"--control-listen=[::1]:7677"}},
		{name: "localhost control", args: []string{"--control-listen=localhost:7677"}},
		{name: "127.0.0.2 control", args: []string{"--control-listen=127.0.0.2:7677"}},
		{name: "all interfaces control", args: []string{"--control-listen=0.0.0.0:7677"}, wantErr: true},
		{name: "IPv6 any control", args: []string{"--control-listen=[::]:7677"}, wantErr: true},
		{name: "LAN address control", args: []string{"--control-listen=192.168.1.2:7677"}, wantErr: true},
		{name: "public on all interfaces", args: []string{"--listen=0.0.0.0:7676", "--metrics-listen=0.0.0.0:7678"}},
		{name: "port 0 may repeat", args: []string{"--listen=127.0.0.1:0", "--control-listen=127.0.0.1:0", "--metrics-listen=127.0.0.1:0"}},
		{name: "localhost and 127.0.0.1 clash", args: []string{"--control-listen=localhost:7676"}, wantErr: true},
		{name: "distinct hosts on one port", args: []string{"--listen=192.168.1.2:7678"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(tt.args, env(baseEnv))
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Fatalf("Load error = %v, want error: %v", err, tt.wantErr)
			}
			if err == nil && !c.ControlIsLoopback() {
				t.Error("ControlIsLoopback() = false for an accepted Config")
			}
		})
	}
}

func TestPublicBaseURL(t *testing.T) {
	tests := []struct {
		name      string
		value     string
		want      string
		wantHosts []string
	}{
		{
			name: "default", value: "", want: "http://127.0.0.1:7676",
			wantHosts: []string{"127.0.0.1", "127.0.0.1:7676", "localhost", "localhost:7676", "[::1]", "[::1]:7676"},
		},
		{
			name: "https with port and trailing slash", value: "https://Dev.Example.com:8443//", want: "https://dev.example.com:8443",
			wantHosts: []string{"dev.example.com", "dev.example.com:8443", "localhost", "localhost:7676", "127.0.0.1", "127.0.0.1:7676", "[::1]", "[::1]:7676"},
		},
		{
			name: "http localhost", value: "http://localhost:7676", want: "http://localhost:7676",
			wantHosts: []string{"localhost", "localhost:7676", "127.0.0.1", "127.0.0.1:7676", "[::1]", "[::1]:7676"},
		},
		{
			name: "http IPv6 loopback", value: "http://[::1]:7676", want: "http://[::1]:7676",
			wantHosts: []string{"[::1]", "[::1]:7676", "localhost", "localhost:7676", "127.0.0.1", "127.0.0.1:7676"},
		},
		{
			name: "http in 127/8", value: "http://127.0.0.5", want: "http://127.0.0.5",
			wantHosts: []string{"127.0.0.5", "127.0.0.5:80", "localhost", "localhost:7676", "127.0.0.1", "127.0.0.1:7676", "[::1]", "[::1]:7676"},
		},
		{
			name: "auto is kept", value: "auto", want: "auto",
			wantHosts: []string{"localhost", "localhost:7676", "127.0.0.1", "127.0.0.1:7676", "[::1]", "[::1]:7676"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(nil, env(with(baseEnv, "DEVSPACE_PUBLIC_BASE_URL", tt.value)))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if c.PublicBaseURL != tt.want || c.Issuer() != tt.want || c.Resource() != tt.want+"/mcp" {
				t.Errorf("PublicBaseURL, Issuer, Resource = %q, %q, %q; want %q", c.PublicBaseURL, c.Issuer(), c.Resource(), tt.want)
			}
			if c.PublicURLIsAuto() != (tt.want == "auto") {
				t.Errorf("PublicURLIsAuto() = %v", c.PublicURLIsAuto())
			}
			if d := cmp.Diff(tt.wantHosts, c.AllowedHosts); d != "" {
				t.Errorf("AllowedHosts (-want +got):\n%s", d)
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	root := tempDir(t)
	plain := mkdir(t, root, "plain")
	dropbox := mkdir(t, root, "Dropbox (Personal)", "site")
	icloud := mkdir(t, root, "Library", "Mobile Documents", "com~apple~CloudDocs", "notes")
	work := mkdir(t, root, "work")
	mkdir(t, work, "a", ".git")
	mkdir(t, work, "b", ".git")
	mkdir(t, work, "c")
	repo := mkdir(t, root, "repo")
	mkdir(t, repo, ".git")
	mkdir(t, repo, "vendor1", ".git")
	mkdir(t, repo, "vendor2", ".git")
	single := mkdir(t, root, "single")
	mkdir(t, single, "a", ".git")
	skillsIn := mkdir(t, plain, ".skills")

	tests := []struct {
		name      string
		edit      func(c *Config)
		container bool
		want      []string
	}{
		{
			name: "no projects",
			edit: func(*Config) {},
			want: []string{`DEVSPACE_PROJECTS: no project is approved, so a client can see nothing; add one, for example DEVSPACE_PROJECTS=app=/path/to/app`},
		},
		{
			name: "plain project is quiet",
			edit: func(c *Config) { c.Projects = []Project{{Label: "plain", Path: plain}} },
		},
		{
			name: "a repository with nested repositories is quiet",
			edit: func(c *Config) { c.Projects = []Project{{Label: "repo", Path: repo}} },
		},
		{
			name: "one nested repository is quiet",
			edit: func(c *Config) { c.Projects = []Project{{Label: "single", Path: single}} },
		},
		{
			name: "cloud drives",
			edit: func(c *Config) {
				c.Projects = []Project{{Label: "site", Path: dropbox}, {Label: "notes", Path: icloud}}
			},
			want: []string{
				`DEVSPACE_PROJECTS: "` + dropbox + `" (project "site") is in a cloud-drive folder (Dropbox (Personal)); sync can rewrite files while commands run and upload build output, so consider approving a local clone instead`,
				`DEVSPACE_PROJECTS: "` + icloud + `" (project "notes") is in a cloud-drive folder (Mobile Documents); sync can rewrite files while commands run and upload build output, so consider approving a local clone instead`,
			},
		},
		{
			name: "parent of unrelated repositories",
			edit: func(c *Config) { c.Projects = []Project{{Label: "work", Path: work}} },
			want: []string{`DEVSPACE_PROJECTS: "` + work + `" (project "work") is not a Git repository but holds 2 of them (a, b); it looks like a parent of unrelated work, so approve each repository as its own project`},
		},
		{
			name: "top-level directory",
			edit: func(c *Config) { c.Projects = []Project{{Label: "tmp", Path: "/tmp"}} },
			want: []string{`DEVSPACE_PROJECTS: "/tmp" (project "tmp") is a top-level directory, which gives a grant far more than one project; approve the project directories inside it instead`},
		},
		{
			name: "process:execute outside a container",
			edit: func(c *Config) {
				c.Projects = []Project{{Label: "plain", Path: plain}}
				c.OAuthScopes = []string{ScopeProjectRead, ScopeProcessExecute}
			},
			want: []string{`DEVSPACE_OAUTH_SCOPES: process:execute is enabled outside a container, so commands run with your user's full rights on this machine; run DevSpace in its container image or remove process:execute`},
		},
		{
			name: "process:execute and public metrics inside a container are quiet",
			edit: func(c *Config) {
				c.Projects = []Project{{Label: "plain", Path: plain}}
				c.OAuthScopes = []string{ScopeProjectRead, ScopeProcessExecute}
				c.MetricsListen = "0.0.0.0:7678"
			},
			container: true,
		},
		{
			name: "public metrics outside a container",
			edit: func(c *Config) {
				c.Projects = []Project{{Label: "plain", Path: plain}}
				c.MetricsListen = "0.0.0.0:7678"
			},
			want: []string{`DEVSPACE_METRICS_LISTEN: "0.0.0.0:7678" is not loopback; make sure the metrics port is firewalled and never tunnelled`},
		},
		{
			name: "public console outside a container",
			edit: func(c *Config) {
				c.Projects = []Project{{Label: "plain", Path: plain}}
				c.AdminListen = "0.0.0.0:7679"
			},
			want: []string{`DEVSPACE_ADMIN_LISTEN: "0.0.0.0:7679" is not loopback; the Owner's console answers only requests addressed to a loopback name or this host, but keep its port firewalled and never tunnel it`},
		},
		{
			name: "console off is quiet",
			edit: func(c *Config) {
				c.Projects = []Project{{Label: "plain", Path: plain}}
				c.AdminListen = ""
			},
		},
		{
			name: "shell commands logged",
			edit: func(c *Config) {
				c.Projects = []Project{{Label: "plain", Path: plain}}
				c.LogShellCommands = true
			},
			want: []string{`DEVSPACE_LOG_SHELL_COMMANDS: command previews go to the logs and may contain secrets typed into commands; set it to 0 once you are done debugging`},
		},
		{
			name: "skill path inside a project",
			edit: func(c *Config) {
				c.Projects = []Project{{Label: "plain", Path: plain}}
				c.SkillPaths = []string{skillsIn}
			},
			want: []string{`DEVSPACE_SKILL_PATHS: "` + skillsIn + `" is inside "` + plain + `" (project "plain"), where the model can write, so it could change instructions you trust; keep trusted skills outside every approved root`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defaultConfig()
			tt.edit(c)
			if d := cmp.Diff(tt.want, c.warnings(tt.container)); d != "" {
				t.Errorf("warnings (-want +got):\n%s", d)
			}
		})
	}
}

func TestUsageDocumentsEverySetting(t *testing.T) {
	var buf bytes.Buffer
	Usage(&buf)
	out := buf.String()
	ss := settings()
	// Edge is one field holding the edge settings.
	if got, want := len(ss), reflect.TypeFor[Config]().NumField()-1+reflect.TypeFor[Edge]().NumField(); got != want {
		t.Errorf("settings() has %d entries for %d Config fields", got, want)
	}
	seen := map[string]bool{}
	for _, s := range ss {
		if seen[s.flag] || seen[s.env] {
			t.Errorf("setting %s/%s is listed twice", s.flag, s.env)
		}
		seen[s.flag], seen[s.env] = true, true
		if !strings.Contains(out, "  --"+s.flag) {
			t.Errorf("Usage lacks --%s", s.flag)
		}
		if !strings.Contains(out, "env "+s.env+" (default: "+s.def+")") {
			t.Errorf("Usage lacks %s with its default %q", s.env, s.def)
		}
		if s.usage == "" || s.def == "" {
			t.Errorf("setting --%s has no meaning or default text", s.flag)
		}
	}
	for _, f := range []string{
		"state-dir", "projects", "public-base-url", "cloudflared-metrics", "listen", "control-listen", "metrics-listen",
		"allowed-hosts", "oauth-scopes", "oauth-allowed-redirect-hosts", "oauth-access-ttl",
		"oauth-refresh-ttl", "oauth-grant-max-lifetime", "owner-password-file", "master-key-file",
		"log-level", "log-format", "log-shell-commands", "instruction-fallbacks", "skill-paths",
		"widgets", "max-request-body",
	} {
		if !seen[f] {
			t.Errorf("flag --%s is missing", f)
		}
	}
}

// TestCommandSandboxSettings: the command sandbox settings parse, and
// turning the sandbox off while offering process:execute is a warning.
func TestCommandSandboxSettings(t *testing.T) {
	e := with(baseEnv, "DEVSPACE_COMMAND_SANDBOX", "OFF", "DEVSPACE_COMMAND_NETWORK", "deny",
		"DEVSPACE_COMMAND_READ_PATHS", "/opt/sdk/,/usr/local/go,/opt/sdk", "DEVSPACE_OAUTH_SCOPES", "project:read process:execute")
	c, err := Load(nil, env(e))
	if err != nil {
		t.Fatal(err)
	}
	if !c.CommandSandboxOff || !c.CommandNetworkDeny || !slices.Equal(c.CommandReadPaths, []string{"/opt/sdk", "/usr/local/go"}) {
		t.Errorf("got off=%v deny=%v paths=%v", c.CommandSandboxOff, c.CommandNetworkDeny, c.CommandReadPaths)
	}
	found := false
	for _, w := range c.Warnings() {
		found = found || strings.HasPrefix(w, "DEVSPACE_COMMAND_SANDBOX: off runs every command with the server's own rights")
	}
	if !found {
		t.Errorf("no warning for the sandbox turned off: %q", c.Warnings())
	}
	d, err := Load(nil, env(baseEnv))
	if err != nil {
		t.Fatal(err)
	}
	if d.CommandSandboxOff || d.CommandNetworkDeny || d.CommandReadPaths != nil {
		t.Errorf("defaults: %+v", d)
	}
}

func TestLoopbackHelpers(t *testing.T) {
	tests := []struct {
		host string
		want bool
	}{
		{"localhost", true}, {"LOCALHOST", true}, {"127.0.0.1", true}, {"127.1.2.3", true},
		{"::1", true}, {"[::1]", true}, {"0.0.0.0", false}, {"", false}, {"::", false},
		{"localhost.example.com", false}, {"10.0.0.1", false}, {"::ffff:127.0.0.1", true},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			if got := IsLoopbackHost(tt.host); got != tt.want {
				t.Errorf("IsLoopbackHost(%q) = %v, want %v", tt.host, got, tt.want)
			}
		})
	}
}

// TestAdminListenOff: "off" (any case) disables the console, from the
// variable or the flag; an empty value is the default, as for every setting.
func TestAdminListenOff(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{name: "default", env: baseEnv, want: DefaultAdminListen},
		{name: "empty is the default", env: with(baseEnv, "DEVSPACE_ADMIN_LISTEN", ""), want: DefaultAdminListen},
		{name: "off", env: with(baseEnv, "DEVSPACE_ADMIN_LISTEN", "off"), want: ""},
		{name: "OFF flag", env: baseEnv, args: []string{"--admin-listen=OFF"}, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(tc.args, env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if c.AdminListen != tc.want {
				t.Errorf("AdminListen = %q, want %q", c.AdminListen, tc.want)
			}
		})
	}
}
