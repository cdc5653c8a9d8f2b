package mcpserver

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGeneratedSchemas holds schemas.json, which a starting server
// publishes instead of reflecting over the tool types, to exactly what
// the types give today: a field, tag or bound changed without
// regenerating fails here. -update (go generate) rewrites the file.
func TestGeneratedSchemas(t *testing.T) {
	s := &Server{opts: Options{Widgets: "full"},
		mcp: mcp.NewServer(&mcp.Implementation{Name: "devspace"}, nil), schemasFromTypes: true}
	registerTools(s, true, true)
	fromTypes := map[string]generatedSchema{}
	for _, tl := range s.tools {
		fromTypes[tl.spec.name] = generatedSchema{Input: tl.def.InputSchema.(json.RawMessage), Output: tl.def.OutputSchema.(json.RawMessage)}
	}
	if *Update {
		b, err := json.MarshalIndent(fromTypes, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("schemas.json", append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	generated := generatedSchemas()
	for name, want := range fromTypes {
		got, ok := generated[name]
		if !ok {
			t.Errorf("tool %s is not in schemas.json; run go generate ./internal/mcpserver", name)
			continue
		}
		if !bytes.Equal(got.Input, want.Input) || !bytes.Equal(got.Output, want.Output) {
			t.Errorf("schemas.json is stale for %s; run go generate ./internal/mcpserver\n schemas.json: %s %s\n types:        %s %s",
				name, got.Input, got.Output, want.Input, want.Output)
		}
	}
	for name := range generated {
		if _, ok := fromTypes[name]; !ok {
			t.Errorf("schemas.json has %s, which is no tool; run go generate ./internal/mcpserver", name)
		}
	}
	// What a Server publishes is what schemas.json holds.
	served := &Server{opts: s.opts, mcp: mcp.NewServer(&mcp.Implementation{Name: "devspace"}, nil)}
	registerTools(served, true, true)
	if !slices.EqualFunc(served.tools, s.tools, func(a, b tool) bool {
		return a.spec.name == b.spec.name &&
			bytes.Equal(a.def.InputSchema.(json.RawMessage), b.def.InputSchema.(json.RawMessage)) &&
			bytes.Equal(a.def.OutputSchema.(json.RawMessage), b.def.OutputSchema.(json.RawMessage))
	}) {
		t.Error("a Server does not publish the schemas its types give")
	}
}
