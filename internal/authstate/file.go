package authstate

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/crypto/argon2"
)

// formatVersion is the only auth.json format this build reads and writes.
const formatVersion = 1

// maxFileSize bounds how much of auth.json is read.
const maxFileSize = 64 << 10

// authFile is the JSON layout of auth.json (format version 1):
//
//	{
//	  "version": 1,
//	  "password": {"algorithm": "argon2id", "version": 19, "memory": 65536,
//	               "iterations": 3, "parallelism": 1, "salt": "…", "hash": "…"},
//	  "masterKey": "…"         // base64; absent when the key comes from a file
//	  "masterKeyCheck": "…"    // base64; present only when it does
//	}
type authFile struct {
	Version        int           `json:"version"`
	Password       *passwordJSON `json:"password"`
	MasterKey      string        `json:"masterKey,omitempty"`
	MasterKeyCheck string        `json:"masterKeyCheck,omitempty"`
}

type passwordJSON struct {
	Algorithm   string `json:"algorithm"`
	Version     int    `json:"version"`
	Memory      uint32 `json:"memory"`
	Iterations  uint32 `json:"iterations"`
	Parallelism uint8  `json:"parallelism"`
	Salt        string `json:"salt"`
	Hash        string `json:"hash"`
}

const algorithmArgon2id = "argon2id"

var b64 = base64.StdEncoding

func encodeVerifier(v *verifier) *passwordJSON {
	return &passwordJSON{
		Algorithm:   algorithmArgon2id,
		Version:     argon2.Version,
		Memory:      v.params.Memory,
		Iterations:  v.params.Iterations,
		Parallelism: v.params.Parallelism,
		Salt:        b64.EncodeToString(v.salt),
		Hash:        b64.EncodeToString(v.hash),
	}
}

// decodeFile parses auth.json. Its errors describe what is wrong by field
// name and offset only; json's own messages can quote the input, so they
// are not wrapped.
func decodeFile(data []byte) (*authFile, *verifier, error) {
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, nil, fmt.Errorf("%w: %s", ErrCorrupt, describeJSONError(err))
	}
	switch {
	case head.Version == nil:
		return nil, nil, fmt.Errorf("%w: missing version", ErrCorrupt)
	case *head.Version != formatVersion:
		return nil, nil, fmt.Errorf("%w: file has version %d, this build reads version %d", ErrUnsupportedVersion, *head.Version, formatVersion)
	}
	var f authFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, nil, fmt.Errorf("%w: %s", ErrCorrupt, describeJSONError(err))
	}
	pw := f.Password
	if pw == nil {
		return nil, nil, fmt.Errorf("%w: missing password verifier", ErrCorrupt)
	}
	if pw.Algorithm != algorithmArgon2id {
		return nil, nil, fmt.Errorf("%w: password algorithm is not %s", ErrUnsupportedVersion, algorithmArgon2id)
	}
	if pw.Version != argon2.Version {
		return nil, nil, fmt.Errorf("%w: argon2 version %d, want %d", ErrUnsupportedVersion, pw.Version, argon2.Version)
	}
	salt, err := b64.DecodeString(pw.Salt)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: password salt is not base64", ErrCorrupt)
	}
	hash, err := b64.DecodeString(pw.Hash)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: password hash is not base64", ErrCorrupt)
	}
	v := &verifier{
		params: Params{Memory: pw.Memory, Iterations: pw.Iterations, Parallelism: pw.Parallelism,
			SaltLen: uint32(len(salt)), KeyLen: uint32(len(hash))},
		salt: salt,
		hash: hash,
	}
	if err := v.params.validate(); err != nil {
		return nil, nil, fmt.Errorf("%w: password verifier: %w", ErrCorrupt, err)
	}
	switch {
	case f.MasterKey == "" && f.MasterKeyCheck == "":
		return nil, nil, fmt.Errorf("%w: missing master key", ErrCorrupt)
	case f.MasterKey != "" && f.MasterKeyCheck != "":
		return nil, nil, fmt.Errorf("%w: both masterKey and masterKeyCheck are set", ErrCorrupt)
	}
	return &f, v, nil
}

func describeJSONError(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("invalid JSON at offset %d", syn.Offset)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Sprintf("field %q has the wrong type or is out of range", typ.Field)
		}
		return "not a JSON object"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "truncated JSON"
	default:
		return "invalid JSON"
	}
}

// readFile reads auth.json, refusing anything but a regular file that only
// its owner may access. The mode is taken from the opened file, so a file
// swapped between check and read is still checked.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s does not exist (run devspace init)", ErrNotInitialized, path)
	}
	if err != nil {
		return nil, fmt.Errorf("open auth file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat auth file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrCorrupt, path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %#o; run: chmod 600 %s", ErrInsecureMode, path, perm, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read auth file: %w", err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrCorrupt, path, maxFileSize)
	}
	return data, nil
}

// writeFile replaces path atomically with a 0600 file holding data: a temp
// file in the same directory is written and fsynced, renamed over path, and
// the directory is fsynced so the rename survives a crash.
func writeFile(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+FileName+".*.tmp")
	if err != nil {
		return fmt.Errorf("create temp auth file: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	// CreateTemp already uses 0600; be explicit in case that ever changes.
	if err := tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("chmod temp auth file: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write temp auth file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync temp auth file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close temp auth file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replace auth file: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open state dir for sync: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync state dir: %w", err)
	}
	return nil
}
