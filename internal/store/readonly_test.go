package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenReadOnly: a missing database is ErrNoDatabase and nothing is
// created; an existing one (WAL mode, server closed or still open) is read
// without a byte of the state directory changing, and writes fail.
func TestOpenReadOnly(t *testing.T) {
	ctx := context.Background()
	missing := filepath.Join(t.TempDir(), "nothing-here")
	if _, err := OpenReadOnly(ctx, missing); !errors.Is(err, ErrNoDatabase) {
		t.Fatalf("missing state: %v, want ErrNoDatabase", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("OpenReadOnly created the state directory: %v", err)
	}

	dir := t.TempDir()
	rw, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rw.AppendAudit(ctx, AuditEvent{Kind: "test"}); err != nil {
		t.Fatal(err)
	}
	for _, serverOpen := range []bool{true, false} {
		if !serverOpen {
			rw.Close()
		}
		before := dirSums(t, dir)
		ro, err := OpenReadOnly(ctx, dir)
		if err != nil {
			t.Fatalf("server open %v: %v", serverOpen, err)
		}
		if v, err := ro.SchemaVersion(ctx); err != nil || v == 0 {
			t.Errorf("schema version %d, %v", v, err)
		}
		if ev, err := ro.RecentAudit(ctx, 5); err != nil || len(ev) != 1 {
			t.Errorf("audit %v, %v", ev, err)
		}
		if err := ro.AppendAudit(ctx, AuditEvent{Kind: "write"}); err == nil {
			t.Error("a write through the read-only store succeeded")
		}
		ro.Close()
		after := dirSums(t, dir)
		if serverOpen {
			// The -shm file is the readers' lock table, shared with the server.
			delete(before, FileName+"-shm")
			delete(after, FileName+"-shm")
		}
		if !equalSums(before, after) {
			t.Errorf("server open %v: the state directory changed:\nbefore %v\nafter  %v", serverOpen, before, after)
		}
	}
}

func dirSums(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		out[e.Name()] = sha256.Sum256(b)
	}
	return out
}

func equalSums(a, b map[string][32]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
