// Package bench holds DevSpace's performance budget and reliability proof
// (issue 8). Everything lives in its tests, which drive the real
// `devspace serve` binary over loopback with a real OAuth flow
// (internal/apptest) and go-sdk MCP clients:
//
//   - TestSuite (make bench): side-by-side workloads against their
//     baselines — /mcp overhead against a bare go-sdk server, inspect grep
//     against ripgrep, exec_command against os/exec, apply_patch against
//     git apply and against its floor (a bare go-sdk tool running git
//     apply on the same patch), the operation store against a raw SQLite
//     insert — plus startup time, idle RSS, RSS under load and
//     list_projects throughput next to the TypeScript reference figures.
//     It prints a table and writes JSON under bench/results/.
//   - TestLoad (make load): 200 concurrent sessions over 20 grants doing
//     mixed read/inspect/exec/patch for a bounded time, then checks that
//     goroutines, open descriptors and running processes return to their
//     baseline. With -hostile (make load LOAD_HOSTILE=1) one grant fills
//     its scratch, floods output, holds its command slots and forks
//     (issue 31), and the others' load runs without and with it in one
//     process: their p99 per tool, its ratio and their errors.
//   - TestCrash (make crash): SIGKILLs the server at random points during
//     apply_patch, exec_command, save_progress and token refresh, restarts
//     it, and checks files, operation records, the database and processes.
//   - TestMemoryBounds: heap growth of the big requests (a 1 GiB file, a
//     million matching lines, an output flood, a 4 MiB patch) through the
//     real tool path of an in-process instance. It runs with make test.
//
// The long harnesses skip unless their flag is set (-suite, -load, -crash),
// so `go test ./...` only compiles them. The Makefile targets pass the
// flags; see `make help`.
package bench
