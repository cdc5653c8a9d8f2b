package mcpserver

import "time"

// SetBodyWait shortens how long a request waits for body budget; it
// returns the restore function. Call it before the server starts.
func SetBodyWait(d time.Duration) (restore func()) {
	old := bodyWait
	bodyWait = d
	return func() { bodyWait = old }
}
