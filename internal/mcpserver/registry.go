package mcpserver

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/activity"
	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/oauth"
	"github.com/devspace-dev/devspace/internal/strictjson"
)

// hints are a tool's annotations (docs/design.md §7: ro/destr/idem/open).
type hints struct{ readOnly, destructive, idempotent, openWorld bool }

// spec describes one tool. Handlers only bind, check scope, resolve the
// execution, call a domain service and render.
type spec struct {
	name, title, description string
	scopes                   []string // all required to call (and to see) the tool
	hints                    hints
	appOnly                  bool // hidden from the model (_meta.ui.visibility ["app"])
	widget                   bool // linked to the Project App widget (DEVSPACE_WIDGETS)
}

// call is what a handler gets besides its typed input.
type call struct {
	principal *oauth.Principal
	caller    executions.Caller // SessionRef may be "" (no host session)
	req       *mcp.CallToolRequest
	project   string // the projectRef the call worked on, once known (Options.Calls)
}

// requireSession fails closed when the call carries no session identity.
func (c *call) requireSession() error {
	if c.caller.SessionRef == "" {
		return toolErr("session_identity_required",
			"This call carries no session identity: send _meta[\"openai/session\"] or use a stateful MCP session.")
	}
	return nil
}

// summarizer gives the one-sentence content of a successful result.
type summarizer interface{ summary() string }

// tool is a registered tool: its MCP description and required scopes.
type tool struct {
	spec spec
	def  *mcp.Tool
}

// toolSchemas are a tool's published input and output schemas, as JSON,
// and the strict scan compiled from the input one. They depend on the
// tool's types only, so each is made once per process and shared,
// read-only, by every Server (Prepare makes them ahead). Published as
// JSON, a schema is encoded once, not at every tools/list, and the SDK's
// per-call look at it (Mcp-Param headers, protocol 2026-07-28) decodes
// bytes instead of re-encoding a jsonschema.Schema.
type toolSchemas struct {
	in, out json.RawMessage
	strict  *strictjson.Schema
}

// schemasJSON is every tool's input and output schema as buildSchemas
// makes them from the types, generated ahead so that a starting server
// does not reflect over the types (~26 ms of CPU, on the way to ready).
// TestGeneratedSchemas fails when it differs from what the types give;
// go generate (or that test with -update) rewrites it.
//
//go:generate go test -run ^TestGeneratedSchemas$ -update .
//go:embed schemas.json
var schemasJSON []byte

// generatedSchemas is schemasJSON by tool name, compact.
var generatedSchemas = sync.OnceValue(func() map[string]generatedSchema {
	var all map[string]generatedSchema
	if err := json.Unmarshal(schemasJSON, &all); err != nil {
		panic(fmt.Sprintf("schemas.json: %v", err))
	}
	for name, g := range all {
		all[name] = generatedSchema{Input: compactJSON(name, g.Input), Output: compactJSON(name, g.Output)}
	}
	return all
})

// generatedSchema is one tool's entry in schemas.json.
type generatedSchema struct {
	Input  json.RawMessage `json:"input"`
	Output json.RawMessage `json:"output"`
}

func compactJSON(name string, raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		panic(fmt.Sprintf("schemas.json, tool %s: %v", name, err))
	}
	return b.Bytes()
}

// builtSchemas holds a *schemaEntry per tool name.
var builtSchemas sync.Map

type schemaEntry struct {
	once sync.Once
	toolSchemas
}

// schemasFor returns the schemas of the tool name, whose input is In and
// output Out: from schemas.json, or built from the types for a tool it
// lacks. They are made on first use; a caller that arrives while another
// makes them waits for it.
func schemasFor[In, Out any](name string) toolSchemas {
	v, _ := builtSchemas.LoadOrStore(name, &schemaEntry{})
	e := v.(*schemaEntry)
	e.once.Do(func() {
		g, ok := generatedSchemas()[name]
		if !ok {
			e.toolSchemas = buildSchemas[In, Out](name)
			return
		}
		strict, err := strictjson.Compile(g.Input)
		if err != nil {
			panic(fmt.Sprintf("tool %s input schema: %v", name, err))
		}
		e.toolSchemas = toolSchemas{in: g.Input, out: g.Output, strict: strict}
	})
	return e.toolSchemas
}

