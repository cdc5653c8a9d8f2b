package authstate

import (
	"bytes"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
)

// MasterKeyLen is the length of the master key in bytes (256 bits).
const MasterKeyLen = 32

// maxKeyFileSize bounds how much of a master key file is read; every valid
// encoding is far shorter.
const maxKeyFileSize = 4096

// keyCheckInfo is the HKDF info of the key check value stored in auth.json
// when the master key lives in a separate file. It lies outside the
// "devspace/" namespace of Derive, so no purpose can ever derive it as a
// secret.
const keyCheckInfo = "devspace-master-key-check"

// keyCheckLen is the length of the stored key check value.
const keyCheckLen = 16

// readMasterKeyFile reads and decodes a master key file. A file of exactly
// 32 bytes is the raw key. Otherwise, after trailing whitespace (such as the
// newline an editor or "echo" adds) is removed, the text must be 64 hex
// digits or base64 (standard or URL alphabet, padded or not) of 32 bytes.
// Errors never contain the file's contents. The mode of the file is not
// checked: Docker and Kubernetes secrets are commonly mounted 0444 or 0644.
func readMasterKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMasterKey, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %w", ErrMasterKey, path, err)
	}
	defer clear(data)
	key, err := decodeMasterKey(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrMasterKey, path, err)
	}
	return key, nil
}

var errKeyEncoding = errors.New("want 32 raw bytes, 64 hex digits or base64 of 32 bytes")

// decodeMasterKey decodes the contents of a master key file.
func decodeMasterKey(data []byte) ([]byte, error) {
	if len(data) == MasterKeyLen {
		return bytes.Clone(data), nil
	}
	if len(data) > maxKeyFileSize {
		return nil, errKeyEncoding
	}
	text := bytes.TrimRight(data, " \t\r\n")
	if len(text) == 2*MasterKeyLen {
		key := make([]byte, MasterKeyLen)
		if _, err := hex.Decode(key, text); err == nil {
			return key, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		key := make([]byte, enc.DecodedLen(len(text)))
		n, err := enc.Decode(key, text)
		if err == nil && n == MasterKeyLen {
			return key[:n], nil
		}
	}
	return nil, errKeyEncoding
}

// keyCheck returns the check value that lets Load detect a master key file
// that differs from the one auth.json was initialized with. It is a one-way
// HKDF output and reveals nothing about the key or any Derive result.
func keyCheck(key []byte) []byte {
	return hkdfSHA256(key, keyCheckInfo, keyCheckLen)
}

func hkdfSHA256(key []byte, info string, n int) []byte {
	out, err := hkdf.Key(sha256.New, key, nil, info, n)
	if err != nil {
		// Only possible for n > 255*32, which no caller asks for.
		panic("authstate: hkdf: " + err.Error())
	}
	return out
}
