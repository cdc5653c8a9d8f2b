// Package ids makes the random, prefixed identifiers DevSpace hands out
// (grant, client, execution, Thread, Task, process and output references).
package ids

import (
	"crypto/rand"
	"encoding/base64"
)

// New returns prefix + base64url of n random bytes from crypto/rand.
// 16 bytes (128 bits) for identifiers, 32 for secrets.
func New(prefix string, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error()) // never happens on Linux
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}
