package bench

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devspace-dev/devspace/internal/process"
)

var (
	flagSuite     = flag.Bool("suite", false, "run TestSuite (the performance budget)")
	flagLoad      = flag.Bool("load", false, "run TestLoad")
	flagCrash     = flag.Int("crash", 0, "run TestCrash with this many kill points (0 skips it)")
	flagBin       = flag.String("devspace", "", "the devspace binary to drive (default: build ./cmd/devspace into a temp dir)")
	flagResults   = flag.String("results", "results", "directory for the JSON results")
	flagDuration  = flag.Duration("duration", 60*time.Second, "TestLoad: how long the mixed load runs")
	flagSessions  = flag.Int("sessions", 200, "TestLoad: concurrent MCP sessions")
	flagGrants    = flag.Int("grants", 20, "TestLoad: OAuth grants the sessions share")
	flagHostile   = flag.Bool("hostile", false, "TestLoad: one of the grants is hostile (fills its scratch, floods output, holds its slots, forks); the others' load runs without and with it, -duration each")
	flagMaxRatio  = flag.Float64("hostile-max-ratio", 2, "TestLoad -hostile: fail when an ordinary tool's p99 with the hostile grant exceeds this multiple of its p99 without")
	flagRounds    = flag.Int("rounds", 6, "TestSuite: interleaved rounds per side-by-side workload")
	flagSeed      = flag.Int64("seed", 0, "TestCrash: random seed (0: time-based; the seed is logged)")
	flagQuick     = flag.Bool("quick", false, "TestSuite: fewer iterations (a smoke run)")
	flagTreeFiles = flag.Int("treefiles", 100_000, "TestSuite: files in the generated grep tree")
	flagOnly      = flag.String("only", "", "TestSuite: run only the workloads whose name contains one of these comma-separated words (mcp, grep, exec, gobuild, patch, sqlite, startup, rss)")
)

// bareAddrEnv makes the test binary serve the bare go-sdk baseline instead
// of running tests (see serveBare).
const bareAddrEnv = "DEVSPACE_BENCH_BARE_ADDR"

// TestMain also serves as the bare baseline server and, like
// apptest.Main, as a command supervisor (the in-process instances of
// TestMemoryBounds re-execute this binary for that).
func TestMain(m *testing.M) {
	if addr := os.Getenv(bareAddrEnv); addr != "" {
		os.Exit(serveBare(addr))
	}
	if code, ok := process.InternalMain(os.Args[1:]); ok {
		os.Exit(code)
	}
	code := m.Run()
	if buildPath != "" {
		_ = os.RemoveAll(filepath.Dir(buildPath))
	}
	os.Exit(code)
}

// bareBody is what the bare server's read_files returns, and the content
// of the 4 KiB file DevSpace serves: 51 lines of 80 bytes and a short one.
func bareBody() string {
	b := make([]byte, 0, 4096)
	for i := 0; len(b) < 4096; i++ {
		line := fmt.Sprintf("%04d the quick brown fox jumps over the lazy dog; pack my box with five dozen", i)
		line = (line + "                                                                                ")[:79] + "\n"
		b = append(b, line...)
	}
	return string(b[:4096])
}

type bareReadIn struct {
	Files []struct {
		Path string `json:"path"`
	} `json:"files"`
}

type bareFile struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

type bareReadOut struct {
	Files []bareFile `json:"files"`
}

type bareExecIn struct {
	OperationID string   `json:"operationId"`
	Program     string   `json:"program"`
	Args        []string `json:"args,omitempty"`
}

type bareExecOut struct {
	Status   string `json:"status"`
	ExitCode int    `json:"exitCode"`
	Output   string `json:"output"`
}

// bareApplyIn is the floor of apply_patch: the patch text (a unified
// diff, which git apply reads) and the Git repository to apply it in.
type bareApplyIn struct {
	Dir   string `json:"dir"`
	Patch string `json:"patch"`
}

type bareApplyOut struct {
	Output string `json:"output"`
}

type bareListOut struct {
	Projects []bareProject `json:"projects"`
}

type bareProject struct {
	ProjectRef         string `json:"projectRef"`
	Label              string `json:"label"`
	ResumableTaskCount int    `json:"resumableTaskCount"`
}

// serveBare runs a bare go-sdk Streamable HTTP server — no auth, no
// bindings, no strict decoding — whose tools return the same bytes as
// DevSpace's: the /mcp overhead baseline, in its own process like the
// real server. Its git_apply tool is apply_patch's floor: the same
// transport and the go-sdk's own decoding of the 300 KiB request, then
// `git apply` of the patch on stdin.
func serveBare(addr string) int {
	body := bareBody()
	srv := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "read_files"}, func(_ context.Context, _ *mcp.CallToolRequest, in bareReadIn) (*mcp.CallToolResult, bareReadOut, error) {
		out := bareReadOut{}
		for _, f := range in.Files {
			out.Files = append(out.Files, bareFile{Path: f.Path, Content: body})
		}
		return nil, out, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "list_projects"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, bareListOut, error) {
		return nil, bareListOut{Projects: []bareProject{{"prj_a", "alpha", 0}, {"prj_b", "beta", 0}}}, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "exec_command"}, func(ctx context.Context, _ *mcp.CallToolRequest, in bareExecIn) (*mcp.CallToolResult, bareExecOut, error) {
		out, err := exec.CommandContext(ctx, in.Program, in.Args...).CombinedOutput()
		code := 0
		if err != nil {
			code = -1
		}
		return nil, bareExecOut{Status: "exited", ExitCode: code, Output: string(out)}, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "git_apply"}, func(ctx context.Context, _ *mcp.CallToolRequest, in bareApplyIn) (*mcp.CallToolResult, bareApplyOut, error) {
		cmd := exec.CommandContext(ctx, "git", "apply")
		cmd.Dir = in.Dir
		cmd.Stdin = strings.NewReader(in.Patch)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return nil, bareApplyOut{}, fmt.Errorf("git apply: %v: %s", err, out)
		}
		return nil, bareApplyOut{Output: string(out)}, nil
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	if err := http.Serve(ln, mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
