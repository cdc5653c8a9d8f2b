// Package config owns DevSpace's typed configuration: environment variables
// (DEVSPACE_*) with command-line flags overriding them, defaults, validation
// and the non-fatal advice shown by `devspace doctor`.
//
// Every setting has one environment variable and one flag; Usage lists them.
// Error messages always start with the variable name, also when the value
// came from the flag, so an operator can grep for it in any deployment file.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Defaults. Each is also shown by Usage.
const (
	// DefaultPublicBaseURL is the public origin when DEVSPACE_PUBLIC_BASE_URL
	// is unset: the loopback public listener, reachable only from this host.
	DefaultPublicBaseURL = "http://127.0.0.1:7676"
	// AutoPublicBaseURL is the literal DEVSPACE_PUBLIC_BASE_URL value that
	// asks DevSpace to learn the public origin from cloudflared at startup.
	// Config keeps it verbatim; the caller resolves it before using Issuer or
	// Resource.
	AutoPublicBaseURL = "auto"
	// DefaultCloudflaredMetrics is cloudflared's metrics server as the
	// compose file names it; DEVSPACE_PUBLIC_BASE_URL=auto asks it for the
	// quick-tunnel hostname.
	DefaultCloudflaredMetrics = "http://cloudflared:20241"

	DefaultListen        = "127.0.0.1:7676"
	DefaultControlListen = "127.0.0.1:7677"
	DefaultMetricsListen = "127.0.0.1:7678"
	DefaultAdminListen   = "127.0.0.1:7679"
	// AdminListenOff is the DEVSPACE_ADMIN_LISTEN value that disables the
	// Owner's console (an empty value means the default, as for every
	// setting).
	AdminListenOff = "off"

	DefaultAccessTTL        = time.Hour
	DefaultRefreshTTL       = 720 * time.Hour
	DefaultGrantMaxLifetime = time.Duration(0) // no limit

	DefaultLogLevel  = slog.LevelInfo
	DefaultLogFormat = LogFormatText
	DefaultWidgets   = WidgetsFull

	// DefaultMaxRequestBody is the largest request body the public listener
	// reads (docs/design.md §9). MinMaxRequestBody and MaxMaxRequestBody bound the
	// override.
	DefaultMaxRequestBody int64 = 32 << 20
	MinMaxRequestBody     int64 = 1 << 20
	MaxMaxRequestBody     int64 = 256 << 20

	// MinOutputGrantShare is the least DEVSPACE_OUTPUT_GRANT_SHARE may
	// be: a few commands' heads and tails. (The most that means anything
	// is the spool's total, which the process manager owns; it takes a
	// larger share as the whole spool.)
	MinOutputGrantShare int64 = 1 << 20
	// Bounds of DEVSPACE_COMMAND_PIDS_MAX and DEVSPACE_COMMAND_MEMORY_MAX
	// (docs/design.md §9 "Commands"); their default, "auto", is a grant's
	// share of what commands may use, which the process layer derives
	// from the container's or the machine's limits.
	MinCommandPidsMax         = 16
	MaxCommandPidsMax         = 4 << 20
	MinCommandMemoryMax int64 = 64 << 20
	MaxCommandMemoryMax int64 = 1 << 40
	// DefaultCommandNice and MaxCommandNice: DEVSPACE_COMMAND_NICE.
	DefaultCommandNice = 10
	MaxCommandNice     = 19

	// MCPPath is the path of the MCP endpoint under the public origin.
	MCPPath = "/mcp"
)

// OAuth scopes DevSpace knows. ScopeProjectRead is mandatory;
// ScopeProcessExecute is opt-in.
const (
	ScopeProjectRead    = "project:read"
	ScopeProjectWrite   = "project:write"
	ScopeProcessExecute = "process:execute"
)

// Log formats accepted by DEVSPACE_LOG_FORMAT.
const (
	LogFormatText = "text"
	LogFormatJSON = "json"
)

