package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/devspace-dev/devspace/internal/buildinfo"
	"github.com/devspace-dev/devspace/internal/config"
	"github.com/devspace-dev/devspace/internal/process"
	"github.com/devspace-dev/devspace/internal/store"
)

// diagnosticAuditEvents is how many recent audit events a bundle carries.
const diagnosticAuditEvents = 50

// diagnosticBundle is what `devspace diagnostic` writes: what a maintainer
// needs to understand an installation, with nothing that could let anyone
// act on it. Every string goes through redact before it is written.
type diagnosticBundle struct {
	GeneratedAt time.Time         `json:"generatedAt"`
	Version     map[string]string `json:"version"`
	Config      map[string]any    `json:"config"`
	Doctor      []string          `json:"doctor"`
	Cgroup      map[string]any    `json:"cgroup"`
	Limits      map[string]any    `json:"limits"`
	Disk        map[string]any    `json:"disk"`
	Sandbox     map[string]any    `json:"commandSandbox"`
	Counts      map[string]any    `json:"counts,omitempty"`
	Audit       []map[string]any  `json:"recentAudit,omitempty"`
	Metrics     []string          `json:"metrics,omitempty"`
	Notes       []string          `json:"notes,omitempty"`
}

// Diagnostic returns the redacted support bundle `devspace diagnostic`
// writes and the Owner's console offers (docs/design.md §10): JSON with
// versions, the effective configuration, the doctor's findings, cgroup,
// sandbox, limits and disk state, counts, the latest audit events and
// DevSpace's metrics when its metrics listener is on this host. home is
// the Owner's home directory, replaced by "~" ("" for none). It only
// reads: the state is opened read-only.
func Diagnostic(ctx context.Context, cfg *config.Config, home string) ([]byte, error) {
	raw, err := DiagnosticInputs(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return newRedactor(cfg, home).redact(raw), nil
}

// DiagnosticInputs is the bundle before redaction, indented JSON: tests
// show with it that what redaction must remove was there. Never hand it
// out.
func DiagnosticInputs(ctx context.Context, cfg *config.Config) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // "<state dir>", not "\u003cstate dir\u003e"
	enc.SetIndent("", "  ")
	if err := enc.Encode(collectDiagnostic(ctx, cfg)); err != nil {
		return nil, fmt.Errorf("encode the diagnostic bundle: %w", err)
	}
	return buf.Bytes(), nil
}

// collectDiagnostic gathers a bundle, before redaction.
func collectDiagnostic(ctx context.Context, cfg *config.Config) diagnosticBundle {
	bi := buildinfo.Get()
	b := diagnosticBundle{
		GeneratedAt: time.Now().UTC(),
		Version: map[string]string{
			"devspace": bi.Version, "commit": bi.Commit, "go": bi.GoVersion, "os": runtime.GOOS, "arch": runtime.GOARCH,
			"kernel": kernelRelease(),
		},
		Config: redactedConfig(cfg),
	}
	if _, err := os.Stat("/.dockerenv"); err == nil {
		b.Version["container"] = "docker"
	}
	for _, f := range Doctor(ctx, cfg) {
		b.Doctor = append(b.Doctor, f.String())
	}
	ok, reason := process.CgroupAvailable()
	b.Cgroup = map[string]any{"delegated": ok, "reason": reason}
	sb := SandboxState(cfg)
	b.Sandbox = map[string]any{"mode": sb.Mode, "abi": sb.Status.ABI, "reason": sb.Status.Reason, "rules": sb.Rules,
		"denyNetwork": sb.DenyNetwork, "networkEnforced": sb.NetworkEnforced, "unixSockets": sb.UnixSockets, "ipc": sb.IPC}
	li := LimitsState(cfg, sb)
	b.Limits = map[string]any{"mechanism": li.Mechanism, "reason": li.Reason, "rlimitNproc": li.NProc, "budgetFrom": li.BudgetFrom,
		"budgetTasks": li.BudgetPids, "budgetMemory": li.BudgetMemory, "commandsTasks": li.CommandsPids, "commandsMemory": li.CommandsMemory,
		"grantTasks": li.TenantPids, "grantMemory": li.TenantMemory, "commandTasks": li.PidsMax, "commandMemory": li.MemoryMax, "commandNice": li.Nice}

	var fss []map[string]any
	for _, fs := range DiskStatus(cfg) {
		// No Project path: roles and sizes say what a report needs.
		fss = append(fss, map[string]any{"role": fs.Role, "free": fs.Free, "total": fs.Total, "low": fs.Low, "refusing": fs.Refusing})
	}
	b.Disk = map[string]any{"reserve": cfg.DiskReserve, "scratchMax": cfg.ScratchMax, "toolsMax": cfg.ToolsMax, "filesystems": fss}

	st, err := store.OpenReadOnly(ctx, cfg.StateDir)
	if err != nil {
		b.Notes = append(b.Notes, "state: "+err.Error())
	} else {
		defer st.Close()
		b.Counts = diagnosticCounts(ctx, st)
		if events, err := st.RecentAudit(ctx, diagnosticAuditEvents); err == nil {
			for _, e := range events {
				ev := map[string]any{"at": e.At, "kind": e.Kind}
				if e.Detail != "" {
					var d any
					if json.Unmarshal([]byte(e.Detail), &d) == nil {
						ev["detail"] = d
					}
				}
				b.Audit = append(b.Audit, ev)
			}
		}
	}
	if m, err := scrapeMetrics(ctx, cfg); err != nil {
		b.Notes = append(b.Notes, "metrics: "+err.Error())
	} else {
		b.Metrics = m
	}
	return b
}

