package mcpserver

import (
	"context"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/oauth"
)

type threadControlIn struct {
	Action    string `json:"action" jsonschema:"list, status, activity, archive, complete or close"`
	ThreadRef string `json:"threadRef,omitempty" jsonschema:"the Thread (all actions but list)"`
	IfMatch   *int64 `json:"ifMatch,omitempty" jsonschema:"the Thread's current revision (archive, complete, close)"`
	Since     int64  `json:"since,omitempty" jsonschema:"activity: return entries after this sequence number"`
	WaitMs    int    `json:"waitMs,omitempty" jsonschema:"activity: wait up to this long (at most 20000) for new entries"`
}

func (threadControlIn) schema(s *jsonschema.Schema) {
	s.Properties["action"].Enum = []any{"list", "status", "activity", "archive", "complete", "close"}
	s.Properties["waitMs"].Minimum, s.Properties["waitMs"].Maximum = jsonschema.Ptr(0.0), jsonschema.Ptr(20000.0)
}

func (in *threadControlIn) validate() error {
	switch in.Action {
	case "list":
		return nil
	case "archive", "complete", "close":
		if in.IfMatch == nil {
			return invalidInput("%s needs ifMatch (the Thread's revision)", in.Action)
		}
	}
	if in.ThreadRef == "" {
		return invalidInput("%s needs threadRef", in.Action)
	}
	return nil
}

type threadControlOut struct {
	Action   string                    `json:"action"`
	Threads  []executions.ThreadView   `json:"threads,omitempty"`
	Thread   *executions.ThreadView    `json:"thread,omitempty"`
	Activity []executions.ActivityView `json:"activity,omitempty"`
}

func (o threadControlOut) summary() string {
	switch o.Action {
	case "list":
		return fmt.Sprintf("%d Thread(s).", len(o.Threads))
	case "activity":
		return fmt.Sprintf("%d new activity entries.", len(o.Activity))
	}
	return fmt.Sprintf("Thread is %s.", o.Thread.Status)
}

func registerThreadTools(s *Server) {
	addTool(s, spec{
		name:  "project_thread_control",
		title: "Manage conversation Threads",
		description: "Use when the DevSpace app view lists, inspects, archives, completes or closes your own Threads. " +
			"Avoid calling it from the model: it is for the app UI. " +
			"Returns Threads with status and revision, or their activity entries.",
		scopes:  []string{oauth.ScopeRead},
		hints:   hints{destructive: true},
		appOnly: true,
	}, s.threadControl)
}

func (s *Server) threadControl(ctx context.Context, c *call, in *threadControlIn) (threadControlOut, error) {
	out := threadControlOut{Action: in.Action}
	var err error
	switch in.Action {
	case "list":
		out.Threads, err = s.opts.Bindings.Threads(ctx, c.caller)
		if out.Threads == nil {
			out.Threads = []executions.ThreadView{}
		}
	case "status":
		out.Thread, err = s.opts.Bindings.ThreadStatus(ctx, c.caller, in.ThreadRef)
	case "activity":
		out.Activity, err = s.opts.Bindings.Activity(ctx, c.caller, in.ThreadRef, in.Since, time.Duration(in.WaitMs)*time.Millisecond)
		if out.Activity == nil {
			out.Activity = []executions.ActivityView{}
		}
	case "archive":
		out.Thread, err = s.opts.Bindings.SetThreadStatus(ctx, c.caller, in.ThreadRef, executions.ThreadArchived, *in.IfMatch)
	case "complete":
		out.Thread, err = s.opts.Bindings.SetThreadStatus(ctx, c.caller, in.ThreadRef, executions.ThreadCompleted, *in.IfMatch)
	case "close":
		out.Thread, err = s.opts.Bindings.SetThreadStatus(ctx, c.caller, in.ThreadRef, executions.ThreadClosed, *in.IfMatch)
	}
	return out, err
}
