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
	if t.ParentID == 0 {
		return s.insertToken(ctx, t, nil)
	}
	return s.insertToken(ctx, t, func(tx *gorm.DB) *gorm.DB {
		return tx.Model(&tokenRow{}).
			Where("id = ? AND refresh_consumed_at IS NULL AND revoked_at IS NULL", t.ParentID).
			Updates(map[string]any{"refresh_consumed_at": s.now(), "revoked_at": s.now()})
	})
}

// ExchangeCode inserts t, the pair issued for the authorization code held
// by row codeID, and sets t.ID. The code is consumed in the same
// transaction with a conditional update: exactly one exchange of a code
// succeeds, and a code is never consumed without its pair being stored.
// Every other attempt gets ErrConsumed and inserts nothing (also when the
// code's grant was revoked).
func (s *Store) ExchangeCode(ctx context.Context, codeID int64, t *Token) error {
	return s.insertToken(ctx, t, func(tx *gorm.DB) *gorm.DB {
		return tx.Model(&tokenRow{}).
			Where("id = ? AND code_consumed_at IS NULL AND revoked_at IS NULL", codeID).
			Update("code_consumed_at", s.now())
	})
}

// insertToken inserts t in a transaction that first runs consume (when
// set), a conditional update that must change one row or the insert is
// abandoned with ErrConsumed.
func (s *Store) insertToken(ctx context.Context, t *Token, consume func(tx *gorm.DB) *gorm.DB) error {
	row := tokenRow{GrantID: t.GrantID, ClientID: t.ClientID, Scope: t.Scope, RedirectURI: t.RedirectURI,
		Resource: t.Resource, CodeHash: nullable(t.CodeHash), CodeChallenge: t.CodeChallenge,
		CodeChallengeMethod: t.CodeChallengeMethod, CodeCreatedAt: t.CodeCreatedAt, CodeExpiresAt: t.CodeExpiresAt,
		AccessHash: nullable(t.AccessHash), AccessCreatedAt: t.AccessCreatedAt, AccessExpiresAt: t.AccessExpiresAt,
		RefreshHash: nullable(t.RefreshHash), RefreshCreatedAt: t.RefreshCreatedAt, RefreshExpiresAt: t.RefreshExpiresAt}
	if t.ParentID != 0 {
		row.ParentID = &t.ParentID
	}
	insert := func(tx *gorm.DB) error {
		if consume != nil {
			res := consume(tx)
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected == 0 {
				return ErrConsumed
			}
		}
		return tx.Create(&row).Error
	}
	var err error
	if consume == nil {
		err = insert(s.db.WithContext(ctx))
	} else {
		err = s.db.WithContext(ctx).Transaction(insert)
	}
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

// SuccessorUsed reports whether the pair that replaced token id (the row
// whose ParentID is id) has had its own refresh token used since.
func (s *Store) SuccessorUsed(ctx context.Context, id int64) (bool, error) {
	var n int64
	err := s.db.WithContext(ctx).Model(&tokenRow{}).Where("parent_id = ? AND refresh_consumed_at IS NOT NULL", id).Count(&n).Error
	if err != nil {
		return false, fmt.Errorf("successor of token: %w", err)
	}
	return n > 0, nil
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

// TokenGrant is a token row with its grant and the current global epoch,
// read in one statement: what bearer verification and the token endpoint
// check.
type TokenGrant struct {
	Token       *Token
	Grant       *Grant
	GlobalEpoch int64
}

// AccessTokenGrant returns the issuance holding an access-token hash with
// its grant and the global epoch, or ErrNotFound.
func (s *Store) AccessTokenGrant(ctx context.Context, hash string) (*TokenGrant, error) {
	return s.tokenGrant(ctx, "access_hash", hash)
}

// CodeGrant returns the issuance holding an authorization-code hash,
// whatever its state, with its grant and the global epoch, or ErrNotFound.
func (s *Store) CodeGrant(ctx context.Context, hash string) (*TokenGrant, error) {
	return s.tokenGrant(ctx, "code_hash", hash)
}

// RefreshGrant returns the issuance holding a refresh-token hash, whatever
// its state, with its grant and the global epoch, or ErrNotFound.
func (s *Store) RefreshGrant(ctx context.Context, hash string) (*TokenGrant, error) {
	return s.tokenGrant(ctx, "refresh_hash", hash)
}

func (s *Store) tokenGrant(ctx context.Context, column, hash string) (*TokenGrant, error) {
	if hash == "" {
		return nil, ErrNotFound
	}
	var (
		t       tokenRow
		g       grantRow
		current string
	)
	// column is one of three constants above, never input.
	row := s.db.WithContext(ctx).Raw(`SELECT t.id, t.grant_id, t.client_id, t.parent_id, t.scope,
			t.redirect_uri, t.resource, t.code_hash, t.code_challenge, t.code_challenge_method,
			t.code_created_at, t.code_expires_at, t.code_consumed_at,
			t.access_hash, t.access_created_at, t.access_expires_at, t.access_revoked_at,
			t.refresh_hash, t.refresh_created_at, t.refresh_expires_at, t.refresh_consumed_at, t.revoked_at,
			g.id, g.client_id, g.client_name, g.scopes, g.project_ids, g.epoch, g.global_epoch,
			g.created_at, g.expires_at, g.revoked_at, g.revoke_reason,
			(SELECT value FROM settings WHERE key = 'global_epoch')
		FROM oauth_tokens t JOIN grants g ON g.id = t.grant_id
		WHERE t.`+column+` = ?`, hash).Row()
	err := row.Scan(&t.ID, &t.GrantID, &t.ClientID, &t.ParentID, &t.Scope,
		&t.RedirectURI, &t.Resource, &t.CodeHash, &t.CodeChallenge, &t.CodeChallengeMethod,
		&t.CodeCreatedAt, &t.CodeExpiresAt, &t.CodeConsumedAt,
		&t.AccessHash, &t.AccessCreatedAt, &t.AccessExpiresAt, &t.AccessRevokedAt,
		&t.RefreshHash, &t.RefreshCreatedAt, &t.RefreshExpiresAt, &t.RefreshConsumedAt, &t.RevokedAt,
		&g.ID, &g.ClientID, &g.ClientName, &g.Scopes, &g.ProjectIDs, &g.Epoch, &g.GlobalEpoch,
		&g.CreatedAt, &g.ExpiresAt, &g.RevokedAt, &g.RevokeReason, &current)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read token: %w", err)
	}
	grant, err := g.toGrant()
	if err != nil {
		return nil, err
	}
	var epoch int64
	if _, err := fmt.Sscan(current, &epoch); err != nil {
		return nil, fmt.Errorf("parse global epoch: %w", err)
	}
	return &TokenGrant{Token: t.toToken(), Grant: grant, GlobalEpoch: epoch}, nil
}