func diagnosticCounts(ctx context.Context, st *store.Store) map[string]any {
	c := map[string]any{}
	if gs, err := st.Grants(ctx, true); err == nil {
		active := 0
		for _, g := range gs {
			if g.RevokedAt == nil {
				active++
			}
		}
		c["grants"], c["grantsActive"] = len(gs), active
	}
	if n, err := st.CountClients(ctx); err == nil {
		c["clients"] = n
	}
	if n, err := st.CountOpenExecutions(ctx); err == nil {
		c["executionsOpen"] = n
	}
	if n, err := st.CountProcessOutputs(ctx); err == nil {
		c["processOutputs"] = n
	}
	// Commands started and not ended (with no server running, what a
	// crash left; the metrics snapshot's devspace_processes_running is the
	// server's own live count).
	if n, err := st.CountRunningProcessOutputs(ctx); err == nil {
		c["processesRunning"] = n
	}
	if v, err := st.SchemaVersion(ctx); err == nil {
		c["schemaVersion"] = v
	}
	return c
}

// redactedConfig is the effective configuration with every secret, file
// and Project path replaced by what it is.
func redactedConfig(cfg *config.Config) map[string]any {
	raw, _ := json.Marshal(cfg)
	m := map[string]any{}
	_ = json.Unmarshal(raw, &m)
	for k, v := range m {
		switch {
		case k == "Projects":
			var labels []string
			for _, p := range cfg.Projects {
				labels = append(labels, p.Label)
			}
			sort.Strings(labels)
			m[k] = map[string]any{"count": len(labels), "labels": labels}
		case k == "StateDir":
			m[k] = "<state dir>"
		case strings.HasSuffix(k, "File"), strings.HasSuffix(k, "Files"):
			m[k] = map[bool]string{true: "<set>", false: "<unset>"}[v != "" && v != nil]
		case k == "SkillPaths":
			m[k] = fmt.Sprintf("<%d path(s)>", len(cfg.SkillPaths))
		case strings.HasSuffix(k, "TTL"), strings.HasSuffix(k, "Lifetime"), strings.HasSuffix(k, "Timeout"):
			if ns, ok := v.(float64); ok {
				m[k] = time.Duration(ns).String()
			}
		}
	}
	return m
}

// scrapeMetrics reads DevSpace's own series from the running server's
// metrics listener, when it is an address of this host (or container) and
// answers.
func scrapeMetrics(ctx context.Context, cfg *config.Config) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	addr, err := localTarget(ctx, cfg.MetricsListen)
	if err != nil {
		return nil, fmt.Errorf("%w; not scraped", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("no running server answered on %s", addr)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", addr, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "devspace_") || strings.HasPrefix(l, "process_resident_memory_bytes") ||
			strings.HasPrefix(l, "go_goroutines") {
			out = append(out, l)
		}
	}
	return out, nil
}

