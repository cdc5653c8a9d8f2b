package process

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A tool home is one Project's persistent directory for what its commands
// install and cache (docs/design.md §7 "exec_command", docs/decisions.md
// "Tool homes"): a workspaceWrite command's HOME, GOPATH, CARGO_HOME, npm
// prefix and caches; a readOnly command reads and executes it but writes
// its caches to its scratch directory. It outlives executions and restarts
// (New never empties it); the disk guard bounds its size.

// ReasonToolsQuota: the command's tool home grew past its quota while
// the command could write it (internal/diskguard). The tool home is left
// as it is, for the Owner (`devspace projects clear-tools`) or a command
// to clear.
const ReasonToolsQuota = "tools_quota"

// ToolHome is the tool home of key (the Project's fingerprint) under the
// directory base (SandboxOptions.ToolsDir): a name derived from key, so
// that the directory names no Project and no key can name a path outside
// base. It is a pure function; the directory may not exist.
func ToolHome(base, key string) string {
	sum := sha256.Sum256([]byte("tool-home\x00" + key))
	return filepath.Join(base, "t-"+hex.EncodeToString(sum[:12]))
}

// makeToolHome creates the tool home dir (0700), and the directory
// holding it when it is gone. An existing tool home that is not a
// directory (a symlink among them) is refused: nothing outside ToolsDir
// becomes a command's home.
func (m *Manager) makeToolHome(dir string) error {
	err := os.Mkdir(dir, 0o700)
	if os.IsNotExist(err) {
		// The tools directory was removed under the running server.
		if err = os.MkdirAll(m.opts.Sandbox.ToolsDir, 0o700); err == nil {
			err = os.Mkdir(dir, 0o700)
		}
	}
	if err != nil && !os.IsExist(err) {
		return fmt.Errorf("%w: create the tool home: %v", ErrSpawn, err)
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: the tool home is not a directory", ErrSpawn)
	}
	return nil
}

// toolBins are the tool home's directories put first on PATH, in this
// order: the Owner's or the model's own scripts, then what pip --user,
// uv, pipx and npm -g (npm_config_prefix) install, go install, and
// cargo install and rustup.
var toolBins = []string{"bin", ".local/bin", "go/bin", ".cargo/bin"}

// homeVar is one variable a tool home sets: its path under the tool home,
// and whether it is a cache (written by every build: under the scratch
// directory for a readOnly command, which cannot write the tool home).
type homeVar struct {
	name, path string
	cache      bool
}

// homeVars are set under the tool home unless the command's environment
// names them already (the caller's environment wins; BaseEnv drops the
// server's own values of these, which point outside the domain).
var homeVars = []homeVar{
	{"XDG_CACHE_HOME", ".cache", true},
	{"XDG_CONFIG_HOME", ".config", false},
	{"XDG_DATA_HOME", ".local/share", false},
	{"XDG_STATE_HOME", ".local/state", true},
	{"GOPATH", "go", false},
	{"GOMODCACHE", "go/pkg/mod", false},
	{"GOCACHE", ".cache/go-build", true},
	{"npm_config_cache", ".npm", true},
	{"npm_config_prefix", ".local", false},
	{"PIP_CACHE_DIR", ".cache/pip", true},
	{"PYTHONUSERBASE", ".local", false},
	{"UV_CACHE_DIR", ".cache/uv", true},
	{"CARGO_HOME", ".cargo", false},
	{"RUSTUP_HOME", ".rustup", false},
}

// commandEnv is env with the command's homes: TMPDIR is the execution's
// scratch directory; HOME is the tool home for a command that may write
// it, else the scratch directory; homeVars point into the tool home (a
// readOnly command's caches into its scratch directory), and the tool
// home's bin directories come first on PATH. Without a tool home, HOME and
// TMPDIR are the scratch directory and nothing else changes. HOME and
// TMPDIR are always the server's choice; the other variables the caller's
// environment may set itself.
func commandEnv(env []string, scratch, tools string, readOnly bool) []string {
	home := scratch
	if tools != "" && !readOnly {
		home = tools
	}
	set := make(map[string]bool, len(env))
	out := make([]string, 0, len(env)+len(homeVars)+2)
	path := defaultPath
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		switch name {
		case "HOME", "TMPDIR":
			continue
		case "PATH":
			path = value
			continue
		}
		set[name] = true
		out = append(out, kv)
	}
	out = append(out, "HOME="+home, "TMPDIR="+scratch)
	if tools == "" {
		return append(out, "PATH="+path)
	}
	for _, v := range homeVars {
		if set[v.name] {
			continue
		}
		dir := tools
		if v.cache && readOnly {
			dir = scratch
		}
		out = append(out, v.name+"="+filepath.Join(dir, v.path))
	}
	bins := make([]string, 0, len(toolBins)+1)
	for _, b := range toolBins {
		bins = append(bins, filepath.Join(tools, b))
	}
	return append(out, "PATH="+strings.Join(append(bins, path), string(filepath.ListSeparator)))
}

// ReasonToolsCleared: the Owner cleared the command's tool home
// (`devspace projects clear-tools`) while the command could write it.
const ReasonToolsCleared = "tools_cleared"

// ClearTools empties the tool home dir (ToolHome of a Project's key):
// it first kills, at once, every command that may write it (reason
// tools_cleared), then removes what dir holds and keeps dir itself. A
// readOnly command running a tool from it meanwhile may fail. It returns
// how many trees it killed.
func (m *Manager) ClearTools(dir string) int {
	n := m.StopTools(dir, ReasonToolsCleared)
	EmptyToolHome(dir)
	return n
}

// EmptyToolHome removes what the tool home dir holds (read-only
// directories included, as Go's module cache makes them) and keeps dir:
// the owner commands use it when no server runs.
func EmptyToolHome(dir string) {
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return
	}
	emptyDir(dir)
}

// ToolHomes lists the tool homes under base: its directories named as
// ToolHome names them. Anything else there is not DevSpace's and is left
// out. A missing base has none.
func ToolHomes(base string) ([]string, error) {
	ents, err := os.ReadDir(base)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if isToolHomeName(e.Name()) && e.Type().IsDir() {
			out = append(out, filepath.Join(base, e.Name()))
		}
	}
	return out, nil
}

// isToolHomeName: "t-" and the 24 lowercase hex digits ToolHome writes.
func isToolHomeName(name string) bool {
	hexPart, ok := strings.CutPrefix(name, "t-")
	if !ok || len(hexPart) != 24 {
		return false
	}
	_, err := hex.DecodeString(hexPart)
	return err == nil && strings.ToLower(hexPart) == hexPart
}

// RemoveToolHome removes the tool home dir and what it holds (read-only
// directories included): for a tool home no configured Project has.
func RemoveToolHome(dir string) {
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return
	}
	removeTree(dir)
}
