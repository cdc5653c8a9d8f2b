package config

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Environment variable names.
const (
	envStateDir             = "DEVSPACE_STATE_DIR"
	envProjects             = "DEVSPACE_PROJECTS"
	envPublicBaseURL        = "DEVSPACE_PUBLIC_BASE_URL"
	envCloudflaredMetrics   = "DEVSPACE_CLOUDFLARED_METRICS"
	envListen               = "DEVSPACE_LISTEN"
	envControlListen        = "DEVSPACE_CONTROL_LISTEN"
	envMetricsListen        = "DEVSPACE_METRICS_LISTEN"
	envAdminListen          = "DEVSPACE_ADMIN_LISTEN"
	envAllowedHosts         = "DEVSPACE_ALLOWED_HOSTS"
	envOAuthScopes          = "DEVSPACE_OAUTH_SCOPES"
	envRedirectHosts        = "DEVSPACE_OAUTH_ALLOWED_REDIRECT_HOSTS"
	envAccessTTL            = "DEVSPACE_OAUTH_ACCESS_TTL"
	envRefreshTTL           = "DEVSPACE_OAUTH_REFRESH_TTL"
	envGrantMaxLifetime     = "DEVSPACE_OAUTH_GRANT_MAX_LIFETIME"
	envOwnerPasswordFile    = "DEVSPACE_OWNER_PASSWORD_FILE"
	envMasterKeyFile        = "DEVSPACE_MASTER_KEY_FILE"
	envLogLevel             = "DEVSPACE_LOG_LEVEL"
	envLogFormat            = "DEVSPACE_LOG_FORMAT"
	envLogShellCommands     = "DEVSPACE_LOG_SHELL_COMMANDS"
	envInstructionFallbacks = "DEVSPACE_INSTRUCTION_FALLBACKS"
	envSkillPaths           = "DEVSPACE_SKILL_PATHS"
	envWidgets              = "DEVSPACE_WIDGETS"
	envMaxRequestBody       = "DEVSPACE_MAX_REQUEST_BODY"
	envCommandSandbox       = "DEVSPACE_COMMAND_SANDBOX"
	envCommandNetwork       = "DEVSPACE_COMMAND_NETWORK"
	envCommandReadPaths     = "DEVSPACE_COMMAND_READ_PATHS"
	envOutputGrantShare     = "DEVSPACE_OUTPUT_GRANT_SHARE"
	envCommandPidsMax       = "DEVSPACE_COMMAND_PIDS_MAX"
	envCommandMemoryMax     = "DEVSPACE_COMMAND_MEMORY_MAX"
	envCommandNice          = "DEVSPACE_COMMAND_NICE"
)

// setting ties one Config field to its flag and environment variable.
type setting struct {
	flag  string // flag name without dashes
	env   string // environment variable
	arg   string // value placeholder in Usage; empty for a boolean flag
	def   string // default as shown in Usage
	usage string // what the setting means
	// parse stores the non-empty, trimmed value v into c. It returns plain
	// messages (joined when there are several); Load prefixes the variable.
	// On failure it leaves the default in place.
	parse func(c *Config, v string) error
}

