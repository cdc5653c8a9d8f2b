package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Validate checks every field and returns all problems at once, joined with
// errors.Join; each is an *Error whose message starts with the setting's
// environment variable. It returns nil for a valid Config. It reads the
// filesystem (projects, skill paths, the state directory) and the user's home
// directory (os.UserHomeDir), but changes nothing. An empty Projects list is
// valid; Warnings advises against it.
func (c *Config) Validate() error {
	return errors.Join(c.validate()...)
}

func (c *Config) validate() []error {
	var errs []error
	add := func(e ...error) { errs = append(errs, e...) }

	roots, projectErrs := checkProjects(c.Projects)
	add(validateStateDir(c.StateDir, roots)...)
	add(projectErrs...)
	add(validatePublicBaseURL(c.PublicBaseURL)...)
	add(validateCloudflaredMetrics(c.CloudflaredMetrics)...)
	add(c.validateListeners()...)
	add(validateAllowedHosts(c.AllowedHosts)...)
	add(validateScopes(c.OAuthScopes)...)
	add(validateRedirectHosts(c.OAuthAllowedRedirectHosts)...)
	add(c.validateTTLs()...)
	add(validateSecretFile(envOwnerPasswordFile, c.OwnerPasswordFile, roots)...)
	add(validateSecretFile(envMasterKeyFile, c.MasterKeyFile, roots)...)
	switch c.LogLevel {
	case slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError:
	default:
		add(errorf(envLogLevel, "%q is not a log level; use debug, info, warn or error", c.LogLevel.String()))
	}
	if c.LogFormat != LogFormatText && c.LogFormat != LogFormatJSON {
		add(errorf(envLogFormat, "%q is not a log format; use text or json", c.LogFormat))
	}
	add(validateInstructionFallbacks(c.InstructionFallbacks)...)
	add(validateSkillPaths(c.SkillPaths)...)
	if c.Widgets != WidgetsFull && c.Widgets != WidgetsChanges && c.Widgets != WidgetsOff {
		add(errorf(envWidgets, "%q is not a widget mode; use full, changes or off", c.Widgets))
	}
	if c.MaxRequestBody < MinMaxRequestBody || c.MaxRequestBody > MaxMaxRequestBody {
		add(errorf(envMaxRequestBody, "%d bytes is out of range; use 1MiB (%d) to 256MiB (%d)",
			c.MaxRequestBody, MinMaxRequestBody, MaxMaxRequestBody))
	}
	if s := c.OutputGrantShare; s != 0 && s < MinOutputGrantShare {
		add(errorf(envOutputGrantShare, "%d bytes is too small; use at least 1MiB (%d), a few commands' first and last 64KiB", s, MinOutputGrantShare))
	}
	if c.CommandPidsMax != 0 && (c.CommandPidsMax < MinCommandPidsMax || c.CommandPidsMax > MaxCommandPidsMax) {
		add(errorf(envCommandPidsMax, "%d is out of range; use auto or %d to %d", c.CommandPidsMax, MinCommandPidsMax, MaxCommandPidsMax))
	}
	if c.CommandNice < 0 || c.CommandNice > MaxCommandNice {
		add(errorf(envCommandNice, "%d is out of range; use 0 (the server's priority) to %d (the lowest)", c.CommandNice, MaxCommandNice))
	}
	if c.CommandMemoryMax != 0 && (c.CommandMemoryMax < MinCommandMemoryMax || c.CommandMemoryMax > MaxCommandMemoryMax) {
		add(errorf(envCommandMemoryMax, "%d bytes is out of range; use auto or 64MiB (%d) to 1024GiB (%d)",
			c.CommandMemoryMax, MinCommandMemoryMax, MaxCommandMemoryMax))
	}
	add(c.validateEdge()...)
	add(c.validateDisk(roots)...)
	return errs
}

// resolvedProject is a Project whose Path resolved to an existing directory.
type resolvedProject struct {
	Project
	real string
}

func (p resolvedProject) String() string {
	return fmt.Sprintf("%q (project %q)", p.real, p.Label)
}

