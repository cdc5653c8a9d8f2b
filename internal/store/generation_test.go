package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
)

// TestAuthGeneration: every store write that can revoke, expire or change
// a token, a grant or the global epoch advances the generation once it
// has committed; writes to other tables leave it alone.
func TestAuthGeneration(t *testing.T) {
	ctx := context.Background()
	s, clk := openTestStore(t)
	exp := clk.Now().Add(time.Hour)
	newGrant := func(id string) {
		t.Helper()
		if err := s.CreateGrant(ctx, &Grant{ID: id, ClientID: "c1", Scopes: []string{"project:read"}, ProjectIDs: []string{"p"}}); err != nil {
			t.Fatal(err)
		}
	}
	newToken := func(grant, access, refresh string) *Token {
		t.Helper()
		tok := &Token{GrantID: grant, ClientID: "c1", AccessHash: access, RefreshHash: refresh, AccessExpiresAt: &exp, RefreshExpiresAt: &exp}
		if err := s.CreateToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		return tok
	}
	newGrant("g1")
	newGrant("g2")
	parent := newToken("g1", "a1", "r1")
	newToken("g2", "a2", "r2")
	code := &Token{GrantID: "g2", ClientID: "c1", CodeHash: "code1", CodeExpiresAt: &exp}
	if err := s.CreateToken(ctx, code); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name    string
		write   func() error
		advance bool // the auth generation; every write advances WriteGeneration
	}{
		{"create grant", func() error {
			return s.CreateGrant(ctx, &Grant{ID: "g3", ClientID: "c1", Scopes: []string{"project:read"}, ProjectIDs: []string{"p"}})
		}, true},
		{"create token", func() error { return s.CreateToken(ctx, &Token{GrantID: "g3", ClientID: "c1", AccessHash: "a3"}) }, true},
		{"refresh rotation", func() error {
			return s.CreateToken(ctx, &Token{GrantID: "g1", ClientID: "c1", ParentID: parent.ID, AccessHash: "a1b", RefreshHash: "r1b"})
		}, true},
		{"refresh replay (nothing written)", func() error {
			err := s.CreateToken(ctx, &Token{GrantID: "g1", ClientID: "c1", ParentID: parent.ID, AccessHash: "a1c"})
			if !errors.Is(err, ErrConsumed) {
				return errors.New("replay not refused")
			}
			return nil
		}, false}, // its transaction rolled back
		{"code exchange", func() error {
			return s.ExchangeCode(ctx, code.ID, &Token{GrantID: "g2", ClientID: "c1", AccessHash: "a2b"})
		}, true},
		{"revoke access token", func() error { _, err := s.RevokeAccessToken(ctx, "c1", "a2"); return err }, true},
		{"revoke grant", func() error { _, err := s.RevokeGrant(ctx, "g2", "owner_revoked"); return err }, true},
		{"bump global epoch", func() error { _, _, err := s.BumpGlobalEpoch(ctx, "revoke_all"); return err }, true},
		{"prune tokens", func() error { _, err := s.PruneTokens(ctx, clk.Now()); return err }, true},
		{"set setting", func() error { return s.SetSetting(ctx, "k", "v") }, true},
		{"readiness ping (its own table, not settings)", func() error { return s.Ping(ctx) }, false},
		{"audit", func() error { return s.AppendAudit(ctx, AuditEvent{Kind: "test"}) }, false},
		{"register client", func() error {
			return s.CreateClient(ctx, &Client{ID: "c2"}, ClientLimits{MaxUnused: 10, MaxTotal: 10, UnusedTTL: time.Hour})
		}, false},
		{"reserve operation", func() error { _, _, err := s.ReserveOperation(ctx, opKey, "h", time.Hour); return err }, false},
		{"complete operation", func() error { return s.CompleteOperation(ctx, opKey, []byte("{}")) }, false},
		{"read grants", func() error { _, err := s.Grants(ctx, true); return err }, false},
		{"read token", func() error { _, err := s.AccessTokenGrant(ctx, "a1"); return err }, false},
	} {
		before, beforeAny := s.AuthGeneration(), s.WriteGeneration()
		if err := tc.write(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := s.AuthGeneration() != before; got != tc.advance {
			t.Errorf("%s: generation advanced = %v, want %v", tc.name, got, tc.advance)
		}
		read := strings.HasPrefix(tc.name, "read ") || strings.Contains(tc.name, "nothing written")
		if got := s.WriteGeneration() != beforeAny; got == read {
			t.Errorf("%s: write generation advanced = %v, want %v", tc.name, got, !read)
		}
	}
}