// settings returns the table of every setting, in Usage order. It is built
// per call so there is no package-level mutable state.
func settings() []setting {
	return append([]setting{
		{
			flag: "state-dir", env: envStateDir, arg: "DIR",
			def:   "$XDG_DATA_HOME/devspace, else $HOME/.local/share/devspace",
			usage: "Directory for the SQLite database, auth.json and retained command output. Keep it outside every project.",
			parse: func(c *Config, v string) error {
				p, err := filepath.Abs(v)
				if err != nil {
					return fmt.Errorf("cannot make %q absolute: %v", v, err)
				}
				c.StateDir = p
				return nil
			},
		},
		{
			flag: "projects", env: envProjects, arg: "LIST",
			def:   "none",
			usage: "Approved project roots, comma-separated, each label=/abs/path or /abs/path (the label is then the directory's name). Each must be an existing directory; /, your home directory and overlapping roots are refused.",
			parse: parseProjects,
		},
		{
			flag: "public-base-url", env: envPublicBaseURL, arg: "URL",
			def:   DefaultPublicBaseURL,
			usage: "Public origin as ChatGPT reaches it, without /mcp (for example https://devspace.example.com). https is required unless the host is loopback. The OAuth issuer is this URL and the MCP resource is this URL + /mcp. \"auto\" means: learn it at startup from a cloudflared quick tunnel (see --cloudflared-metrics); a new quick-tunnel URL means every client must authorize again.",
			parse: func(c *Config, v string) error {
				c.PublicBaseURL = normalizePublicURL(v)
				return nil
			},
		},
		{
			flag: "cloudflared-metrics", env: envCloudflaredMetrics, arg: "URL",
			def:   DefaultCloudflaredMetrics,
			usage: "cloudflared's metrics server, which DEVSPACE_PUBLIC_BASE_URL=auto asks for the quick-tunnel hostname (GET /quicktunnel) at startup. http only, and only a loopback or private (compose or cluster network) address is contacted.",
			parse: func(c *Config, v string) error {
				c.CloudflaredMetrics = strings.TrimRight(v, "/")
				return nil
			},
		},
		{
			flag: "listen", env: envListen, arg: "HOST:PORT",
			def:   DefaultListen,
			usage: "Public listener (MCP, OAuth, health, widgets). The container image uses 0.0.0.0:7676.",
			parse: func(c *Config, v string) error { c.Listen = v; return nil },
		},
		{
			flag: "control-listen", env: envControlListen, arg: "HOST:PORT",
			def:   DefaultControlListen,
			usage: "Control listener used by the devspace CLI (grants, revoke-all, diagnostics). Must be loopback; it is never exposed.",
			parse: func(c *Config, v string) error { c.ControlListen = v; return nil },
		},
		{
			flag: "metrics-listen", env: envMetricsListen, arg: "HOST:PORT",
			def:   DefaultMetricsListen,
			usage: "Prometheus /metrics listener. Never tunnel it. The container image uses 0.0.0.0:7678.",
			parse: func(c *Config, v string) error { c.MetricsListen = v; return nil },
		},
		{
			flag: "admin-listen", env: envAdminListen, arg: "HOST:PORT",
			def:   DefaultAdminListen,
			usage: "The Owner's console (a web page: grants, live activity, health), signed in with a link from `devspace admin`. Keep it on loopback and never tunnel it; it answers only requests addressed to a loopback name or this host, with this port. \"off\" disables it. The container image uses 0.0.0.0:7679, which compose publishes on the host's 127.0.0.1 only.",
			parse: func(c *Config, v string) error {
				if strings.EqualFold(v, AdminListenOff) {
					c.AdminListen = ""
					return nil
				}
				c.AdminListen = v
				return nil
			},
		},
		{
			flag: "allowed-hosts", env: envAllowedHosts, arg: "LIST",
			def:   "the public host with and without its port, plus localhost, 127.0.0.1 and [::1] bare and with the listen port",
			usage: "Host headers the public listener accepts, comma-separated host or host:port. A list replaces the default entirely.",
			parse: func(c *Config, v string) error {
				c.AllowedHosts = dedupe(splitList(strings.ToLower(v)))
				return nil
			},
		},
		{
			flag: "oauth-scopes", env: envOAuthScopes, arg: "LIST",
			def:   strings.Join(DefaultOAuthScopes(), " "),
			usage: "OAuth scopes offered, separated by spaces or commas: project:read (required), project:write, process:execute (lets a grant run commands; enable it only inside the container).",
			parse: func(c *Config, v string) error {
				c.OAuthScopes = dedupe(strings.FieldsFunc(v, func(r rune) bool {
					return r == ',' || r == ' ' || r == '\t' || r == '\n'
				}))
				return nil
			},
		},
		{
			flag: "oauth-allowed-redirect-hosts", env: envRedirectHosts, arg: "LIST",
			def:   strings.Join(DefaultOAuthAllowedRedirectHosts(), ","),
			usage: "Host names an OAuth client's redirect URI may use, comma-separated, without scheme or port. https is required except for loopback hosts.",
			parse: func(c *Config, v string) error {
				c.OAuthAllowedRedirectHosts = dedupe(splitList(strings.ToLower(v)))
				return nil
			},
		},
		{
			flag: "oauth-access-ttl", env: envAccessTTL, arg: "DURATION",
			def:   "1h",
			usage: "Access-token lifetime, Go duration syntax (30m, 1h). Must not exceed the refresh-token lifetime.",
			parse: func(c *Config, v string) error { return parseDuration(&c.AccessTTL, v) },
		},
		{
			flag: "oauth-refresh-ttl", env: envRefreshTTL, arg: "DURATION",
			def:   "720h",
			usage: "Refresh-token lifetime; each refresh issues a new one.",
			parse: func(c *Config, v string) error { return parseDuration(&c.RefreshTTL, v) },
		},
		{
			flag: "oauth-grant-max-lifetime", env: envGrantMaxLifetime, arg: "DURATION",
			def:   "0, no limit",
			usage: "Longest a grant lives however often it is refreshed; the owner must then approve again. 0 means no limit.",
			parse: func(c *Config, v string) error { return parseDuration(&c.GrantMaxLifetime, v) },
		},
		{
			flag: "owner-password-file", env: envOwnerPasswordFile, arg: "FILE",
			def:   "none; init generates a password and prints it once",
			usage: "File holding the Owner password, for a non-interactive init (Docker or Kubernetes secrets).",
			parse: func(c *Config, v string) error { return parseFile(&c.OwnerPasswordFile, v) },
		},
		{
			flag: "master-key-file", env: envMasterKeyFile, arg: "FILE",
			def:   "none; the key lives in auth.json",
			usage: "File holding the master key that protects stored secrets.",
			parse: func(c *Config, v string) error { return parseFile(&c.MasterKeyFile, v) },
		},
		{
			flag: "log-level", env: envLogLevel, arg: "LEVEL",
			def:   "info",
			usage: "Minimum log level: debug, info, warn or error.",
			parse: func(c *Config, v string) error {
				l, ok := map[string]slog.Level{
					"debug": slog.LevelDebug, "info": slog.LevelInfo,
					"warn": slog.LevelWarn, "error": slog.LevelError,
				}[strings.ToLower(v)]
				if !ok {
					return fmt.Errorf("%q is not a log level; use debug, info, warn or error", v)
				}
				c.LogLevel = l
				return nil
			},
		},
		{
			flag: "log-format", env: envLogFormat, arg: "FORMAT",
			def:   DefaultLogFormat,
			usage: "Log format: text or json (the container image uses json).",
			parse: func(c *Config, v string) error { c.LogFormat = strings.ToLower(v); return nil },
		},
		{
			flag: "log-shell-commands", env: envLogShellCommands, arg: "",
			def:   "0",
			usage: "1 (or true) lets a preview of each command appear in logs; 0 (or false) keeps command text out of them. The bare flag means 1.",
			parse: func(c *Config, v string) error {
				switch strings.ToLower(v) {
				case "1", "true":
					c.LogShellCommands = true
				case "0", "false":
					c.LogShellCommands = false
				default:
					return fmt.Errorf("%q is not a boolean; use 1 or 0 (or true or false)", v)
				}
				return nil
			},
		},
		{
			flag: "instruction-fallbacks", env: envInstructionFallbacks, arg: "LIST",
			def:   "none",
			usage: "Extra instruction file names DevSpace also recognizes besides AGENTS.md, comma-separated plain names such as CLAUDE.md. Off by default.",
			parse: func(c *Config, v string) error {
				c.InstructionFallbacks = dedupe(splitList(v))
				return nil
			},
		},
		{
			flag: "skill-paths", env: envSkillPaths, arg: "LIST",
			def:   "none",
			usage: "Extra trusted skill directories, comma-separated absolute paths. Keep them outside your projects, where the model can write.",
			parse: func(c *Config, v string) error {
				var ps []string
				for _, p := range splitList(v) {
					if filepath.IsAbs(p) {
						p = filepath.Clean(p)
					}
					ps = append(ps, p)
				}
				c.SkillPaths = dedupe(ps)
				return nil
			},
		},
		{
			flag: "command-sandbox", env: envCommandSandbox, arg: "MODE",
			def:   "on",
			usage: "on confines every command in a Landlock domain (the system read-only, its Project, a private scratch directory) and refuses commands where the kernel has no Landlock; off runs commands with the server's own rights (a risk doctor reports).",
			parse: func(c *Config, v string) error {
				switch strings.ToLower(v) {
				case "on":
					c.CommandSandboxOff = false
				case "off":
					c.CommandSandboxOff = true
				default:
					return fmt.Errorf("%q is not a sandbox mode; use on or off", v)
				}
				return nil
			},
		},
		{
			flag: "command-network", env: envCommandNetwork, arg: "POLICY",
			def:   "allow",
			usage: "allow lets commands use the network; deny refuses every IPv4 and IPv6 socket of a command: TCP, UDP, ping, MPTCP (Unix sockets inside its own domain remain).",
			parse: func(c *Config, v string) error {
				switch strings.ToLower(v) {
				case "allow":
					c.CommandNetworkDeny = false
				case "deny":
					c.CommandNetworkDeny = true
				default:
					return fmt.Errorf("%q is not a network policy; use allow or deny", v)
				}
				return nil
			},
		},
		{
			flag: "command-read-paths", env: envCommandReadPaths, arg: "LIST",
			def:   "none",
			usage: "Extra directories commands may read and execute besides the system (/usr, /bin, /lib*, /etc, /opt), comma-separated absolute paths, e.g. a toolchain installed elsewhere.",
			parse: func(c *Config, v string) error {
				var ps []string
				for _, p := range splitList(v) {
					if !filepath.IsAbs(p) {
						return fmt.Errorf("%q is not an absolute path", p)
					}
					ps = append(ps, filepath.Clean(p))
				}
				c.CommandReadPaths = dedupe(ps)
				return nil
			},
		},
		{
			flag: "output-grant-share", env: envOutputGrantShare, arg: "BYTES",
			def:   "268435456, i.e. 256MiB, a quarter of the 1GiB output spool",
			usage: "Most retained command output one grant may hold, in bytes or with a KiB/MiB/GiB suffix; at least 1MiB, and 1GiB (the whole spool) or more means no share. Past it the grant's own new output is truncated (each command still keeps its first and last 64KiB) and its own oldest output is retired, never another grant's.",
			parse: sizeField(func(c *Config) *int64 { return &c.OutputGrantShare }),
		},
		{
			flag: "command-pids-max", env: envCommandPidsMax, arg: "N",
			def:   "auto",
			usage: "Processes and threads one command may have. auto: a grant's share, half of what commands may use here (the container's pids limit, or the machine's, less a quarter kept for the server). Where a cgroup bounds commands a fork past it fails; elsewhere the command is stopped (killReason pids_limit). 16 to 4194304.",
			parse: func(c *Config, v string) error {
				return parseAuto(&c.CommandPidsMax, v, func(v string) (n int, err error) { return n, parseInt(&n, v) })
			},
		},
		{
			flag: "command-memory-max", env: envCommandMemoryMax, arg: "BYTES",
			def:   "auto",
			usage: "Memory one command may use, in bytes or with a KiB/MiB/GiB suffix. auto: a grant's share, half of what commands may use here (the container's memory limit, or the machine's, less a quarter kept for the server). A command past it is stopped whole (killReason out_of_memory). 64MiB to 1024GiB.",
			parse: func(c *Config, v string) error {
				return parseAuto(&c.CommandMemoryMax, v, parseSize)
			},
		},
		{
			flag: "command-nice", env: envCommandNice, arg: "N",
			def:   strconv.Itoa(DefaultCommandNice),
			usage: "CPU priority of commands, a nice value from 0 (the server's own) to 19 (the lowest). Below the server's, the server keeps answering every grant however busy commands keep the CPU.",
			parse: func(c *Config, v string) error { return parseInt(&c.CommandNice, v) },
		},
		{
			flag: "widgets", env: envWidgets, arg: "MODE",
			def:   DefaultWidgets,
			usage: "ChatGPT widgets: full, changes or off.",
			parse: func(c *Config, v string) error { c.Widgets = strings.ToLower(v); return nil },
		},
		{
			flag: "max-request-body", env: envMaxRequestBody, arg: "BYTES",
			def:   "33554432, i.e. 32MiB",
			usage: "Largest request body accepted, in bytes or with a KiB/MiB suffix; from 1MiB to 256MiB.",
			parse: sizeField(func(c *Config) *int64 { return &c.MaxRequestBody }),
		},
	}, append(edgeSettings(), diskSettings()...)...)
}

