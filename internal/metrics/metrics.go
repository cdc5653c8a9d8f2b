// Package metrics builds DevSpace's single Prometheus registry and the
// collectors components share. Labels are bounded: never a path, a project
// label, a grant ID or a token.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/devspace-dev/devspace/internal/buildinfo"
)

// Namespace prefixes every metric.
const Namespace = "devspace"

// Metrics holds the registry and the collectors. Build one with New in app
// (or in a test); it is safe for concurrent use.
type Metrics struct {
	Registry *prometheus.Registry

	HTTPRequests        *prometheus.CounterVec   // route, code
	HTTPRequestDuration *prometheus.HistogramVec // route
	ToolCalls           *prometheus.CounterVec   // tool, outcome
	ToolCallDuration    *prometheus.HistogramVec // tool
	OAuthTokensIssued   *prometheus.CounterVec   // grant_type
	OAuthRefreshReplays prometheus.Counter
	OAuthVerifications  *prometheus.CounterVec // source: cache, store
	PathDenials         *prometheus.CounterVec // reason
	PatchBytes          prometheus.Counter
	ProcessKills        *prometheus.CounterVec // reason
	OrphansKilled       prometheus.Counter
	ProcessesRunning    prometheus.Gauge
	DiskFree            *prometheus.GaugeVec // role: state, scratch, tools, project
	ScratchLargest      prometheus.Gauge
	OutputTruncations   *prometheus.CounterVec // reason
	OutputRetirements   *prometheus.CounterVec // reason
}

// ProcessKilled, OrphansKilled and RunningChanged implement process.Metrics.
func (m *Metrics) ProcessKilled(reason string) { m.ProcessKills.WithLabelValues(reason).Inc() }

// OrphansKilledAdd counts descendants killed after re-parenting.
func (m *Metrics) OrphansKilledAdd(n int) { m.OrphansKilled.Add(float64(n)) }

// RunningChanged sets processes_running.
func (m *Metrics) RunningChanged(n int) { m.ProcessesRunning.Set(float64(n)) }

// OutputTruncated counts a command whose output stopped reaching its
// spool file (output_truncated_total; process.Metrics).
func (m *Metrics) OutputTruncated(reason string) { m.OutputTruncations.WithLabelValues(reason).Inc() }

// OutputsRetired counts retired command outputs (output_retired_total;
// retention.Metrics).
func (m *Metrics) OutputsRetired(reason string, n int) {
	m.OutputRetirements.WithLabelValues(reason).Add(float64(n))
}

// New creates a registry with Go, process and build-info collectors and the
// DevSpace metrics registered.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	bi := buildinfo.Get()
	m := &Metrics{
		Registry: reg,
		HTTPRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "http_requests_total", Help: "HTTP requests by route template and status code.",
		}, []string{"route", "code"}),
		HTTPRequestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "http_request_duration_seconds", Help: "HTTP request latency by route template.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route"}),
		ToolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "tool_calls_total", Help: "MCP tool calls by tool and outcome.",
		}, []string{"tool", "outcome"}),
		ToolCallDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "tool_call_duration_seconds", Help: "MCP tool call latency by tool.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"tool"}),
		OAuthTokensIssued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "oauth_tokens_issued_total", Help: "Access tokens issued by grant type.",
		}, []string{"grant_type"}),
		OAuthRefreshReplays: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace, Name: "oauth_refresh_replays_total", Help: "Consumed refresh tokens presented again (each revokes its grant).",
		}),
		OAuthVerifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "oauth_verifications_total",
			Help: "Bearer token verifications by where they were answered: cache (a token verified before, nothing written since) or store.",
		}, []string{"source"}),
		ProcessKills: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "process_kills_total", Help: "Command trees killed, by reason.",
		}, []string{"reason"}),
		OrphansKilled: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace, Name: "process_orphans_killed_total", Help: "Re-parented descendants killed with their command's tree.",
		}),
		ProcessesRunning: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "processes_running", Help: "Command trees alive.",
		}),
		OutputTruncations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "output_truncated_total",
			Help: "Commands whose output stopped reaching the spool, by the bound that stopped it: command_cap, grant_share, spool_full, file_error.",
		}, []string{"reason"}),
		OutputRetirements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "output_retired_total",
			Help: "Retained command outputs retired, by reason: expired, execution_closed, record_bound, grant_share, spool_full.",
		}, []string{"reason"}),
		PatchBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace, Name: "patch_bytes_total", Help: "Bytes written by apply_patch.",
		}),
		DiskFree: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "disk_free_bytes",
			Help: "Free bytes on the filesystems the disk guard watches, by role (project: the least free Project's); below DEVSPACE_DISK_RESERVE commands writing there are stopped.",
		}, []string{"role"}),
		ScratchLargest: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "scratch_largest_bytes", Help: "The largest scratch directory of an execution at its last measure (bounded by DEVSPACE_SCRATCH_MAX, as are a grant's together).",
		}),
		PathDenials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "path_denials_total", Help: "Tool paths refused by containment, by reason.",
		}, []string{"reason"}),
	}
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{Namespace: Namespace}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "build_info", Help: "Build information; always 1.",
			ConstLabels: prometheus.Labels{"version": bi.Version, "goversion": bi.GoVersion},
		}, func() float64 { return 1 }),
		m.HTTPRequests, m.HTTPRequestDuration, m.ToolCalls, m.ToolCallDuration,
		m.OAuthTokensIssued, m.OAuthRefreshReplays, m.OAuthVerifications, m.PathDenials, m.PatchBytes,
		m.ProcessKills, m.OrphansKilled, m.ProcessesRunning, m.DiskFree, m.ScratchLargest,
		m.OutputTruncations, m.OutputRetirements,
	)
	return m
}

// GaugeFunc registers a gauge whose value is read at scrape time (for
// example grants_active from the store). fn must be cheap and safe to call
// concurrently.
func (m *Metrics) GaugeFunc(name, help string, fn func() float64) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: Namespace, Name: name, Help: help,
	}, fn))
}

// Constant registers a gauge of a value fixed at start, with labels from a
// small fixed set (e.g. command_limit{resource,scope}); the same name may
// be registered once per set of label values.
func (m *Metrics) Constant(name, help string, labels map[string]string, v float64) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: Namespace, Name: name, Help: help, ConstLabels: labels,
	}, func() float64 { return v }))
}

// Info registers a constant gauge of value 1 whose labels carry
// information (like build_info), e.g. command_sandbox_info{mode,abi,…}.
// Label values must come from a small fixed set.
func (m *Metrics) Info(name, help string, labels map[string]string) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: Namespace, Name: name, Help: help, ConstLabels: labels,
	}, func() float64 { return 1 }))
}