// checkProjects validates ps and returns the acceptable roots with their
// real paths (including those with only a label or overlap problem), and the
// problems found.
func checkProjects(ps []Project) ([]resolvedProject, []error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, errorf(envProjects, format, args...)) }
	home := ""
	if h, err := os.UserHomeDir(); err == nil {
		if real, err := filepath.EvalSymlinks(h); err == nil {
			home = real
		}
	}
	var ok []resolvedProject
	for _, p := range ps {
		if !filepath.IsAbs(p.Path) {
			bad("%q is not an absolute path; give the full path, starting with /", p.Path)
			continue
		}
		real, err := filepath.EvalSymlinks(p.Path)
		if err == nil {
			var fi os.FileInfo
			if fi, err = os.Stat(real); err == nil && !fi.IsDir() {
				bad("%q is not a directory; approve the directory that contains the project", p.Path)
				continue
			}
		}
		if err != nil {
			errs = append(errs, &Error{Var: envProjects, Msg: accessError(p.Path, err).Error()})
			continue
		}
		if real == string(filepath.Separator) {
			bad("%q is the filesystem root; approve a project directory instead", p.Path)
			continue
		}
		if real == home {
			bad("%q is your home directory; approve a project directory inside it instead", p.Path)
			continue
		}
		if !validLabel(p.Label) {
			bad("label %q of %q is not valid; a label has 1 to 64 letters, digits, '.', '_' or '-' and starts with a letter or digit (choose one with label=path)", p.Label, p.Path)
		}
		ok = append(ok, resolvedProject{Project: p, real: real})
	}
	for i, a := range ok {
		for _, b := range ok[i+1:] {
			switch {
			case a.real == b.real:
				bad("projects %q and %q are the same directory %q; list it once", a.Label, b.Label, a.real)
			case within(b.real, a.real):
				bad("%s is inside %s; approved roots must not overlap, so approve one or the other", b, a)
			case within(a.real, b.real):
				bad("%s is inside %s; approved roots must not overlap, so approve one or the other", a, b)
			}
		}
	}
	for i, a := range ok {
		for _, b := range ok[:i] {
			// The same directory twice is reported above, once.
			if a.Label == b.Label && a.real != b.real {
				bad("label %q is used for both %q and %q; give one of them another label with label=path", a.Label, b.real, a.real)
				break
			}
		}
	}
	return ok, errs
}

// validLabel reports whether s matches ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$.
func validLabel(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case i > 0 && (r == '.' || r == '_' || r == '-'):
		default:
			return false
		}
	}
	return true
}

// within reports whether path is dir or lies inside it. Both must be clean
// absolute paths; the separator check keeps /x/proj_evil out of /x/proj.
func within(path, dir string) bool {
	if path == dir || dir == string(filepath.Separator) {
		return true
	}
	return strings.HasPrefix(path, dir+string(filepath.Separator))
}

