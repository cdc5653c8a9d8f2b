package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// ErrConsumed is returned when a single-use credential (authorization code or
// refresh token) was already used. The oauth package turns it into replay
// handling; the conditional update that detects it is what makes concurrent
// uses race-free.
var ErrConsumed = errors.New("credential already used")

// Token is one issuance in a grant: an authorization code, or an
// access/refresh pair. Only SHA-256 hashes of the secret values are stored.
type Token struct {
	ID                  int64
	GrantID             string
	ClientID            string
	ParentID            int64 // the row whose refresh token this pair replaced; 0 for none
	Scope               string
	RedirectURI         string
	Resource            string
	CodeHash            string
	CodeChallenge       string
	CodeChallengeMethod string
	CodeCreatedAt       *time.Time
	CodeExpiresAt       *time.Time
	CodeConsumedAt      *time.Time
	AccessHash          string
	AccessCreatedAt     *time.Time
	AccessExpiresAt     *time.Time
	AccessRevokedAt     *time.Time // this access token alone was revoked (RFC 7009)
	RefreshHash         string
	RefreshCreatedAt    *time.Time
	RefreshExpiresAt    *time.Time
	RefreshConsumedAt   *time.Time
	RevokedAt           *time.Time
}

type tokenRow struct {
	ID                  int64 `gorm:"primaryKey;autoIncrement"`
	GrantID             string
	ClientID            string
	ParentID            *int64
	Scope               string
	RedirectURI         string
	Resource            string
	CodeHash            *string
	CodeChallenge       string
	CodeChallengeMethod string
	CodeCreatedAt       *time.Time
	CodeExpiresAt       *time.Time
	CodeConsumedAt      *time.Time
	AccessHash          *string
	AccessCreatedAt     *time.Time
	AccessExpiresAt     *time.Time
	AccessRevokedAt     *time.Time
	RefreshHash         *string
	RefreshCreatedAt    *time.Time
	RefreshExpiresAt    *time.Time
	RefreshConsumedAt   *time.Time
	RevokedAt           *time.Time
}

func (tokenRow) TableName() string { return "oauth_tokens" }

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (r tokenRow) toToken() *Token {
	t := &Token{ID: r.ID, GrantID: r.GrantID, ClientID: r.ClientID, Scope: r.Scope, RedirectURI: r.RedirectURI,
		Resource: r.Resource, CodeHash: deref(r.CodeHash), CodeChallenge: r.CodeChallenge,
		CodeChallengeMethod: r.CodeChallengeMethod, CodeCreatedAt: r.CodeCreatedAt, CodeExpiresAt: r.CodeExpiresAt,
		CodeConsumedAt: r.CodeConsumedAt, AccessHash: deref(r.AccessHash), AccessCreatedAt: r.AccessCreatedAt,
		AccessExpiresAt: r.AccessExpiresAt, AccessRevokedAt: r.AccessRevokedAt, RefreshHash: deref(r.RefreshHash), RefreshCreatedAt: r.RefreshCreatedAt,
		RefreshExpiresAt: r.RefreshExpiresAt, RefreshConsumedAt: r.RefreshConsumedAt, RevokedAt: r.RevokedAt}
	if r.ParentID != nil {
		t.ParentID = *r.ParentID
	}
	return t
}

// CreateToken inserts t and sets t.ID. When t.ParentID is set the parent's
// refresh token is consumed in the same transaction with a conditional
// update, and the parent's access token is retired with it: if it was
// already consumed (a replay, or a concurrent refresh that
// won the race) nothing is inserted and ErrConsumed is returned.
func (s *Store) CreateToken(ctx context.Context, t *Token) error {
	row := tokenRow{GrantID: t.GrantID, ClientID: t.ClientID, Scope: t.Scope, RedirectURI: t.RedirectURI,
		Resource: t.Resource, CodeHash: nullable(t.CodeHash), CodeChallenge: t.CodeChallenge,
		CodeChallengeMethod: t.CodeChallengeMethod, CodeCreatedAt: t.CodeCreatedAt, CodeExpiresAt: t.CodeExpiresAt,
		AccessHash: nullable(t.AccessHash), AccessCreatedAt: t.AccessCreatedAt, AccessExpiresAt: t.AccessExpiresAt,
		RefreshHash: nullable(t.RefreshHash), RefreshCreatedAt: t.RefreshCreatedAt, RefreshExpiresAt: t.RefreshExpiresAt}
	if t.ParentID != 0 {
		row.ParentID = &t.ParentID
	}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if t.ParentID != 0 {
			res := tx.Model(&tokenRow{}).
				Where("id = ? AND refresh_consumed_at IS NULL AND revoked_at IS NULL", t.ParentID).
				Updates(map[string]any{"refresh_consumed_at": s.now(), "revoked_at": s.now()})
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected == 0 {
				return ErrConsumed
			}
		}
		return tx.Create(&row).Error
	})
	if err != nil {
		if errors.Is(err, ErrConsumed) {
			return err
		}
		return fmt.Errorf("create token: %w", err)
	}
	t.ID = row.ID
	return nil
}

