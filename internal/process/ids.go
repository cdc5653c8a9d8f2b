package process

import (
	"crypto/rand"
	"encoding/hex"
)

// randomToken returns 2n random hex characters.
func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails on Linux (Go 1.24+ crashes instead)
	return hex.EncodeToString(b)
}

// newID returns a fresh process ID ("proc_" + 24 hex characters).
func newID() string { return "proc_" + randomToken(12) }
