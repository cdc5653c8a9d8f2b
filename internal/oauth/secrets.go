package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"

	oauth2 "github.com/go-oauth2/oauth2/v4"
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
// bits, replacing the library's UUID-based generators (~122 bits).
func randomValue(prefix string) string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error()) // never happens on Linux
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// randomID returns a shorter random identifier (128 bits) for rows that are
// not secrets by themselves.
func randomID(prefix string) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b[:])
}

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

// codeGenerator implements oauth2.AuthorizeGenerate.
type codeGenerator struct{}

func (codeGenerator) Token(context.Context, *oauth2.GenerateBasic) (string, error) {
	return randomValue(prefixCode), nil
}

// accessGenerator implements oauth2.AccessGenerate.
type accessGenerator struct{}

func (accessGenerator) Token(_ context.Context, _ *oauth2.GenerateBasic, isGenRefresh bool) (string, string, error) {
	access := randomValue(prefixAccess)
	if !isGenRefresh {
		return access, "", nil
	}
	return access, randomValue(prefixRefresh), nil
}

var (
	_ oauth2.AuthorizeGenerate = codeGenerator{}
	_ oauth2.AccessGenerate    = accessGenerator{}
)