// realPath resolves the symlinks of the longest existing prefix of the
// absolute path p, so a file or directory that does not exist yet can still
// be compared with project roots.
func realPath(p string) string {
	p = filepath.Clean(p)
	rest := ""
	for {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(real, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// insideProject returns the project that contains path, if any.
func insideProject(path string, roots []resolvedProject) (resolvedProject, bool) {
	real := realPath(path)
	for _, r := range roots {
		if within(real, r.real) {
			return r, true
		}
	}
	return resolvedProject{}, false
}

func validateStateDir(dir string, roots []resolvedProject) []error {
	switch {
	case dir == "":
		return []error{errorf(envStateDir, "is not set and neither XDG_DATA_HOME nor HOME is set to derive it; set it to the directory for DevSpace's database and keys")}
	case !filepath.IsAbs(dir):
		return []error{errorf(envStateDir, "%q is not an absolute path; give the full path, starting with /", dir)}
	}
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return []error{errorf(envStateDir, "%q is not a directory", dir)}
	}
	if r, ok := insideProject(dir, roots); ok {
		return []error{errorf(envStateDir, "%q is inside %s, where the model could read the database and keys; keep it outside every approved root", dir, r)}
	}
	return nil
}

// validateSecretFile checks an optional *_FILE setting. Whether the file
// exists is left to the command that reads it.
func validateSecretFile(env, path string, roots []resolvedProject) []error {
	switch {
	case path == "":
		return nil
	case !filepath.IsAbs(path):
		return []error{errorf(env, "%q is not an absolute path; give the full path, starting with /", path)}
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return []error{errorf(env, "%q is a directory; give the file that holds the secret", path)}
	}
	if r, ok := insideProject(path, roots); ok {
		return []error{errorf(env, "%q is inside %s, where the model could read it; keep secrets outside every approved root", path, r)}
	}
	return nil
}

func validatePublicBaseURL(v string) []error {
	if v == AutoPublicBaseURL {
		return nil
	}
	bad := func(format string, args ...any) []error { return []error{errorf(envPublicBaseURL, format, args...)} }
	u, err := url.Parse(v)
	switch {
	case err != nil:
		return bad("%q is not a valid URL; give the public origin, such as https://devspace.example.com", v)
	case u.Scheme == "" || u.Opaque != "" && u.Host == "":
		return bad("%q is not an absolute URL; give the public origin with its scheme, such as https://devspace.example.com", v)
	case u.Scheme != "https" && u.Scheme != "http":
		return bad("%q must start with https:// (or http:// for a loopback host)", v)
	case u.Host == "" || u.Hostname() == "":
		return bad("%q has no host; give the public origin, such as https://devspace.example.com", v)
	case u.User != nil:
		return bad("%q must not contain a user name or password", v)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return bad("%q must not have a query or fragment; give the origin only", v)
	}
	origin := u.Scheme + "://" + u.Host
	p := strings.TrimRight(u.Path, "/")
	switch {
	case strings.HasSuffix(p, MCPPath):
		return bad("%q ends in %s; give the origin only (%s), DevSpace adds %s itself", v, MCPPath, origin, MCPPath)
	case u.Path != "":
		return bad("%q has a path; give the origin only (%s)", v, origin)
	case u.Scheme == "http" && !IsLoopbackHost(u.Hostname()):
		return bad("%q must use https; plain http is allowed only for a loopback host (localhost, 127.0.0.1, [::1])", v)
	}
	return nil
}

// validateCloudflaredMetrics checks DEVSPACE_CLOUDFLARED_METRICS: an http
// origin whose host, when it is an IP literal, is loopback or private. A
// host name is checked again when it is dialed (package quicktunnel), since
// only then is its address known. Empty (a hand-built Config) means the
// default.
func validateCloudflaredMetrics(v string) []error {
	if v == "" {
		return nil
	}
	bad := func(format string, args ...any) []error {
		return []error{errorf(envCloudflaredMetrics, format, args...)}
	}
	u, err := url.Parse(v)
	switch {
	case err != nil || u.Scheme == "" || u.Opaque != "":
		return bad("%q is not a URL; give cloudflared's metrics address, such as %s", v, DefaultCloudflaredMetrics)
	case u.Scheme != "http":
		return bad("%q must start with http://; cloudflared's metrics server speaks plain HTTP on the local network", v)
	case u.Hostname() == "":
		return bad("%q has no host; give cloudflared's metrics address, such as %s", v, DefaultCloudflaredMetrics)
	case u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Trim(u.Path, "/") != "":
		return bad("%q must be an origin only (http://host:port), without a path, query or user name", v)
	}
	if a, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil && !IsLocalAddr(a) {
		return bad("%q is not a loopback or private address; DevSpace asks only cloudflared on this host or its container network", v)
	}
	return nil
}

// IsLocalAddr reports whether a is loopback or private (RFC 1918, RFC 4193):
// an address on this host or on a compose or cluster network.
func IsLocalAddr(a netip.Addr) bool {
	a = a.Unmap()
	return a.Zone() == "" && (a.IsLoopback() || a.IsPrivate())
}

func (c *Config) validateListeners() []error {
	var errs []error
	type listener struct{ env, addr, host, port string }
	var ok []listener
	for _, l := range []listener{
		{env: envListen, addr: c.Listen},
		{env: envControlListen, addr: c.ControlListen},
		{env: envMetricsListen, addr: c.MetricsListen},
		{env: envAdminListen, addr: c.AdminListen},
	} {
		if l.env == envAdminListen && l.addr == "" {
			continue // off
		}
		host, port, err := net.SplitHostPort(l.addr)
		if err != nil || port == "" {
			errs = append(errs, errorf(l.env, "%q is not a host:port address; write one such as 127.0.0.1:7676", l.addr))
			continue
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			errs = append(errs, errorf(l.env, "%q has an invalid port; use a number from 0 to 65535", l.addr))
			continue
		}
		if l.env == envControlListen && !IsLoopbackHost(host) {
			errs = append(errs, errorf(l.env, "%q must be a loopback address (127.0.0.1, [::1] or localhost); the control listener is never exposed", l.addr))
			continue
		}
		l.host, l.port = host, port
		for _, o := range ok {
			if clash(l.host, l.port, o.host, o.port) {
				errs = append(errs, errorf(l.env, "%q uses the same port as %s (%q); give each listener its own port", l.addr, o.env, o.addr))
				break
			}
		}
		ok = append(ok, l)
	}
	return errs
}

// clash reports whether two listen addresses would compete for one port.
func clash(h1, p1, h2, p2 string) bool {
	if p1 != p2 || p1 == "0" {
		return false
	}
	unspecified := func(h string) bool {
		a, err := netip.ParseAddr(h)
		return h == "" || err == nil && a.IsUnspecified()
	}
	return h1 == h2 || unspecified(h1) || unspecified(h2) || IsLoopbackHost(h1) && IsLoopbackHost(h2)
}

func validateAllowedHosts(hosts []string) []error {
	if len(hosts) == 0 {
		return []error{errorf(envAllowedHosts, "is empty, so every request would be refused; list the host names clients use, or unset it for the default")}
	}
	var errs []error
	for _, h := range hosts {
		host, port := h, ""
		if hh, pp, err := net.SplitHostPort(h); err == nil {
			host, port = bracket(hh), pp
		}
		_, perr := strconv.ParseUint(port, 10, 16)
		if !validHost(host) || port != "" && perr != nil {
			errs = append(errs, errorf(envAllowedHosts, "%q is not a host or host:port; write entries such as devspace.example.com or localhost:7676", h))
		}
	}
	return errs
}

func validateRedirectHosts(hosts []string) []error {
	if len(hosts) == 0 {
		return []error{errorf(envRedirectHosts, "is empty, so no OAuth client could be redirected; list host names such as chatgpt.com, or unset it for the default")}
	}
	var errs []error
	for _, h := range hosts {
		if !validHost(h) {
			errs = append(errs, errorf(envRedirectHosts, "%q is not a bare host name; write names such as chatgpt.com or [::1], without a scheme, port or path", h))
		}
	}
	return errs
}

// validHost reports whether h is a DNS host name, an IPv4 address or a
// bracketed IPv6 address, without port, zone or wildcard.
func validHost(h string) bool {
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		a, err := netip.ParseAddr(h[1 : len(h)-1])
		return err == nil && a.Is6() && a.Zone() == ""
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Is4()
	}
	if len(h) == 0 || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

func validateScopes(scopes []string) []error {
	var errs []error
	hasRead := false
	for _, s := range scopes {
		switch s {
		case ScopeProjectRead:
			hasRead = true
		case ScopeProjectWrite, ScopeProcessExecute:
		case "openid", "email", "profile", "offline_access":
			errs = append(errs, errorf(envOAuthScopes, "%q is an OpenID Connect scope; DevSpace is not an identity provider, so offer only project:read, project:write and process:execute", s))
		default:
			errs = append(errs, errorf(envOAuthScopes, "unknown scope %q; the known scopes are project:read, project:write and process:execute", s))
		}
	}
	if !hasRead {
		errs = append(errs, errorf(envOAuthScopes, "must include project:read, the scope every grant needs"))
	}
	return errs
}

func (c *Config) validateTTLs() []error {
	var errs []error
	if c.AccessTTL <= 0 {
		errs = append(errs, errorf(envAccessTTL, "must be greater than zero, got %s", c.AccessTTL))
	}
	if c.RefreshTTL <= 0 {
		errs = append(errs, errorf(envRefreshTTL, "must be greater than zero, got %s", c.RefreshTTL))
	}
	if c.GrantMaxLifetime < 0 {
		errs = append(errs, errorf(envGrantMaxLifetime, "must be 0 (no limit) or positive, got %s", c.GrantMaxLifetime))
	}
	if c.AccessTTL > 0 && c.RefreshTTL > 0 && c.AccessTTL > c.RefreshTTL {
		errs = append(errs, errorf(envAccessTTL, "%s is longer than %s (%s); an access token must not outlive its refresh token", c.AccessTTL, envRefreshTTL, c.RefreshTTL))
	}
	return errs
}

func validateInstructionFallbacks(names []string) []error {
	var errs []error
	for _, n := range names {
		if n == "" || n == "." || strings.Contains(n, "..") || strings.ContainsAny(n, "/\\\x00") {
			errs = append(errs, errorf(envInstructionFallbacks, "%q is not a plain file name; give names such as CLAUDE.md, without \"/\" or \"..\"", n))
		}
	}
	return errs
}

func validateSkillPaths(paths []string) []error {
	var errs []error
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			errs = append(errs, errorf(envSkillPaths, "%q is not an absolute path; give the full path, starting with /", p))
			continue
		}
		fi, err := os.Stat(p)
		switch {
		case err != nil:
			errs = append(errs, &Error{Var: envSkillPaths, Msg: accessError(p, err).Error()})
		case !fi.IsDir():
			errs = append(errs, errorf(envSkillPaths, "%q is not a directory", p))
		}
	}
	return errs
}
