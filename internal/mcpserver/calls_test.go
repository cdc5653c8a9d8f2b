package mcpserver

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/activity"
	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/metrics"
	"github.com/devspace-dev/devspace/internal/oauth"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/reads"
	"github.com/devspace-dev/devspace/internal/rootlock"
)

// observed is an Options.Calls that keeps what it is told.
type observed struct {
	mu    sync.Mutex
	calls []activity.Call
}

func (o *observed) Record(c activity.Call) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, c)
}

// TestCallsObserved: Options.Calls hears of every tool call once, failed
// ones too, with the grant, the client's name, the Project the call
// worked on and the envelope's code.
func TestCallsObserved(t *testing.T) {
	t.Parallel()
	f := newFakes(t)
	f.answer("Projects", []project.Root{{Ref: "prj_alpha", Label: "alpha"}}, nil)
	f.answer("ReadFiles", &reads.Files{}, nil)
	obs := &observed{}
	p := testPrincipal(oauth.ScopeRead)
	p.ClientName = "Client <i>name</i>"
	h := startHandlers(t, f, p, func(o *Options) { o.Calls = obs })

	h.call("list_projects", map[string]any{})
	h.call("list_projects", map[string]any{"projectRef": "prj_alpha"})
	h.call("read_files", map[string]any{"files": []any{map[string]any{"path": "a.txt"}}})
	f.answer("ReadFiles", nil, rootlock.ErrBusy)
	h.call("read_files", map[string]any{"files": []any{map[string]any{"path": "a.txt"}}})
	h.call("apply_patch", map[string]any{"operationId": "p", "patch": "x", "ifMatch": nil}) // project:write missing
	h.call("inspect", map[string]any{"bogus": 1})

	type seen struct{ Tool, Grant, Client, Project, Code string }
	want := []seen{
		{"list_projects", "grt_handlers", "Client <i>name</i>", "", ""},
		{"list_projects", "grt_handlers", "Client <i>name</i>", "prj_alpha", ""},
		{"read_files", "grt_handlers", "Client <i>name</i>", "prj_alpha", ""},
		{"read_files", "grt_handlers", "Client <i>name</i>", "prj_alpha", "project_busy"},
		{"apply_patch", "grt_handlers", "Client <i>name</i>", "", "insufficient_scope"},
		{"inspect", "grt_handlers", "Client <i>name</i>", "", "invalid_tool_input"},
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	var got []seen
	for _, c := range obs.calls {
		got = append(got, seen{c.Tool, c.GrantID, c.Client, c.Project, c.Code})
		if c.Duration <= 0 || time.Since(c.At) > time.Minute {
			t.Errorf("%s: duration %v, at %v", c.Tool, c.Duration, c.At)
		}
	}
	diff(t, "observed calls", want, got)
}

// projectsOnly is what list_projects needs of the services; every other
// method is the nil interface's (never called).
type projectsOnly struct {
	Bindings
	Tasks
}

func (projectsOnly) Projects(executions.Caller) []project.Root {
	return []project.Root{{Ref: "prj_a", Label: "alpha"}, {Ref: "prj_b", Label: "beta"}}
}

func (projectsOnly) Counts(context.Context, []string) (map[string]int, error) {
	return map[string]int{}, nil
}

// BenchmarkCallsObserver is one list_projects through the server over
// in-memory transports, without an observer and with the activity
// recorder (two subscribers reading): what recording a call costs on the
// hot path. Run the two side by side with -count to compare.
func BenchmarkCallsObserver(b *testing.B) {
	for _, tt := range []struct {
		name  string
		calls func(ctx context.Context) Calls
	}{
		{"none", func(context.Context) Calls { return nil }},
		{"recorder", func(ctx context.Context) Calls {
			r := activity.New(activity.Options{})
			for range 2 {
				ch := r.Subscribe(ctx)
				go func() {
					for range ch {
					}
				}()
			}
			return r
		}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			m := metrics.New()
			fake := projectsOnly{}
			opts := Options{OAuth: oauth.New(oauth.Options{Issuer: "https://devspace.test", Resource: "https://devspace.test/mcp",
				Scopes: allScopes, Metrics: m}), Bindings: fake, Tasks: fake,
				IdentityKey: []byte("bench-identity-key"), MaxBodyBytes: 1 << 20, Widgets: "off", Metrics: m}
			if c := tt.calls(ctx); c != nil {
				opts.Calls = c
			}
			srv := New(opts)
			ct, st := mcp.NewInMemoryTransports()
			ss, err := srv.mcp.Connect(ctx, withPrincipal{Transport: st, p: testPrincipal(oauth.ScopeRead)}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer ss.Close()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			params := &mcp.CallToolParams{Name: "list_projects", Arguments: map[string]any{}}
			b.ReportAllocs()
			for b.Loop() {
				res, err := cs.CallTool(ctx, params)
				if err != nil || res.IsError {
					b.Fatalf("%v %+v", err, res)
				}
			}
		})
	}
}