// localTarget turns a listen address into one to connect to, if it is
// on this host (or container): a wildcard bind (empty, 0.0.0.0, ::) is
// reached on loopback; an IP, or a name that resolves to one (compose's
// devspace-metrics alias), must be loopback or an address of one of this
// host's interfaces. Anything else is refused: the bundle never makes a
// request to another machine.
func localTarget(ctx context.Context, listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("listen address %q: %w", listen, err)
	}
	switch host {
	case "", "0.0.0.0":
		return net.JoinHostPort("127.0.0.1", port), nil
	case "::":
		return net.JoinHostPort("::1", port), nil
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else if ips, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host); err != nil {
		return "", fmt.Errorf("the metrics host %s does not resolve", host)
	}
	local := map[netip.Addr]bool{}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP); ok {
					local[ip.Unmap()] = true
				}
			}
		}
	}
	for _, ip := range ips {
		if ip = ip.Unmap(); ip.IsLoopback() || local[ip] {
			return net.JoinHostPort(ip.String(), port), nil
		}
	}
	return "", fmt.Errorf("the metrics listener %s is not an address of this host", host)
}

func kernelRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// redactor removes what must never leave the machine from a bundle: host
// paths (Projects, state directory, skill directories, home), bearer
// tokens, values of password/token/secret/code/key fields, and anything
// that looks like a credential: 32 or more token characters mixing digits
// and letters (a SHA-256 hash or an HMAC reference looks like one too and
// is removed as well).
type redactor struct {
	paths []pathName
}

type pathName struct{ path, name string }

// redactionPatterns are what the redactor looks for; they are
// compiled on first use, not at package init: every command's launcher is
// this binary too, and runs every package's init before it can start the
// command (docs/performance.md, "Command start").
type redactionPatterns struct{ bearer, credential, secretKey, keyValue *regexp.Regexp }

var redaction = sync.OnceValue(func() redactionPatterns {
	return redactionPatterns{
		bearer:     regexp.MustCompile(`(?i)bearer\s+[^\s"]+`),
		credential: regexp.MustCompile(`[A-Za-z0-9_\-+/=]{32,}`),
		secretKey:  regexp.MustCompile(`(?i)password|token|secret|credential|^code$|key$`),
		keyValue:   regexp.MustCompile(`(?i)((?:password|token|secret|code|key|credential)[A-Za-z_]*"?\s*[:=]\s*"?)[^\s",<][^\s",]*`),
	}
})

func newRedactor(cfg *config.Config, home string) *redactor {
	r := &redactor{}
	for _, p := range cfg.Projects {
		r.paths = append(r.paths, pathName{p.Path, "<project " + p.Label + ">"})
	}
	r.paths = append(r.paths, pathName{cfg.StateDir, "<state dir>"})
	if cfg.ToolsDir != "" {
		r.paths = append(r.paths, pathName{cfg.ToolsDir, "<tools dir>"})
	}
	for _, p := range cfg.SkillPaths {
		r.paths = append(r.paths, pathName{p, "<skill dir>"})
	}
	for _, f := range []string{cfg.OwnerPasswordFile, cfg.MasterKeyFile} {
		if f != "" {
			r.paths = append(r.paths, pathName{f, "<file>"})
		}
	}
	if home != "" && home != "/" {
		r.paths = append(r.paths, pathName{home, "~"})
	}
	// Longest first, so a Project inside the home directory keeps its name.
	sort.Slice(r.paths, func(i, j int) bool { return len(r.paths[i].path) > len(r.paths[j].path) })
	return r
}

// redact returns the JSON document b with every string value redacted
// (and the value of a secret-named field replaced whole); numbers,
// booleans and field names stay, so the result is valid JSON.
func (r *redactor) redact(b []byte) []byte {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return []byte(`{"error":"the bundle could not be redacted"}` + "\n")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r.value("", v)); err != nil {
		return []byte(`{"error":"the bundle could not be redacted"}` + "\n")
	}
	return buf.Bytes()
}

func (r *redactor) value(key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = r.value(k, e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = r.value(key, e)
		}
		return x
	case string:
		if redaction().secretKey.MatchString(key) && !strings.HasPrefix(x, "<") {
			return "<redacted>"
		}
		return r.text(x)
	}
	return v
}

// text redacts one string.
func (r *redactor) text(s string) string {
	for _, p := range r.paths {
		if p.path != "" {
			s = strings.ReplaceAll(s, p.path, p.name)
		}
	}
	s = redaction().bearer.ReplaceAllString(s, "Bearer <redacted>")
	s = redaction().keyValue.ReplaceAllString(s, "${1}<redacted>")
	return redaction().credential.ReplaceAllStringFunc(s, func(m string) string {
		// Random values mix digits and letters; metric and setting names
		// do not.
		if strings.ContainsAny(m, "0123456789") && strings.ContainsFunc(m, func(r rune) bool { return r >= 'A' && r <= 'z' }) {
			return "<redacted>"
		}
		return m
	})
}
