package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/commands"
	"github.com/devspace-dev/devspace/internal/edits"
	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/executions/executionstest"
	"github.com/devspace-dev/devspace/internal/metrics"
	"github.com/devspace-dev/devspace/internal/oauth"
	"github.com/devspace-dev/devspace/internal/process"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/reads"
	"github.com/devspace-dev/devspace/internal/tasks"
)

// The handler tests' harness: a Server built by New with fake services,
// and the official client connected to it over the SDK's in-memory
// transports — no HTTP, no store, no processes. What the HTTP path does
// before a tool runs (bearer verification, then RequireBearerToken putting
// the principal's TokenInfo in the request context, which the streamable
// transport copies to each request's RequestExtra) is done here by the
// server's end of the transport: it puts tokenInfo(p) on every request it
// reads. principalOf then finds the principal where it finds it in
// production; the Server has no seam for it.

// Every scope a grant may hold.
var allScopes = []string{oauth.ScopeRead, oauth.ScopeWrite, oauth.ScopeExecute}

// testPrincipal is a verified grant holding scopes.
func testPrincipal(scopes ...string) *oauth.Principal {
	return &oauth.Principal{GrantID: "grt_handlers", ClientID: "cli_handlers", Scopes: scopes,
		ProjectIDs: []string{"prj_alpha"}, Epoch: 3, GlobalEpoch: 7, ExpiresAt: time.Now().Add(time.Hour)}
}

// conv is the host session of the harness's calls (_meta openai/session).
const conv = "conv-1"

// withPrincipal is the server's end of an in-memory transport whose
// requests carry p's TokenInfo (nil: none, as a request that bypassed
// authentication would).
type withPrincipal struct {
	mcp.Transport
	p *oauth.Principal
}

func (t withPrincipal) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	var info *auth.TokenInfo
	if t.p != nil {
		info = tokenInfo(t.p)
	}
	return principalConn{Connection: c, info: info}, nil
}

type principalConn struct {
	mcp.Connection
	info *auth.TokenInfo
}

func (c principalConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if r, ok := m.(*jsonrpc.Request); ok && c.info != nil {
		r.Extra = &mcp.RequestExtra{TokenInfo: c.info}
	}
	return m, err
}

// handlers is a Server on fake services with a connected client.
type handlers struct {
	t   *testing.T
	srv *Server
	f   *fakeServices
	cs  *mcp.ClientSession
	p   *oauth.Principal
}

// startHandlers builds a Server on f (every tool registered: f runs
// commands and keeps undo snapshots unless the test changed that), with
// opts changed by edit, and connects a client as p.
func startHandlers(t *testing.T, f *fakeServices, p *oauth.Principal, edit ...func(*Options)) *handlers {
	t.Helper()
	m := metrics.New()
	opts := Options{
		OAuth: oauth.New(oauth.Options{Issuer: "https://devspace.test", Resource: "https://devspace.test/mcp",
			Scopes: allScopes, Metrics: m}),
		Bindings: f, Tasks: f, Reads: f, Edits: f, Commands: f,
		IdentityKey: []byte("handler-tests-identity-key"), MaxBodyBytes: 1 << 20, Widgets: "off", Metrics: m,
	}
	for _, e := range edit {
		e(&opts)
	}
	h := &handlers{t: t, srv: New(opts), f: f, p: p}
	h.cs = h.connect(p)
	return h
}

