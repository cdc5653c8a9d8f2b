package mcpserver_test

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Typed views of tool results, as a client reads them. Tests decode into
// these instead of digging through map[string]any; a view names only the
// fields tests look at.

// envelope is a failed call's structuredContent.error.
type envelope struct {
	Code        string         `json:"code"`
	Category    string         `json:"category"`
	Retryable   bool           `json:"retryable"`
	NextActions []string       `json:"nextActions"`
	Phase       string         `json:"phase"`
	Details     map[string]any `json:"details"`
}

type itemError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type projectView struct {
	ProjectRef         string `json:"projectRef"`
	Label              string `json:"label"`
	ResumableTaskCount int    `json:"resumableTaskCount"`
}

type listProjectsView struct {
	Projects []projectView `json:"projects"`
}

type instructionFile struct {
	Path    string `json:"path"`
	Trust   string `json:"trust"`
	Content string `json:"content"`
}

type fileItem struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	Version struct {
		ContentHash string `json:"contentHash"`
	} `json:"version"`
	Error *itemError `json:"error"`
}

type readFilesView struct {
	Files             []fileItem        `json:"files"`
	InstructionsDelta []instructionFile `json:"instructionsDelta"`
}

type skillView struct {
	SkillID string `json:"skillId"`
	Trust   string `json:"trust"`
}

type skillsView struct {
	Skills []skillView `json:"skills"`
	Loaded *struct {
		Body string `json:"body"`
	} `json:"loaded"`
}

type threadView struct {
	ThreadRef string `json:"threadRef"`
	Status    string `json:"status"`
	Revision  int64  `json:"revision"`
}

type activityView struct {
	Seq  int64  `json:"seq"`
	Kind string `json:"kind"`
}

type threadControlView struct {
	Threads  []threadView   `json:"threads"`
	Thread   *threadView    `json:"thread"`
	Activity []activityView `json:"activity"`
}

// call invokes a tool with host metadata and decodes a successful result
// into Out; a failed call returns its envelope (and a zero Out).
func call[Out any](t *testing.T, cs *mcp.ClientSession, name string, args, meta map[string]any) (Out, *envelope) {
	t.Helper()
	_, res := callTool(t, cs, name, args, meta)
	var out Out
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatalf("%s: structured content: %v", name, err)
	}
	if res.IsError {
		var e struct {
			Error envelope `json:"error"`
		}
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("%s: error envelope: %v", name, err)
		}
		return out, &e.Error
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: result %s does not decode into %T: %v", name, b, out, err)
	}
	return out, nil
}

// mustCall is call for a call that must succeed.
func mustCall[Out any](t *testing.T, cs *mcp.ClientSession, name string, args, meta map[string]any) Out {
	t.Helper()
	out, e := call[Out](t, cs, name, args, meta)
	if e != nil {
		t.Fatalf("%s %v: %+v", name, args, *e)
	}
	return out
}