func (s *Store) tokenBy(ctx context.Context, column, hash string) (*Token, error) {
	if hash == "" {
		return nil, ErrNotFound
	}
	var row tokenRow
	if err := s.db.WithContext(ctx).Where(column+" = ?", hash).Take(&row).Error; err != nil {
		return nil, notFound(err)
	}
	return row.toToken(), nil
}

// TokenByCodeHash returns the issuance holding that code hash, whatever its
// state, or ErrNotFound.
func (s *Store) TokenByCodeHash(ctx context.Context, hash string) (*Token, error) {
	return s.tokenBy(ctx, "code_hash", hash)
}

// TokenByAccessHash returns the issuance holding that access-token hash,
// whatever its state, or ErrNotFound.
func (s *Store) TokenByAccessHash(ctx context.Context, hash string) (*Token, error) {
	return s.tokenBy(ctx, "access_hash", hash)
}

// TokenByRefreshHash returns the issuance holding that refresh-token hash,
// whatever its state, or ErrNotFound.
func (s *Store) TokenByRefreshHash(ctx context.Context, hash string) (*Token, error) {
	return s.tokenBy(ctx, "refresh_hash", hash)
}

// ConsumeCode marks the code used. Exactly one caller succeeds for a code;
// every other gets ErrConsumed (ErrNotFound if the code never existed).
func (s *Store) ConsumeCode(ctx context.Context, hash string) error {
	res := s.db.WithContext(ctx).Model(&tokenRow{}).
		Where("code_hash = ? AND code_consumed_at IS NULL AND revoked_at IS NULL", hash).
		Update("code_consumed_at", s.now())
	if res.Error != nil {
		return fmt.Errorf("consume code: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		if _, err := s.TokenByCodeHash(ctx, hash); err != nil {
			return err
		}
		return ErrConsumed
	}
	return nil
}

// RevokeAccessToken revokes the access token with that hash, and only it
// (the refresh token of the same issuance stays usable), if it belongs to
// clientID. It reports whether a row matched.
func (s *Store) RevokeAccessToken(ctx context.Context, clientID, hash string) (bool, error) {
	res := s.db.WithContext(ctx).Model(&tokenRow{}).
		Where("access_hash = ? AND client_id = ? AND access_revoked_at IS NULL", hash, clientID).
		Update("access_revoked_at", s.now())
	return res.RowsAffected > 0, res.Error
}

// PruneTokens deletes issuances that can no longer be used or replayed
// usefully: rows whose every credential expired before cutoff.
func (s *Store) PruneTokens(ctx context.Context, cutoff time.Time) (int64, error) {
	res := s.db.WithContext(ctx).Where(
		`(code_expires_at IS NULL OR code_expires_at < ?) AND
		 (access_expires_at IS NULL OR access_expires_at < ?) AND
		 (refresh_expires_at IS NULL OR refresh_expires_at < ?)`, cutoff, cutoff, cutoff).
		Delete(&tokenRow{})
	return res.RowsAffected, res.Error
}

// AccessGrant is a token row with its grant and the current global epoch,
// read in one statement for bearer verification (the per-request path).
type AccessGrant struct {
	Token       *Token
	Grant       *Grant
	GlobalEpoch int64
}

// AccessTokenGrant returns the issuance holding an access-token hash with
// its grant and the global epoch, or ErrNotFound.
func (s *Store) AccessTokenGrant(ctx context.Context, hash string) (*AccessGrant, error) {
	if hash == "" {
		return nil, ErrNotFound
	}
	var (
		t       tokenRow
		g       grantRow
		current string
	)
	row := s.db.WithContext(ctx).Raw(`SELECT t.id, t.grant_id, t.client_id, t.scope, t.resource,
			t.access_created_at, t.access_expires_at, t.access_revoked_at, t.revoked_at,
			g.id, g.client_id, g.client_name, g.scopes, g.project_ids, g.epoch, g.global_epoch,
			g.created_at, g.expires_at, g.revoked_at, g.revoke_reason,
			(SELECT value FROM settings WHERE key = 'global_epoch')
		FROM oauth_tokens t JOIN grants g ON g.id = t.grant_id
		WHERE t.access_hash = ?`, hash).Row()
	err := row.Scan(&t.ID, &t.GrantID, &t.ClientID, &t.Scope, &t.Resource,
		&t.AccessCreatedAt, &t.AccessExpiresAt, &t.AccessRevokedAt, &t.RevokedAt,
		&g.ID, &g.ClientID, &g.ClientName, &g.Scopes, &g.ProjectIDs, &g.Epoch, &g.GlobalEpoch,
		&g.CreatedAt, &g.ExpiresAt, &g.RevokedAt, &g.RevokeReason, &current)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read access token: %w", err)
	}
	t.AccessHash = &hash
	grant, err := g.toGrant()
	if err != nil {
		return nil, err
	}
	var epoch int64
	if _, err := fmt.Sscan(current, &epoch); err != nil {
		return nil, fmt.Errorf("parse global epoch: %w", err)
	}
	return &AccessGrant{Token: t.toToken(), Grant: grant, GlobalEpoch: epoch}, nil
}
