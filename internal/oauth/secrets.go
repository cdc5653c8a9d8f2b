package oauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"

	"github.com/devspace-dev/devspace/internal/ids"
)

// Credential prefixes make leaked values recognisable to secret scanners.
const (
	prefixCode    = "dsc_"
	prefixAccess  = "dsa_"
	prefixRefresh = "dsr_"
	prefixSecret  = "dss_"
	prefixGrant   = "grt_"
	prefixClient  = "dcl_"
)

// randomValue returns prefix + base64url(32 bytes from crypto/rand): 256
// bits.
func randomValue(prefix string) string { return ids.New(prefix, 32) }

// randomID returns a shorter random identifier (128 bits) for rows that are
// not secrets by themselves.
func randomID(prefix string) string { return ids.New(prefix, 16) }

// hashSecret returns the hex SHA-256 of a credential; only this is stored.
func hashSecret(v string) string {
	sum := sha256.Sum256([]byte(v))
	return hex.EncodeToString(sum[:])
}

// secretMatches compares a presented secret with a stored hash in constant
// time.
func secretMatches(presented, storedHash string) bool {
	if storedHash == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(hashSecret(presented)), []byte(storedHash)) == 1
}