func buildSchemas[In, Out any](name string) toolSchemas {
	inSchema, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("tool %s input schema: %v", name, err))
	}
	outSchema, err := jsonschema.For[Out](nil)
	if err != nil {
		panic(fmt.Sprintf("tool %s output schema: %v", name, err))
	}
	var zero In
	if h, ok := any(zero).(interface{ schema(*jsonschema.Schema) }); ok {
		h.schema(inSchema)
	}
	// Arguments are held to the schema the tool publishes, in the one
	// strict scan (docs/decisions.md: validate once).
	in, err := json.Marshal(inSchema)
	if err != nil {
		panic(fmt.Sprintf("tool %s input schema: %v", name, err))
	}
	out, err := json.Marshal(outSchema)
	if err != nil {
		panic(fmt.Sprintf("tool %s output schema: %v", name, err))
	}
	strict, err := strictjson.Compile(in)
	if err != nil {
		panic(fmt.Sprintf("tool %s input schema: %v", name, err))
	}
	return toolSchemas{in: in, out: out, strict: strict}
}

// addTool registers a typed tool with strict argument decoding.
func addTool[In any, Out summarizer](s *Server, sp spec, fn func(ctx context.Context, c *call, in *In) (Out, error)) {
	var schemas toolSchemas
	if s.schemasFromTypes {
		schemas = buildSchemas[In, Out](sp.name)
	} else {
		schemas = schemasFor[In, Out](sp.name)
	}
	strict := schemas.strict
	destructive, openWorld := sp.hints.destructive, sp.hints.openWorld
	def := &mcp.Tool{
		Name: sp.name, Title: sp.title, Description: sp.description,
		InputSchema: schemas.in, OutputSchema: schemas.out,
		Annotations: &mcp.ToolAnnotations{Title: sp.title, ReadOnlyHint: sp.hints.readOnly,
			DestructiveHint: &destructive, IdempotentHint: sp.hints.idempotent, OpenWorldHint: &openWorld},
		Meta: mcp.Meta{"securitySchemes": []map[string]any{{"type": "oauth2", "scopes": sp.scopes}}},
	}
	if sp.widget {
		for k, v := range s.widgetMeta() {
			def.Meta[k] = v
		}
	}
	if sp.appOnly {
		def.Meta["ui"] = map[string]any{"visibility": []string{"app"}}
		def.Meta["openai/visibility"] = "private"
		def.Meta["openai/widgetAccessible"] = true
	}
	s.tools = append(s.tools, tool{spec: sp, def: def})
	s.mcp.AddTool(def, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		start := time.Now()
		res, c := s.invoke(ctx, sp, req, strict, func(ctx context.Context, c *call, raw json.RawMessage) (summarizer, error) {
			var in In
			if len(raw) > 0 && string(raw) != "null" {
				if err := json.Unmarshal(raw, &in); err != nil {
					return nil, invalidInput("the arguments do not match the tool's input schema: %s", jsonProblem(err))
				}
			}
			if v, ok := any(&in).(interface{ validate() error }); ok {
				if err := v.validate(); err != nil {
					return nil, err
				}
			}
			return fn(ctx, c, &in)
		})
		outcome, code := "ok", ""
		if res.IsError {
			outcome, code = "error", "internal_error"
			if m, ok := res.StructuredContent.(map[string]any); ok {
				if te, ok := m["error"].(*ToolError); ok {
					outcome, code = te.Category, te.Code
				}
			}
		}
		elapsed := time.Since(start)
		s.opts.Metrics.ToolCalls.WithLabelValues(sp.name, outcome).Inc()
		s.opts.Metrics.ToolCallDuration.WithLabelValues(sp.name).Observe(elapsed.Seconds())
		if s.opts.Calls != nil {
			s.observe(activity.Call{At: start, Tool: sp.name, Duration: elapsed, Code: code}, req, c)
		}
		return res, nil
	})
}

// observe tells Options.Calls about a call that ended, adding who made it
// and the Project it worked on: c is nil when it failed before its
// identity was known.
func (s *Server) observe(ac activity.Call, req *mcp.CallToolRequest, c *call) {
	if p := principalOf(req); p != nil {
		ac.GrantID, ac.Client = p.GrantID, p.ClientName
	}
	if c != nil {
		ac.Project = c.project
	}
	s.opts.Calls.Record(ac)
}