// connect opens another client session on the server, as p.
func (h *handlers) connect(p *oauth.Principal) *mcp.ClientSession {
	h.t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := h.srv.mcp.Connect(ctx, withPrincipal{Transport: st, p: p}, nil)
	if err != nil {
		h.t.Fatalf("server connect: %v", err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "handler-tests", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		h.t.Fatalf("client connect: %v", err)
	}
	h.t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	return cs
}

// caller is the executions.Caller the server makes of h's principal in
// the harness's session conv.
func (h *handlers) caller() executions.Caller {
	p := h.p
	return executions.Caller{GrantID: p.GrantID, ClientID: p.ClientID, Scopes: p.Scopes, ProjectIDs: p.ProjectIDs,
		GrantEpoch: p.Epoch, GlobalEpoch: p.GlobalEpoch,
		SessionRef: h.srv.hmacRef("openai-session", conv), ActorRef: h.srv.hmacRef("client", p.ClientID)}
}

// call calls a tool in the session conv. args is marshalled as is (a
// json.RawMessage goes on the wire unchanged).
func (h *handlers) call(name string, args any) *mcp.CallToolResult {
	h.t.Helper()
	return h.callMeta(h.cs, name, args, mcp.Meta{metaSession: conv})
}

func (h *handlers) callMeta(cs *mcp.ClientSession, name string, args any, meta mcp.Meta) *mcp.CallToolResult {
	h.t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		h.t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// ok checks that res succeeded, that its structuredContent is what the
// tool's published output schema allows and its text is summary, and
// returns the structuredContent.
func (h *handlers) ok(name string, res *mcp.CallToolResult, summary string) map[string]any {
	h.t.Helper()
	if res.IsError {
		h.t.Fatalf("%s failed: %s", name, mustMarshal(h.t, res.StructuredContent))
	}
	sc := decoded(h.t, res.StructuredContent)
	if err := h.outputSchema(name).Validate(sc); err != nil {
		h.t.Errorf("%s: structuredContent does not match the output schema: %v\n%s", name, err, mustMarshal(h.t, sc))
	}
	if got := text(res); got != summary {
		h.t.Errorf("%s: summary %q, want %q", name, got, summary)
	}
	return sc
}

// outputSchema is the resolved output schema tool name publishes.
func (h *handlers) outputSchema(name string) *jsonschema.Resolved {
	h.t.Helper()
	i := slices.IndexFunc(h.srv.tools, func(t tool) bool { return t.spec.name == name })
	if i < 0 {
		h.t.Fatalf("tool %s is not registered", name)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(mustMarshal(h.t, h.srv.tools[i].def.OutputSchema), &s); err != nil {
		h.t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// envelope is the part of structuredContent.error the tests compare.
type envelope struct {
	Code        string `json:"code"`
	Category    string `json:"category"`
	Retryable   bool   `json:"retryable"`
	Phase       string `json:"phase,omitempty"`
	OperationID string `json:"operationId,omitempty"`
}

// failed checks that res is a tool error with a guidance sentence and
// returns its envelope and details.
func failed(t *testing.T, res *mcp.CallToolResult) (envelope, map[string]any) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("succeeded, want an error: %s", mustMarshal(t, res.StructuredContent))
	}
	var sc struct {
		Error struct {
			envelope
			NextActions []string       `json:"nextActions"`
			Details     map[string]any `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal(mustMarshal(t, res.StructuredContent), &sc); err != nil {
		t.Fatal(err)
	}
	if sc.Error.Code == "" || sc.Error.NextActions == nil || text(res) == "" {
		t.Errorf("not an error envelope with a message: %s / %q", mustMarshal(t, res.StructuredContent), text(res))
	}
	return sc.Error.envelope, sc.Error.Details
}

// wantError checks that res is the envelope want.
func wantError(t *testing.T, res *mcp.CallToolResult, want envelope) map[string]any {
	t.Helper()
	got, details := failed(t, res)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("error envelope (-want +got):\n%s", diff)
	}
	return details
}

// invalid is the envelope of arguments refused before any service runs.
var invalid = envelope{Code: "invalid_tool_input", Category: catInput}

// toolMeta is the _meta of res that the tool set: without the SDK's own
// keys (io.modelcontextprotocol/…), nil when nothing is left.
func toolMeta(res *mcp.CallToolResult) mcp.Meta {
	var out mcp.Meta
	for k, v := range res.Meta {
		if !strings.HasPrefix(k, "io.modelcontextprotocol/") {
			if out == nil {
				out = mcp.Meta{}
			}
			out[k] = v
		}
	}
	return out
}

func text(res *mcp.CallToolResult) string {
	if len(res.Content) != 1 {
		return ""
	}
	tc, _ := res.Content[0].(*mcp.TextContent)
	if tc == nil {
		return ""
	}
	return tc.Text
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decoded is v as a client decodes JSON: maps, slices, float64.
func decoded(t *testing.T, v any) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(mustMarshal(t, v), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// ---- fake services ----

// serviceCall is one call a handler made to a service.
type serviceCall struct {
	Method string
	Caller executions.Caller // for the calls that take a caller
	Exec   string            // for the calls that take a handle: its execution
	Args   any               // the rest of the arguments, as the service got them
}

// Answers of the fake's methods that return more than one value.
type (
	opened struct {
		Opened     *executions.Opened
		Checkpoint *executions.Checkpoint
		Replayed   bool
	}
	saved struct {
		Saved    *tasks.Saved
		Replayed bool
	}
)

// Arguments of the fake's methods that take more than one.
type (
	openArgs struct {
		ProjectRef, OperationID string
		Worktree                bool
	}
	resumeArgs   struct{ TaskRef, OperationID string }
	activityArgs struct {
		Ref   string
		Since int64
		Wait  time.Duration
	}
	threadStatusArgs struct {
		Ref, Status string
		IfMatch     int64
	}
	readFilesArgs struct {
		Files          []reads.FileRequest
		AllowSensitive bool
	}
	inspectArgs struct {
		Ops            []reads.Op
		AllowSensitive bool
	}
	changesArgs struct{ Source, Cursor string }
)

type fakeAnswer struct {
	v   any
	err error
}

// fakeServices is every service the tools call. It records each call
// and answers what the test set with answer (zero values otherwise);
// Resolve hands out one handle, whose releases it counts. It runs
// commands (Sandbox: Landlock) and keeps undo snapshots, so every tool is
// registered.
type fakeServices struct {
	t       *testing.T
	handle  *executionstest.Handle
	canRun  bool
	undo    bool
	sandbox process.SandboxState

	mu       sync.Mutex
	calls    []serviceCall
	answers  map[string]fakeAnswer
	resolved int
	released int
}

// execID is the execution of the fake's handle.
const execID = "exe_handlers"

func newFakes(t *testing.T) *fakeServices {
	f := &fakeServices{t: t, canRun: true, undo: true, sandbox: process.SandboxState{Mode: process.SandboxLandlock},
		handle:  executionstest.New(execID, "grt_handlers", project.Root{Ref: "prj_alpha", Label: "alpha"}),
		answers: map[string]fakeAnswer{}}
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.resolved != f.released {
			t.Errorf("%d handles resolved, %d released", f.resolved, f.released)
		}
	})
	return f
}

// answer makes method answer v (its result, or the answer type above)
// and err.
func (f *fakeServices) answer(method string, v any, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[method] = fakeAnswer{v, err}
}

// got returns the calls so far.
func (f *fakeServices) got() []serviceCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// wantCalls checks the calls so far.
func (f *fakeServices) wantCalls(t *testing.T, want ...serviceCall) {
	t.Helper()
	if diff := cmp.Diff(want, f.got()); diff != "" {
		t.Errorf("service calls (-want +got):\n%s", diff)
	}
}

// record notes c and returns method's answer.
func record[T any](f *fakeServices, c serviceCall) (T, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	a := f.answers[c.Method]
	v, ok := a.v.(T)
	if a.v != nil && !ok {
		f.t.Errorf("answer of %s is a %T, want a %T", c.Method, a.v, v)
	}
	return v, a.err
}

func withHandle[T any](f *fakeServices, method string, h executions.Handle, args any) (T, error) {
	return record[T](f, serviceCall{Method: method, Exec: h.ID(), Args: args})
}

func withCaller[T any](f *fakeServices, method string, c executions.Caller, args any) (T, error) {
	return record[T](f, serviceCall{Method: method, Caller: c, Args: args})
}

// countedHandle is the fake's handle, counting its releases.
type countedHandle struct {
	*executionstest.Handle
	f *fakeServices
}

func (h countedHandle) Release() {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	h.f.released++
}

func (f *fakeServices) Resolve(_ context.Context, c executions.Caller) (executions.Handle, error) {
	if _, err := withCaller[any](f, "Resolve", c, nil); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resolved++
	return countedHandle{f.handle, f}, nil
}

func (f *fakeServices) Projects(c executions.Caller) []project.Root {
	v, _ := withCaller[[]project.Root](f, "Projects", c, nil)
	return v
}

func (f *fakeServices) Lock(_ context.Context, c executions.Caller) (func(), error) {
	if _, err := withCaller[any](f, "Lock", c, nil); err != nil {
		return nil, err
	}
	return func() { _, _ = record[any](f, serviceCall{Method: "unlock"}) }, nil
}

func (f *fakeServices) Open(_ context.Context, c executions.Caller, projectRef, operationID string, worktree bool) (*executions.Opened, bool, error) {
	v, err := withCaller[opened](f, "Open", c, openArgs{projectRef, operationID, worktree})
	return v.Opened, v.Replayed, err
}

func (f *fakeServices) Hydrate(_ context.Context, c executions.Caller, cursor string) (*executions.Opened, error) {
	v, err := withCaller[opened](f, "Hydrate", c, cursor)
	return v.Opened, err
}

func (f *fakeServices) Resume(_ context.Context, c executions.Caller, taskRef, operationID string) (*executions.Opened, *executions.Checkpoint, bool, error) {
	v, err := withCaller[opened](f, "Resume", c, resumeArgs{taskRef, operationID})
	return v.Opened, v.Checkpoint, v.Replayed, err
}

func (f *fakeServices) Interrupt(_ context.Context, c executions.Caller) (int, error) {
	return withCaller[int](f, "Interrupt", c, nil)
}

func (f *fakeServices) Threads(_ context.Context, c executions.Caller) ([]executions.ThreadView, error) {
	return withCaller[[]executions.ThreadView](f, "Threads", c, nil)
}

func (f *fakeServices) ThreadStatus(_ context.Context, c executions.Caller, ref string) (*executions.ThreadView, error) {
	return withCaller[*executions.ThreadView](f, "ThreadStatus", c, ref)
}

func (f *fakeServices) Activity(_ context.Context, c executions.Caller, ref string, since int64, wait time.Duration) ([]executions.ActivityView, error) {
	return withCaller[[]executions.ActivityView](f, "Activity", c, activityArgs{ref, since, wait})
}

func (f *fakeServices) SetThreadStatus(_ context.Context, c executions.Caller, ref, status string, ifMatch int64) (*executions.ThreadView, error) {
	return withCaller[*executions.ThreadView](f, "SetThreadStatus", c, threadStatusArgs{ref, status, ifMatch})
}

func (f *fakeServices) Save(_ context.Context, h executions.Handle, r tasks.SaveRequest) (*tasks.Saved, bool, error) {
	v, err := withHandle[saved](f, "Save", h, r)
	return v.Saved, v.Replayed, err
}

func (f *fakeServices) List(_ context.Context, projectRef string) ([]tasks.Summary, error) {
	return record[[]tasks.Summary](f, serviceCall{Method: "List", Args: projectRef})
}

func (f *fakeServices) Counts(_ context.Context, refs []string) (map[string]int, error) {
	return record[map[string]int](f, serviceCall{Method: "Counts", Args: refs})
}

func (f *fakeServices) ReadFiles(_ context.Context, h executions.Handle, reqs []reads.FileRequest, allowSensitive bool) (*reads.Files, error) {
	return withHandle[*reads.Files](f, "ReadFiles", h, readFilesArgs{reqs, allowSensitive})
}

func (f *fakeServices) Inspect(_ context.Context, h executions.Handle, ops []reads.Op, allowSensitive bool) (*reads.Inspection, error) {
	return withHandle[*reads.Inspection](f, "Inspect", h, inspectArgs{ops, allowSensitive})
}

func (f *fakeServices) Skills(_ context.Context, h executions.Handle, req reads.SkillsRequest) (*reads.Skills, error) {
	return withHandle[*reads.Skills](f, "Skills", h, req)
}

func (f *fakeServices) Changes(_ context.Context, h executions.Handle, source, cursor string) (*reads.Changes, error) {
	return withHandle[*reads.Changes](f, "Changes", h, changesArgs{source, cursor})
}

func (f *fakeServices) Apply(_ context.Context, h executions.Handle, req edits.ApplyRequest) (*edits.Applied, error) {
	return withHandle[*edits.Applied](f, "Apply", h, req)
}

func (f *fakeServices) Undo(_ context.Context, h executions.Handle, req edits.UndoRequest) (*edits.Undone, error) {
	return withHandle[*edits.Undone](f, "Undo", h, req)
}

func (f *fakeServices) UndoEnabled() bool { return f.undo }

func (f *fakeServices) CanRun() bool { return f.canRun }

func (f *fakeServices) Sandbox() process.SandboxState { return f.sandbox }

func (f *fakeServices) Start(_ context.Context, h executions.Handle, req commands.StartRequest) (commands.View, error) {
	return withHandle[commands.View](f, "Start", h, req)
}

func (f *fakeServices) WriteStdin(_ context.Context, h executions.Handle, in commands.Input) (commands.View, error) {
	return withHandle[commands.View](f, "WriteStdin", h, in)
}

func (f *fakeServices) Read(_ context.Context, h executions.Handle, req commands.ReadRequest) (*commands.Output, error) {
	return withHandle[*commands.Output](f, "Read", h, req)
}

var _ Bindings = (*fakeServices)(nil)
var _ Tasks = (*fakeServices)(nil)
var _ Reads = (*fakeServices)(nil)
var _ Edits = (*fakeServices)(nil)
var _ Commands = (*fakeServices)(nil)