// Usage writes the help text for the configuration flags: every flag with
// its environment variable, default and meaning.
func Usage(w io.Writer) {
	fmt.Fprintln(w, "Configuration. Each setting is read from its DEVSPACE_* environment variable;")
	fmt.Fprintln(w, "a flag (-flag or --flag) overrides it. An empty value means the default.")
	fmt.Fprintln(w)
	for _, s := range settings() {
		name := "--" + s.flag
		if s.arg != "" {
			name += " " + s.arg
		} else {
			name += "[=0|1]"
		}
		fmt.Fprintf(w, "  %s\n", name)
		fmt.Fprintf(w, "      env %s (default: %s)\n", s.env, s.def)
		for _, line := range wrap(s.usage, 72) {
			fmt.Fprintf(w, "      %s\n", line)
		}
	}
}

// wrap breaks text into lines of at most width runes where it can.
func wrap(text string, width int) []string {
	var lines []string
	var line string
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case len(line)+1+len(word) > width:
			lines = append(lines, line)
			line = word
		default:
			line += " " + word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// parseProjects parses "label=path" or "path" entries. An entry is
// label=path only when the text before its first "=" has no "/", so an
// absolute path may itself contain "="; an empty label means the default.
// The default label is the base name of the path as written. Paths are
// cleaned and their symlinks resolved; entries that are relative or cannot
// be resolved are reported and dropped, so Validate does not repeat them.
func parseProjects(c *Config, v string) error {
	var errs []error
	var ps []Project
	for _, entry := range splitList(v) {
		label, path := "", entry
		if i := strings.Index(entry, "="); i >= 0 && !strings.Contains(entry[:i], "/") {
			label, path = strings.TrimSpace(entry[:i]), strings.TrimSpace(entry[i+1:])
			if path == "" {
				errs = append(errs, fmt.Errorf("entry %q has no path; write label=/path/to/project", entry))
				continue
			}
		}
		if !filepath.IsAbs(path) {
			errs = append(errs, fmt.Errorf("%q is not an absolute path; give the full path, starting with /", path))
			continue
		}
		resolved, err := filepath.EvalSymlinks(filepath.Clean(path))
		if err != nil {
			errs = append(errs, accessError(path, err))
			continue
		}
		if label == "" {
			// The base name of the path as written, so a symlinked root keeps
			// the name its owner knows it by.
			label = filepath.Base(filepath.Clean(path))
		}
		ps = append(ps, Project{Label: label, Path: resolved})
	}
	c.Projects = ps
	return errors.Join(errs...)
}

// accessError phrases a failure to stat or resolve path.
func accessError(path string, err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%q does not exist; create it or correct the path", path)
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("cannot access %q: %v", path, err)
}

// normalizePublicURL lower-cases the scheme and host and drops trailing
// slashes from the path. A value that does not parse is returned as is, for
// Validate to report.
func normalizePublicURL(v string) string {
	if v == AutoPublicBaseURL {
		return v
	}
	u, err := url.Parse(v)
	if err != nil {
		return v
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u.String()
}

func parseDuration(dst *time.Duration, v string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%q is not a duration; use Go syntax such as 30m, 1h or 720h", v)
	}
	*dst = d
	return nil
}

func parseFile(dst *string, v string) error {
	p, err := filepath.Abs(v)
	if err != nil {
		return fmt.Errorf("cannot make %q absolute: %v", v, err)
	}
	*dst = p
	return nil
}

// parseAuto sets *dst to 0 for "auto" (any case), else to what parse
// makes of v.
func parseAuto[T int | int64](dst *T, v string, parse func(string) (T, error)) error {
	if strings.EqualFold(v, "auto") {
		*dst = 0
		return nil
	}
	n, err := parse(v)
	if err != nil {
		return err
	}
	*dst = n
	return nil
}
