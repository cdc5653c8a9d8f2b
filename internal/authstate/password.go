package authstate

import (
	"crypto/rand"
	"fmt"
	"strings"
)

// Generated passwords are passwordGroups groups of passwordGroupLen
// characters from a 32-letter alphabet: 6*5*5 = 150 bits of entropy.
const (
	passwordAlphabet = "abcdefghijklmnopqrstuvwxyz234567" // RFC 4648 base32, lowercase
	passwordGroups   = 6
	passwordGroupLen = 5
)

// GeneratePassword returns a new random Owner password of 150 bits from
// crypto/rand, written as six dash-separated groups of five lowercase
// base32 characters, e.g. "k3vq7-mxa2d-...". It panics only if the system
// random source fails, which crypto/rand treats as fatal anyway.
func GeneratePassword() string {
	var raw [passwordGroups * passwordGroupLen]byte
	rand.Read(raw[:]) // never returns an error; crashes the program instead
	var b strings.Builder
	b.Grow(len(raw) + passwordGroups - 1)
	for i, r := range raw {
		if i > 0 && i%passwordGroupLen == 0 {
			b.WriteByte('-')
		}
		// 256 is a multiple of 32, so masking keeps the choice uniform.
		b.WriteByte(passwordAlphabet[r&31])
	}
	return b.String()
}

// randomBytes returns n bytes from crypto/rand.
func randomBytes(n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("read random bytes: %w", err)
	}
	return b, nil
}