// Widget modes accepted by DEVSPACE_WIDGETS.
const (
	WidgetsFull    = "full"
	WidgetsChanges = "changes"
	WidgetsOff     = "off"
)

// DefaultOAuthScopes returns the scopes offered when DEVSPACE_OAUTH_SCOPES is
// unset. It returns a new slice on every call.
func DefaultOAuthScopes() []string {
	return []string{ScopeProjectRead, ScopeProjectWrite}
}

// DefaultOAuthAllowedRedirectHosts returns the redirect hosts allowed when
// DEVSPACE_OAUTH_ALLOWED_REDIRECT_HOSTS is unset. It returns a new slice on
// every call.
func DefaultOAuthAllowedRedirectHosts() []string {
	return []string{"chatgpt.com", "localhost", "127.0.0.1", "[::1]"}
}

// Project is one approved root.
type Project struct {
	// Label names the Project to the model and in logs. It comes from
	// "label=path", else it is the base name of the path.
	Label string
	// Path is absolute, cleaned, with symlinks resolved (filepath.EvalSymlinks).
	Path string
}

// Config is DevSpace's configuration. Load fills every field, applying the
// documented default when a setting is unset or empty; a Config built by hand
// should be checked with Validate. A Config holds no secrets (only the paths
// of secret files), so it may be logged. It is not safe for concurrent
// mutation; treat it as read-only once loaded.
type Config struct {
	// StateDir holds the SQLite database, auth.json and retained output
	// (DEVSPACE_STATE_DIR). Default: $XDG_DATA_HOME/devspace, else
	// $HOME/.local/share/devspace. Load makes a relative value absolute.
	StateDir string
	// Projects are the approved roots (DEVSPACE_PROJECTS). Default: none,
	// which serve accepts (Warnings advises adding one). Nil when empty.
	Projects []Project
	// PublicBaseURL is the public origin without /mcp
	// (DEVSPACE_PUBLIC_BASE_URL), normalized to scheme://host[:port] with a
	// lower-case scheme and host. Default: DefaultPublicBaseURL. The value
	// AutoPublicBaseURL is kept verbatim until ResolvePublicBaseURL.
	PublicBaseURL string
	// CloudflaredMetrics is the base URL of cloudflared's metrics server,
	// without a trailing slash (DEVSPACE_CLOUDFLARED_METRICS), used only
	// when PublicBaseURL is AutoPublicBaseURL. Default:
	// DefaultCloudflaredMetrics, also when empty in a hand-built Config. It
	// must be http with a host and no path; an IP literal must be loopback
	// or private.
	CloudflaredMetrics string
	// Listen is the public listener's host:port (DEVSPACE_LISTEN). Default:
	// DefaultListen.
	Listen string
	// ControlListen is the control listener's host:port
	// (DEVSPACE_CONTROL_LISTEN); it must be loopback. Default:
	// DefaultControlListen.
	ControlListen string
	// MetricsListen is the Prometheus listener's host:port
	// (DEVSPACE_METRICS_LISTEN). Default: DefaultMetricsListen.
	MetricsListen string
	// AdminListen is the Owner's console listener's host:port
	// (DEVSPACE_ADMIN_LISTEN); "" when it is off (AdminListenOff).
	// Default: DefaultAdminListen.
	AdminListen string
	// AllowedHosts is the Host-header allowlist of the public listener, lower
	// case (DEVSPACE_ALLOWED_HOSTS). Default: DefaultAllowedHosts of
	// PublicBaseURL and Listen. A configured list replaces the default.
	AllowedHosts []string
	// OAuthScopes are the scopes offered, in configured order without
	// duplicates (DEVSPACE_OAUTH_SCOPES). Default: DefaultOAuthScopes.
	OAuthScopes []string
	// OAuthAllowedRedirectHosts are the host names an OAuth redirect URI may
	// use (DEVSPACE_OAUTH_ALLOWED_REDIRECT_HOSTS). Default:
	// DefaultOAuthAllowedRedirectHosts.
	OAuthAllowedRedirectHosts []string
	// AccessTTL is the access-token lifetime (DEVSPACE_OAUTH_ACCESS_TTL).
	// Default: 1h.
	AccessTTL time.Duration
	// RefreshTTL is the refresh-token lifetime (DEVSPACE_OAUTH_REFRESH_TTL).
	// Default: 720h.
	RefreshTTL time.Duration
	// GrantMaxLifetime caps a grant's total life however often it is
	// refreshed (DEVSPACE_OAUTH_GRANT_MAX_LIFETIME). Default: 0, no cap.
	GrantMaxLifetime time.Duration
	// OwnerPasswordFile holds the Owner password for non-interactive init
	// (DEVSPACE_OWNER_PASSWORD_FILE). Default: empty; init generates one and prints it once.
	OwnerPasswordFile string
	// MasterKeyFile holds the master key (DEVSPACE_MASTER_KEY_FILE).
	// Default: empty, the key lives in auth.json.
	MasterKeyFile string
	// LogLevel is the minimum level logged (DEVSPACE_LOG_LEVEL). Default:
	// info.
	LogLevel slog.Level
	// LogFormat is LogFormatText or LogFormatJSON (DEVSPACE_LOG_FORMAT).
	// Default: text.
	LogFormat string
	// LogShellCommands allows command previews in logs
	// (DEVSPACE_LOG_SHELL_COMMANDS). Default: false.
	LogShellCommands bool
	// CommandSandboxOff runs commands unconfined
	// (DEVSPACE_COMMAND_SANDBOX=off). Default: false, every command runs
	// in its own Landlock domain and commands are refused without Landlock.
	CommandSandboxOff bool
	// CommandNetworkDeny refuses commands every TCP bind and connect
	// (DEVSPACE_COMMAND_NETWORK=deny). Default: false (allow).
	CommandNetworkDeny bool
	// CommandReadPaths are extra hierarchies commands may read and
	// execute, absolute and cleaned (DEVSPACE_COMMAND_READ_PATHS).
	// Default: none.
	CommandReadPaths []string
	// CommandPidsMax bounds the tasks (processes and threads) of one
	// command (DEVSPACE_COMMAND_PIDS_MAX). Default: 0, auto (a grant's
	// share: half of what commands may use here); else
	// MinCommandPidsMax to MaxCommandPidsMax.
	CommandPidsMax int
	// CommandMemoryMax bounds the memory of one command in bytes
	// (DEVSPACE_COMMAND_MEMORY_MAX). Default: 0, auto (a grant's share);
	// else MinCommandMemoryMax to MaxCommandMemoryMax.
	CommandMemoryMax int64
	// CommandNice is the CPU priority (nice value) commands run at
	// (DEVSPACE_COMMAND_NICE). Default: DefaultCommandNice; allowed 0 to
	// MaxCommandNice.
	CommandNice int
	// InstructionFallbacks are extra instruction file names such as
	// CLAUDE.md (DEVSPACE_INSTRUCTION_FALLBACKS). Default: none.
	InstructionFallbacks []string
	// SkillPaths are extra trusted skill directories, absolute and cleaned
	// (DEVSPACE_SKILL_PATHS). Default: none.
	SkillPaths []string
	// Widgets is WidgetsFull, WidgetsChanges or WidgetsOff
	// (DEVSPACE_WIDGETS). Default: full.
	Widgets string
	// MaxRequestBody is the request-body limit in bytes
	// (DEVSPACE_MAX_REQUEST_BODY). Default: 32 MiB; allowed 1 MiB to 256 MiB.
	MaxRequestBody int64
	// OutputGrantShare bounds the retained command output of one grant
	// (DEVSPACE_OUTPUT_GRANT_SHARE). Default: 0, meaning the process
	// manager's: a quarter of the 1 GiB spool (256 MiB); at least
	// MinOutputGrantShare, and the whole spool or more means no share.
	OutputGrantShare int64
	// Edge holds the public-edge limits (edge.go).
	Edge Edge
	// ScratchDir holds the executions' scratch directories
	// (DEVSPACE_SCRATCH_DIR, disk.go).
	ScratchDir string
	// ScratchMax bounds one grant's scratch directories together
	// (DEVSPACE_SCRATCH_MAX).
	ScratchMax int64
	// DiskReserve is the free space kept on the watched filesystems
	// (DEVSPACE_DISK_RESERVE).
	DiskReserve int64
	// ToolsDir holds each Project's persistent tool home
	// (DEVSPACE_TOOLS_DIR, disk.go). Default: beside the scratch
	// directory, $XDG_CACHE_HOME/devspace/tools.
	ToolsDir string
	// ToolsMax bounds one Project's tool home (DEVSPACE_TOOLS_MAX).
	// Default: DefaultToolsMax.
	ToolsMax int64
}

