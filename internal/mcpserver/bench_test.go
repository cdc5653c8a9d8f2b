package mcpserver_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/testutil"
)

type bareIn struct{}

type bareProject struct {
	ProjectRef         string `json:"projectRef"`
	Label              string `json:"label"`
	ResumableTaskCount int    `json:"resumableTaskCount"`
}

type bareOut struct {
	Projects []bareProject `json:"projects"`
}

// BenchmarkListProjects compares one authenticated list_projects round trip
// through DevSpace (bearer verification, strict decoding, scope filter,
// grant's Projects) with the same call on a bare go-sdk server without auth
// or bindings, same transport and client, in one run.
func BenchmarkListProjects(b *testing.B) {
	ctx := context.Background()
	run := func(b *testing.B, cs *mcp.ClientSession) {
		params := &mcp.CallToolParams{Name: "list_projects", Arguments: map[string]any{}}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			res, err := cs.CallTool(ctx, params)
			if err != nil || res.IsError {
				b.Fatalf("%v %v", err, res)
			}
		}
	}
	b.Run("devspace", func(b *testing.B) {
		env := apptest.Start(b, apptest.Options{})
		_, tok := env.Grant(apptest.Approval{Projects: []string{"alpha", "beta"}})
		client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: env.URL + "/mcp", DisableStandaloneSSE: true,
			HTTPClient: &http.Client{Transport: testutil.Bearer(tok.AccessToken, http.DefaultTransport)}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		run(b, cs)
	})
	b.Run("bare-go-sdk", func(b *testing.B) {
		srv := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
		mcp.AddTool(srv, &mcp.Tool{Name: "list_projects"}, func(context.Context, *mcp.CallToolRequest, bareIn) (*mcp.CallToolResult, bareOut, error) {
			return nil, bareOut{Projects: []bareProject{{"prj_a", "alpha", 0}, {"prj_b", "beta", 0}}}, nil
		})
		hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
		defer hs.Close()
		client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		run(b, cs)
	})
}

// BenchmarkReadFiles compares read_files through the whole stack (HTTP,
// bearer check, strict decoding, binding re-check, root lock, stable read
// with hashing, instruction delta) with reading the same file directly in
// Go, side by side.
func BenchmarkReadFiles(b *testing.B) {
	ctx := context.Background()
	env := apptest.Start(b, apptest.Options{Projects: []string{"alpha"}})
	for _, size := range []int{4 << 10, 1 << 20} {
		name := fmt.Sprintf("%dKiB", size>>10)
		line := strings.Repeat("x", 63) + "\n"
		os.WriteFile(filepath.Join(env.Roots["alpha"], name+".txt"), []byte(strings.Repeat(line, size/64)), 0o644)
	}
	_, tok := env.Grant(apptest.Approval{})
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: env.URL + "/mcp", DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: testutil.Bearer(tok.AccessToken, http.DefaultTransport)}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	meta := mcp.Meta{"openai/session": "bench"}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "project_control", Arguments: map[string]any{"action": "open", "operationId": "o"}, Meta: meta}); err != nil {
		b.Fatal(err)
	}
	for _, size := range []int{4 << 10, 1 << 20} {
		name := fmt.Sprintf("%dKiB", size>>10)
		b.Run(name+"/devspace", func(b *testing.B) {
			params := &mcp.CallToolParams{Name: "read_files", Meta: meta,
				Arguments: map[string]any{"files": []any{map[string]any{"path": name + ".txt", "limit": 2000}}}}
			for b.Loop() {
				res, err := cs.CallTool(ctx, params)
				if err != nil || res.IsError {
					b.Fatalf("%v %v", err, res)
				}
			}
		})
		b.Run(name+"/os.ReadFile", func(b *testing.B) {
			path := filepath.Join(env.Roots["alpha"], name+".txt")
			for b.Loop() {
				if _, err := os.ReadFile(path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
