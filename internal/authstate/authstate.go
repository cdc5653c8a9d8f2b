// Package authstate owns the Owner's secrets file, auth.json, in the state
// directory: the Argon2id verifier of the Owner password and, unless it comes
// from a separate file, the 256-bit master key from which every server secret
// (HMAC keys, cursor keys, reference keys) is derived.
//
// Nothing in this package logs, and no error it returns contains the
// password, the master key or the contents of either file.
package authstate

import (
	"errors"
	"fmt"
)

// FileName is the name of the secrets file inside the state directory.
const FileName = "auth.json"

// Password length bounds enforced by Init and SetPassword. VerifyPassword
// answers false, without hashing, for a password outside them.
const (
	MinPasswordLen = 8
	MaxPasswordLen = 1024
)

// Sentinel errors. Callers test them with errors.Is; the returned errors wrap
// them with context that names the file path but never its contents.
var (
	// ErrExists is returned by Init when auth.json already exists and
	// InitOptions.Force is false.
	ErrExists = errors.New("auth.json already exists")
	// ErrNotInitialized is returned by Load when auth.json does not exist
	// (run "devspace init").
	ErrNotInitialized = errors.New("state is not initialized")
	// ErrInsecureMode is returned by Load when auth.json is accessible to its
	// group or to others. The error message carries a chmod 600 hint.
	ErrInsecureMode = errors.New("auth.json is accessible to group or others")
	// ErrUnsupportedVersion is returned by Load when auth.json has a format
	// version (or a verifier algorithm or Argon2 version) this build does
	// not understand.
	ErrUnsupportedVersion = errors.New("unsupported auth.json version")
	// ErrCorrupt is returned by Load when auth.json is not valid JSON or a
	// field is missing or out of range.
	ErrCorrupt = errors.New("auth.json is corrupt")
	// ErrMasterKey is returned by Init and Load when the master key file is
	// malformed (wrong length or encoding), when it does not match the key
	// auth.json was initialized with, or when the key source given to Load
	// contradicts auth.json (a key file for a file that stores its key, or
	// none for a file initialized with one).
	ErrMasterKey = errors.New("master key")
	// ErrPasswordLength is returned by Init and SetPassword for a password
	// shorter than MinPasswordLen or longer than MaxPasswordLen bytes.
	ErrPasswordLength = fmt.Errorf("password must be %d to %d bytes", MinPasswordLen, MaxPasswordLen)
)
