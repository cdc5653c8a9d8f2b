package undo

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/devspace-dev/devspace/internal/project"
)

// writeAtomic writes data to name durably (see writeFile).
func (s *Store) writeAtomic(name string, data []byte) error { return s.writeFile(name, true, data) }

// writeFile writes the chunks, one after the other, to name through a
// temp file renamed into place; durably, the file is fsynced before the
// rename and its directory after.
// With durable false nothing is fsynced: packs are written that way,
// because the manifest written after them is the commit point, a
// manifest whose pack did not survive a crash becomes a stub at the next
// start and one whose pack holds wrong bytes becomes a stub when read.
func (s *Store) writeFile(name string, durable bool, chunks ...[]byte) error {
	var r [6]byte
	_, _ = rand.Read(r[:])
	tmp := name + ".tmp-" + hex.EncodeToString(r[:])
	f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return project.Scrub(err)
	}
	for _, c := range chunks {
		if _, err = f.Write(c); err != nil {
			break
		}
	}
	if err == nil && durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.root.Rename(tmp, name)
	}
	if err != nil {
		_ = s.root.Remove(tmp)
		return project.Scrub(err)
	}
	if !durable {
		return nil
	}
	if d, err := s.root.Open(path.Dir(name)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

func execDir(executionID string) string {
	sum := sha256.Sum256([]byte(executionID))
	return hex.EncodeToString(sum[:16])
}

func isExecDir(name string) bool {
	return len(name) == 32 && isLowerHex(name)
}

func manifestName(dir string, seq int64) string {
	return fmt.Sprintf("%s/manifest-%020d.json", dir, seq)
}

func manifestSeq(name string) (int64, bool) {
	num, ok := strings.CutPrefix(name, "manifest-")
	if !ok {
		return 0, false
	}
	if num, ok = strings.CutSuffix(num, ".json"); !ok || len(num) != 20 {
		return 0, false
	}
	seq, err := strconv.ParseInt(num, 10, 64)
	return seq, err == nil && seq > 0
}

func packName(dir string, seq int64) string {
	return fmt.Sprintf("%s/pack-%020d", dir, seq)
}

func packSeq(name string) (int64, bool) {
	num, ok := strings.CutPrefix(name, "pack-")
	if !ok || len(num) != 20 || strings.Trim(num, "0123456789") != "" {
		return 0, false
	}
	seq, err := strconv.ParseInt(num, 10, 64)
	return seq, err == nil && seq > 0
}

// hashHex returns the hex part of a "sha256:…" content hash.
func hashHex(h string) (string, bool) {
	x, ok := strings.CutPrefix(h, "sha256:")
	return x, ok && isHex64(x)
}

func isHex64(s string) bool { return len(s) == 64 && isLowerHex(s) }

func isLowerHex(s string) bool { return strings.Trim(s, "0123456789abcdef") == "" }
