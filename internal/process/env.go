package process

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/devspace-dev/devspace/internal/secret"
)

// Environment limits (docs/design.md §9).
const (
	// MaxEnvEntries is the most variables a caller may add.
	MaxEnvEntries = 128
	// MaxEnvBytes bounds the caller's variables, counted as len(name)+1+len(value) each.
	MaxEnvBytes = 128 << 10
)

// ErrInvalidEnv means a caller-supplied environment is refused by
// ValidateEnv; the message names the first offending variable.
var ErrInvalidEnv = errors.New("invalid environment")

// baseEnvNames are copied from the server's environment when present.
// Everything else (tokens, DEVSPACE_*, SSH_AUTH_SOCK, cloud credentials…) is
// dropped: the command sees only what it needs to find programs, write
// temporary files, speak the right locale and find toolchains.
var baseEnvNames = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true,
	"LANG": true, "LANGUAGE": true, "TZ": true, "TMPDIR": true,
	// Toolchain installations, so builds find their SDKs (readable
	// through DEVSPACE_COMMAND_READ_PATHS). The server's caches and
	// workspaces (GOPATH, GOCACHE, GOMODCACHE, CARGO_HOME, XDG_*) are not
	// copied: they lie outside the command's domain, and the command gets
	// its Project's tool home's instead (tools.go).
	"GOROOT": true, "RUSTUP_HOME": true, "JAVA_HOME": true,
	"NVM_DIR": true, "PYENV_ROOT": true,
}

// proxyEnvNames are copied only when their value carries no credential.
var proxyEnvNames = map[string]bool{
	"HTTP_PROXY": true, "HTTPS_PROXY": true, "NO_PROXY": true, "ALL_PROXY": true,
	"http_proxy": true, "https_proxy": true, "no_proxy": true, "all_proxy": true,
}

// fixedEnv is added to every command: no colours, no pagers, no terminal
// prompts that would hang a non-interactive command (a git credential
// prompt would also invite the model to type a secret).
var fixedEnv = []string{
	"NO_COLOR=1",
	"TERM=dumb",
	"PAGER=cat",
	"GIT_PAGER=cat",
	"MANPAGER=cat",
	"GIT_TERMINAL_PROMPT=0",
}

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// BaseEnv returns the environment every command starts from: the allowlisted
// variables of host (PATH, HOME, USER, LOGNAME, SHELL, LANG, LANGUAGE, LC_*,
// TZ, TMPDIR, toolchain installations: GOROOT, RUSTUP_HOME, JAVA_HOME,
// NVM_DIR, PYENV_ROOT, and proxy variables without credentials), then NO_COLOR=1, TERM=dumb,
// PAGER=cat, GIT_PAGER=cat, MANPAGER=cat and GIT_TERMINAL_PROMPT=0. PATH
// defaults to the usual system directories and LANG to C.UTF-8 when host
// has no locale. TERM stays dumb under a pty too (no escape sequences for
// the model to wade through); a caller may override it. The result is
// sorted by name; host is typically os.Environ().
func BaseEnv(host []string) []string {
	vals := make(map[string]string)
	for _, kv := range host {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		switch {
		case baseEnvNames[name], strings.HasPrefix(name, "LC_") && envNameRE().MatchString(name):
			vals[name] = value
		case proxyEnvNames[name]:
			if !strings.Contains(value, "@") {
				if _, found := secret.Detect(value); !found {
					vals[name] = value
				}
			}
		}
	}
	if vals["PATH"] == "" {
		vals["PATH"] = defaultPath
	}
	if vals["LANG"] == "" && vals["LC_ALL"] == "" {
		vals["LANG"] = "C.UTF-8"
	}
	for _, kv := range fixedEnv {
		name, value, _ := strings.Cut(kv, "=")
		vals[name] = value
	}
	return envList(vals)
}

// MergeEnv returns base with the variables of extra added or replaced,
// sorted by name. Validate extra with ValidateEnv first.
func MergeEnv(base []string, extra map[string]string) []string {
	vals := make(map[string]string, len(base)+len(extra))
	for _, kv := range base {
		if name, value, ok := strings.Cut(kv, "="); ok {
			vals[name] = value
		}
	}
	for k, v := range extra {
		vals[k] = v
	}
	return envList(vals)
}

func envList(vals map[string]string) []string {
	out := make([]string, 0, len(vals))
	for k, v := range vals {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// envNameRE matches a portable environment variable name; it is
// compiled on first use, not at package init: every command's launcher is
// this binary too, and runs every package's init before it can start the
// command (docs/performance.md, "Command start").
var envNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// ValidateEnv checks a caller-supplied environment: at most MaxEnvEntries
// variables and MaxEnvBytes in all, names matching ^[A-Za-z_][A-Za-z0-9_]*$,
// values without NUL. It returns an error wrapping ErrInvalidEnv; a nil or
// empty map is valid.
//
// No name is refused for what it does: LD_PRELOAD, BASH_ENV, PATH and the
// like are allowed, because the command is arbitrary code running with the
// user's rights anyway (shell mode can export them itself); a denylist would
// suggest a protection that does not exist. Literal credentials in values
// are the caller's check (secret.Check).
func ValidateEnv(env map[string]string) error {
	if len(env) > MaxEnvEntries {
		return fmt.Errorf("%w: %d variables (at most %d)", ErrInvalidEnv, len(env), MaxEnvEntries)
	}
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	total := 0
	for _, k := range names {
		v := env[k]
		if !envNameRE().MatchString(k) {
			return fmt.Errorf("%w: variable name %q is not [A-Za-z_][A-Za-z0-9_]*", ErrInvalidEnv, truncateForError(k))
		}
		if strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("%w: the value of %s contains NUL", ErrInvalidEnv, k)
		}
		total += len(k) + 1 + len(v)
	}
	if total > MaxEnvBytes {
		return fmt.Errorf("%w: %d bytes (at most %d)", ErrInvalidEnv, total, MaxEnvBytes)
	}
	return nil
}

func truncateForError(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
