package project

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"syscall"
)

// Fingerprint identifies the directory behind a root right now: its
// canonical path plus device and inode. If the directory is replaced (moved
// away and another put in its place), the fingerprint changes and the
// executions opened on the old one go stale.
func (r Root) Fingerprint(key []byte) (string, error) {
	fi, err := os.Stat(r.Path)
	if err != nil {
		return "", fmt.Errorf("stat project root: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("project root is not a directory")
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", fmt.Errorf("project root: no device and inode")
	}
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "root-fingerprint\x00%s\x00%d\x00%d", r.Path, st.Dev, st.Ino)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:18]), nil
}