// Error is one invalid setting. Load and Validate return these joined with
// errors.Join: errors.As finds the first, and the joined error's
// Unwrap() []error lists them all.
type Error struct {
	// Var is the environment variable of the setting, also when the value
	// came from its flag.
	Var string
	// Msg completes the sentence that starts with Var.
	Msg string
}

// Error returns "VAR: message".
func (e *Error) Error() string { return e.Var + ": " + e.Msg }

func errorf(v, format string, args ...any) *Error {
	return &Error{Var: v, Msg: fmt.Sprintf(format, args...)}
}

// Load builds a Config from lookupEnv (for example os.LookupEnv) and args
// (flags, for example os.Args[2:] of a subcommand). An unset or empty value
// means the default; a flag overrides its environment variable, and an empty
// flag value restores the default. Load then calls Validate.
//
// It returns flag.ErrHelp for -h or --help, the flag package's error for an
// unknown or malformed flag, and otherwise every invalid setting at once as
// joined *Error values. It never returns a nil Config with a nil error.
func Load(args []string, lookupEnv func(string) (string, bool)) (*Config, error) {
	ss := settings()
	fs := flag.NewFlagSet("devspace", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	values := make(map[string]*rawValue, len(ss))
	for _, s := range ss {
		rv := &rawValue{isBool: s.arg == ""}
		values[s.flag] = rv
		fs.Var(rv, s.flag, s.usage)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, flag.ErrHelp
		}
		return nil, fmt.Errorf("%w (run with --help to list the flags)", err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (settings are given as --flag=value or DEVSPACE_* variables)", fs.Arg(0))
	}

	c := defaults(lookupEnv)
	var errs []error
	failed := make(map[string]bool)
	hostsSet := false
	for _, s := range ss {
		v := values[s.flag].value
		if !values[s.flag].set {
			v, _ = lookupEnv(s.env)
		}
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if s.env == envAllowedHosts {
			hostsSet = true
		}
		for _, err := range unjoin(s.parse(c, v)) {
			errs = append(errs, &Error{Var: s.env, Msg: err.Error()})
			failed[s.env] = true
		}
	}
	if !hostsSet {
		c.AllowedHosts = DefaultAllowedHosts(c.PublicBaseURL, c.Listen)
	}
	for _, err := range c.validate() {
		// A setting that failed to parse kept its default, so a Validate
		// complaint about it (say, a cross-check against the default) would
		// only confuse. Projects are checked entry by entry and the failing
		// entries were dropped, so their other errors still stand.
		var e *Error
		if errors.As(err, &e) && failed[e.Var] && e.Var != envProjects {
			continue
		}
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		// Report in Usage order, whichever stage found the problem.
		order := make(map[string]int, len(ss))
		for i, s := range ss {
			order[s.env] = i
		}
		sort.SliceStable(errs, func(i, j int) bool { return order[errVar(errs[i])] < order[errVar(errs[j])] })
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// defaults returns a Config holding every default. The state directory
// follows the XDG base-directory spec, which ignores a relative
// XDG_DATA_HOME.
func defaults(lookupEnv func(string) (string, bool)) *Config {
	c := &Config{
		PublicBaseURL:             DefaultPublicBaseURL,
		CloudflaredMetrics:        DefaultCloudflaredMetrics,
		Listen:                    DefaultListen,
		ControlListen:             DefaultControlListen,
		MetricsListen:             DefaultMetricsListen,
		AdminListen:               DefaultAdminListen,
		OAuthScopes:               DefaultOAuthScopes(),
		OAuthAllowedRedirectHosts: DefaultOAuthAllowedRedirectHosts(),
		AccessTTL:                 DefaultAccessTTL,
		RefreshTTL:                DefaultRefreshTTL,
		GrantMaxLifetime:          DefaultGrantMaxLifetime,
		LogLevel:                  DefaultLogLevel,
		LogFormat:                 DefaultLogFormat,
		Widgets:                   DefaultWidgets,
		MaxRequestBody:            DefaultMaxRequestBody,
		CommandNice:               DefaultCommandNice,
		Edge:                      defaultEdge(),
		ScratchDir:                defaultScratchDir(lookupEnv),
		ScratchMax:                DefaultScratchMax,
		DiskReserve:               DefaultDiskReserve,
		ToolsDir:                  defaultToolsDir(lookupEnv),
		ToolsMax:                  DefaultToolsMax,
	}
	if x, _ := lookupEnv("XDG_DATA_HOME"); filepath.IsAbs(x) {
		c.StateDir = filepath.Join(x, "devspace")
	} else if h, _ := lookupEnv("HOME"); filepath.IsAbs(h) {
		c.StateDir = filepath.Join(h, ".local", "share", "devspace")
	}
	return c
}

// DefaultAllowedHosts returns the Host-header allowlist used when
// DEVSPACE_ALLOWED_HOSTS is unset: the public host with and without its
// port (the scheme's default port when the URL has none), then localhost,
// 127.0.0.1 and [::1], each bare and with the port of listen. Parts that do
// not parse are skipped (Validate reports them); for AutoPublicBaseURL only
// the loopback names are returned, so the caller adds the public host once
// it is known.
func DefaultAllowedHosts(publicBaseURL, listen string) []string {
	var hosts []string
	add := func(h string) {
		for _, x := range hosts {
			if x == h {
				return
			}
		}
		hosts = append(hosts, h)
	}
	if u, err := url.Parse(publicBaseURL); err == nil && publicBaseURL != AutoPublicBaseURL && u.Hostname() != "" {
		host := bracket(strings.ToLower(u.Hostname()))
		port := u.Port()
		if port == "" {
			port = map[string]string{"https": "443", "http": "80"}[strings.ToLower(u.Scheme)]
		}
		add(host)
		if port != "" {
			add(net.JoinHostPort(strings.Trim(host, "[]"), port))
		}
	}
	_, listenPort, err := net.SplitHostPort(listen)
	for _, h := range []string{"localhost", "127.0.0.1", "::1"} {
		add(bracket(h))
		if err == nil && listenPort != "" && listenPort != "0" {
			add(net.JoinHostPort(h, listenPort))
		}
	}
	return hosts
}

// bracket wraps an IPv6 literal in brackets, as it appears in a Host header.
func bracket(host string) string {
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		return "[" + host + "]"
	}
	return host
}

// Issuer returns the OAuth issuer, which is PublicBaseURL.
func (c *Config) Issuer() string { return c.PublicBaseURL }

// Resource returns the protected resource identifier, PublicBaseURL + "/mcp".
func (c *Config) Resource() string { return c.PublicBaseURL + MCPPath }

// PublicURLIsAuto reports whether PublicBaseURL is still AutoPublicBaseURL
// and must be resolved before Issuer and Resource mean anything.
func (c *Config) PublicURLIsAuto() bool { return c.PublicBaseURL == AutoPublicBaseURL }

// ResolvePublicBaseURL replaces AutoPublicBaseURL with the origin learned
// at startup (from cloudflared), after checking it as
// DEVSPACE_PUBLIC_BASE_URL would be checked, and adds its host (bare and
// with the port) to the front of AllowedHosts, since the operator could not
// list a host nobody knew yet. It returns an *Error naming
// DEVSPACE_PUBLIC_BASE_URL and changes nothing when origin is invalid or
// PublicBaseURL is not AutoPublicBaseURL. Call it before the Config is
// shared.
func (c *Config) ResolvePublicBaseURL(origin string) error {
	if !c.PublicURLIsAuto() {
		return errorf(envPublicBaseURL, "is %q, not %q; there is nothing to resolve", c.PublicBaseURL, AutoPublicBaseURL)
	}
	origin = normalizePublicURL(origin)
	if origin == AutoPublicBaseURL {
		return errorf(envPublicBaseURL, "the resolved origin must not be %q", AutoPublicBaseURL)
	}
	if errs := validatePublicBaseURL(origin); len(errs) > 0 {
		return errs[0]
	}
	var hosts []string
	for _, h := range DefaultAllowedHosts(origin, c.Listen) {
		if IsLoopbackHost(h) || IsLoopbackAddr(h) {
			break // the public host's entries come first
		}
		hosts = append(hosts, h)
	}
	c.PublicBaseURL = origin
	c.AllowedHosts = dedupe(append(hosts, c.AllowedHosts...))
	return nil
}

// ControlIsLoopback reports whether ControlListen binds a loopback address.
func (c *Config) ControlIsLoopback() bool { return IsLoopbackAddr(c.ControlListen) }

// MetricsIsLoopback reports whether MetricsListen binds a loopback address.
func (c *Config) MetricsIsLoopback() bool { return IsLoopbackAddr(c.MetricsListen) }

// AdminIsLoopback reports whether AdminListen binds a loopback address
// (false when the console is off).
func (c *Config) AdminIsLoopback() bool { return IsLoopbackAddr(c.AdminListen) }

// ScopeEnabled reports whether scope is among OAuthScopes.
func (c *Config) ScopeEnabled(scope string) bool {
	for _, s := range c.OAuthScopes {
		if s == scope {
			return true
		}
	}
	return false
}

// ProjectByLabel returns the Project labelled label and true, or the zero
// Project and false when there is none.
func (c *Config) ProjectByLabel(label string) (Project, bool) {
	for _, p := range c.Projects {
		if p.Label == label {
			return p, true
		}
	}
	return Project{}, false
}

// IsLoopbackAddr reports whether the host of a host:port address is
// loopback (see IsLoopbackHost). An address that does not parse, or has an
// empty host (all interfaces), is not loopback.
func IsLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && IsLoopbackHost(host)
}

// IsLoopbackHost reports whether host is "localhost" or a loopback IP
// (127.0.0.0/8, ::1), with or without IPv6 brackets.
func IsLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Zone() == "" && a.IsLoopback()
}