// invoke runs the parts every tool shares: principal, scope, strict
// decoding, identity, error mapping and rendering. It returns the result
// and the call it ran, nil when it failed before that.
func (s *Server) invoke(ctx context.Context, sp spec, req *mcp.CallToolRequest, strict *strictjson.Schema,
	run func(ctx context.Context, c *call, raw json.RawMessage) (summarizer, error)) (*mcp.CallToolResult, *call) {
	p := principalOf(req)
	if p == nil {
		te := mapError(errors.New("no principal on an authenticated request"))
		s.logFailure(ctx, sp.name, te)
		return errorResult(te), nil
	}
	for _, need := range sp.scopes {
		if !p.HasScope(need) {
			te := toolErr("insufficient_scope",
				"This connection was not granted "+need+"; the owner can approve it by reconnecting the app.", "reconnect the app to grant "+need)
			te.wwwAuth = s.opts.OAuth.Challenge("insufficient_scope", "this tool needs "+need, sp.scopes)
			te.Details = map[string]any{"requiredScopes": sp.scopes}
			return errorResult(te), nil
		}
	}
	raw := req.Params.Arguments
	if err := strictjson.Check(raw, strict, strictjson.Options{MaxBytes: int(s.opts.MaxBodyBytes)}); err != nil {
		return errorResult(invalidInput("%v", err)), nil
	}
	sessionRef, actorRef := s.identity(req, p.ClientID)
	c := &call{principal: p, req: req, caller: executions.Caller{
		GrantID: p.GrantID, ClientID: p.ClientID, Scopes: p.Scopes, ProjectIDs: p.ProjectIDs,
		GrantEpoch: p.Epoch, GlobalEpoch: p.GlobalEpoch, SessionRef: sessionRef, ActorRef: actorRef}}
	out, err := run(ctx, c, raw)
	if err != nil {
		te := mapError(err)
		s.logFailure(ctx, sp.name, te)
		if te.Code == "path_denied" {
			reason, _ := te.Details["reason"].(string)
			s.opts.Metrics.PathDenials.WithLabelValues(reason).Inc()
		}
		return errorResult(te), c
	}
	res := &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: out.summary()}},
		StructuredContent: out,
	}
	if m, ok := out.(interface{ resultMeta() mcp.Meta }); ok {
		res.Meta = m.resultMeta()
	}
	return res, c
}

// logFailure logs what a client is not shown: the cause of an internal
// error (a cancelled call's at info: the client went away), and of an
// operation whose outcome is unknown.
func (s *Server) logFailure(ctx context.Context, tool string, te *ToolError) {
	cause := error(te)
	if te.cause != nil {
		cause = te.cause
	}
	switch {
	case te.Code == "internal_error" && errors.Is(cause, context.Canceled):
		s.log.InfoContext(ctx, "tool call cancelled", "tool", tool, "err", cause)
	case te.Code == "internal_error":
		s.log.ErrorContext(ctx, "tool failed", "tool", tool, "err", cause)
	case te.Phase == "outcome_unknown":
		s.log.WarnContext(ctx, "tool outcome unknown", "tool", tool, "code", te.Code, "err", cause)
	}
}

// jsonProblem describes a decoding error without echoing input.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %q must be %s", te.Field, te.Type.Kind())
	}
	return "malformed JSON"
}

// visibleTools returns the tools a principal may see: those whose scopes
// it holds. App-only tools are listed too, marked with
// _meta.ui.visibility ["app"] so MCP Apps hosts keep them from the model
// while their widgets can still call them.
func (s *Server) visibleTools(p *oauth.Principal) map[string]bool {
	out := map[string]bool{}
	for _, t := range s.tools {
		ok := true
		for _, need := range t.spec.scopes {
			if !p.HasScope(need) {
				ok = false
			}
		}
		if ok {
			out[t.spec.name] = true
		}
	}
	return out
}

// filterToolsMiddleware trims tools/list to what the caller's grant allows.
func (s *Server) filterToolsMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || method != "tools/list" {
			return res, err
		}
		list, ok := res.(*mcp.ListToolsResult)
		if !ok {
			return res, nil
		}
		var p *oauth.Principal
		if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
			p, _ = extra.TokenInfo.Extra[principalKey].(*oauth.Principal)
		}
		if p == nil {
			return &mcp.ListToolsResult{Tools: []*mcp.Tool{}}, nil
		}
		visible := s.visibleTools(p)
		filtered := *list
		filtered.Tools = slices.DeleteFunc(slices.Clone(list.Tools), func(t *mcp.Tool) bool { return !visible[t.Name] })
		return &filtered, nil
	}
}
