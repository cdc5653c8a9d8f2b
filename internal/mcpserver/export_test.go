package mcpserver

import (
	"flag"
	"time"
)

// SetBodyWait shortens how long a request waits for body budget; it
// returns the restore function. Call it before the server starts.
func SetBodyWait(d time.Duration) (restore func()) {
	old := bodyWait
	bodyWait = d
	return func() { bodyWait = old }
}

// Update is the -update flag: rewrite the generated and golden files
// (schemas.json, testdata/tools) instead of comparing with them.
var Update = flag.Bool("update", false, "rewrite schemas.json and the tool schema snapshots in testdata/tools")