// TestAuthGenerationAfterCommit: inside a transaction the generation
// stays put until the commit (a reader that cached rows read before the
// commit under the new generation would serve them forever); a rollback
// leaves it alone.
func TestAuthGenerationAfterCommit(t *testing.T) {
	ctx := context.Background()
	s, _ := openTestStore(t)
	for _, commit := range []bool{true, false} {
		before, beforeAny := s.AuthGeneration(), s.WriteGeneration()
		err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec(`UPDATE grants SET revoked_at = ?`, time.Now()).Error; err != nil {
				return err
			}
			if err := tx.Exec(`UPDATE tasks SET title = title`).Error; err != nil {
				return err
			}
			if s.AuthGeneration() != before || s.WriteGeneration() != beforeAny {
				t.Error("generation advanced before the commit")
			}
			if !commit {
				return errors.New("roll back")
			}
			return nil
		})
		if commit && err != nil {
			t.Fatal(err)
		}
		if got := s.AuthGeneration() != before; got != commit {
			t.Errorf("commit %v: generation advanced = %v", commit, got)
		}
		if got := s.WriteGeneration() != beforeAny; got != commit {
			t.Errorf("commit %v: write generation advanced = %v", commit, got)
		}
	}
}

// TestRowWriteRefused: a write through Row (or a Raw Scan) would commit
// only when its rows close, after the callbacks, so the store refuses it.
func TestRowWriteRefused(t *testing.T) {
	s, _ := openTestStore(t)
	var v string
	err := s.db.Raw(`UPDATE settings SET value = value WHERE key = 'global_epoch' RETURNING value`).Scan(&v).Error
	if !errors.Is(err, errRowWrite) {
		t.Fatalf("write through Scan: %v, want errRowWrite", err)
	}
}

func TestTouchesAuth(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want bool
	}{
		{"SELECT * FROM grants", false},
		{"  select value from settings", false},
		{"EXPLAIN QUERY PLAN SELECT 1", false},
		{"INSERT INTO `oauth_tokens` (`grant_id`) VALUES (?) RETURNING `id`", true},
		{"INSERT INTO settings(key, value) VALUES('ready_probe', '1')", true},
		{"INSERT INTO ready_probe(id, n) VALUES(1, 1) ON CONFLICT(id) DO UPDATE SET n = n + 1", false},
		{"INSERT OR REPLACE INTO grants VALUES (1)", true},
		{"REPLACE INTO main.\"grants\" VALUES (1)", true},
		{"UPDATE `grants` SET `revoked_at`=?", true},
		{"UPDATE OR IGNORE oauth_tokens SET x = 1", true},
		{"update Settings set value = 2", true},
		{"DELETE FROM `oauth_tokens` WHERE x", true},
		{"INSERT INTO operations (a) VALUES (1)", false},
		{"INSERT INTO audit_events(kind) VALUES ('x')", false},
		{"UPDATE OR ROLLBACK executions SET closed_at = 1", false},
		{"DELETE FROM operations WHERE expires_at <= ?", false},
		{"CREATE TABLE x (a)", true},
		{"WITH t AS (SELECT 1) DELETE FROM operations", true},
		{"-- comment\nINSERT INTO operations VALUES (1)", true},
		{"SAVEPOINT sp1", true},
		{"INSERT INTO", true},
		{"", true},
	} {
		if got := touchesAuth(tc.sql); got != tc.want {
			t.Errorf("touchesAuth(%q) = %v, want %v", tc.sql, got, tc.want)
		}
	}
}