// errVar returns the variable an *Error names, or "".
func errVar(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Var
	}
	return ""
}

// unjoin flattens an errors.Join result into its parts.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// rawValue is a flag.Value that records the text given, so parsing and
// error reporting happen in one place for flags and environment alike.
type rawValue struct {
	value  string
	set    bool
	isBool bool
}

func (v *rawValue) String() string {
	if v == nil {
		return ""
	}
	return v.value
}

func (v *rawValue) Set(s string) error {
	v.value, v.set = s, true
	return nil
}

// IsBoolFlag lets a boolean setting be given as a bare --flag.
func (v *rawValue) IsBoolFlag() bool { return v.isBool }

// splitList splits a comma-separated list, trimming blanks and dropping
// empty entries. It returns nil for an empty list.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// dedupe removes repeated entries, keeping the first occurrence.
func dedupe(in []string) []string {
	var out []string
	seen := make(map[string]bool, len(in))
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// parseSize parses a byte count: a decimal integer with an optional KiB,
// MiB or GiB suffix.
func parseSize(v string) (int64, error) {
	mult := int64(1)
	num := v
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if strings.HasSuffix(v, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(v, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size in bytes; write a number of bytes such as 33554432, or use a KiB/MiB suffix such as 32MiB", v)
	}
	return n * mult, nil
}
