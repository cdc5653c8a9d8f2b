package authstate

import (
	"fmt"

	"golang.org/x/crypto/argon2"
)

// Params are Argon2id cost parameters.
type Params struct {
	// Memory is the memory cost in KiB.
	Memory uint32
	// Iterations is the time cost (passes over memory).
	Iterations uint32
	// Parallelism is the number of lanes (and goroutines) per hash.
	Parallelism uint8
	// SaltLen is the length of the random salt in bytes.
	SaltLen uint32
	// KeyLen is the length of the stored hash in bytes.
	KeyLen uint32
}

// Bounds applied to parameters given to Init and read from auth.json. The
// upper bounds stop a tampered or mistyped file from making every password
// attempt allocate gigabytes or run for minutes.
const (
	minMemory     = 8       // KiB; argon2 needs at least 8*Parallelism
	maxMemory     = 4 << 20 // KiB (4 GiB)
	maxIterations = 64
	minSaltLen    = 8
	maxSaltLen    = 1024
	minKeyLen     = 16
	maxKeyLen     = 1024
)

// DefaultParams returns the production parameters: 64 MiB, 3 iterations,
// 1 lane (RFC 9106's second recommendation with one lane, since
// VerifyPassword already runs one hash per CPU), a 16-byte salt and a 32-byte
// hash. One verification takes about 130 ms on a current x86-64 core.
func DefaultParams() Params {
	return Params{Memory: 64 * 1024, Iterations: 3, Parallelism: 1, SaltLen: 16, KeyLen: 32}
}

// withDefaults fills each zero field of p from DefaultParams.
func (p Params) withDefaults() Params {
	d := DefaultParams()
	if p.Memory == 0 {
		p.Memory = d.Memory
	}
	if p.Iterations == 0 {
		p.Iterations = d.Iterations
	}
	if p.Parallelism == 0 {
		p.Parallelism = d.Parallelism
	}
	if p.SaltLen == 0 {
		p.SaltLen = d.SaltLen
	}
	if p.KeyLen == 0 {
		p.KeyLen = d.KeyLen
	}
	return p
}

// validate reports whether p is within the accepted bounds.
func (p Params) validate() error {
	switch {
	case p.Parallelism == 0:
		return fmt.Errorf("argon2 parallelism must be at least 1")
	case p.Memory < minMemory*uint32(p.Parallelism) || p.Memory > maxMemory:
		return fmt.Errorf("argon2 memory must be %d to %d KiB", minMemory*uint32(p.Parallelism), maxMemory)
	case p.Iterations < 1 || p.Iterations > maxIterations:
		return fmt.Errorf("argon2 iterations must be 1 to %d", maxIterations)
	case p.SaltLen < minSaltLen || p.SaltLen > maxSaltLen:
		return fmt.Errorf("argon2 salt length must be %d to %d bytes", minSaltLen, maxSaltLen)
	case p.KeyLen < minKeyLen || p.KeyLen > maxKeyLen:
		return fmt.Errorf("argon2 key length must be %d to %d bytes", minKeyLen, maxKeyLen)
	}
	return nil
}

// verifier is a decoded Argon2id password verifier.
type verifier struct {
	params Params // SaltLen and KeyLen equal len(salt) and len(hash)
	salt   []byte
	hash   []byte
}

// compute returns the Argon2id hash of password under v's salt and params.
func (v *verifier) compute(password []byte) []byte {
	return argon2.IDKey(password, v.salt, v.params.Iterations, v.params.Memory, v.params.Parallelism, v.params.KeyLen)
}

// newVerifier hashes password with a fresh random salt under p.
func newVerifier(password []byte, p Params) (*verifier, error) {
	salt, err := randomBytes(int(p.SaltLen))
	if err != nil {
		return nil, err
	}
	v := &verifier{params: p, salt: salt}
	v.hash = v.compute(password)
	return v, nil
}

func checkPasswordLen(password []byte) error {
	if len(password) < MinPasswordLen || len(password) > MaxPasswordLen {
		return ErrPasswordLength
	}
	return nil
}
