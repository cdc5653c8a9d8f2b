package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
)

// Grant is one approved authorization: a client, its scopes and the
// Projects the owner chose. Its tokens live in oauth_tokens.
type Grant struct {
	ID           string
	ClientID     string
	ClientName   string
	Scopes       []string
	ProjectIDs   []string
	Epoch        int64 // per-grant authorization epoch
	GlobalEpoch  int64 // global epoch at creation; a later bump kills the grant
	CreatedAt    time.Time
	ExpiresAt    *time.Time
	RevokedAt    *time.Time
	RevokeReason string
}

type grantRow struct {
	ID           string `gorm:"primaryKey"`
	ClientID     string
	ClientName   string
	Scopes       string
	ProjectIDs   string
	Epoch        int64
	GlobalEpoch  int64
	CreatedAt    time.Time
	ExpiresAt    *time.Time
	RevokedAt    *time.Time
	RevokeReason string
}

func (grantRow) TableName() string { return "grants" }

func (r grantRow) toGrant() (*Grant, error) {
	g := &Grant{ID: r.ID, ClientID: r.ClientID, ClientName: r.ClientName, Scopes: strings.Fields(r.Scopes),
		Epoch: r.Epoch, GlobalEpoch: r.GlobalEpoch, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt,
		RevokedAt: r.RevokedAt, RevokeReason: r.RevokeReason}
	if err := json.Unmarshal([]byte(r.ProjectIDs), &g.ProjectIDs); err != nil {
		return nil, fmt.Errorf("decode grant projects: %w", err)
	}
	return g, nil
}

// CreateGrant stores g stamped with the current global epoch and marks its
// client as used (so registration pruning keeps it).
func (s *Store) CreateGrant(ctx context.Context, g *Grant) error {
	projects, err := json.Marshal(g.ProjectIDs)
	if err != nil {
		return fmt.Errorf("encode projects: %w", err)
	}
	if g.CreatedAt.IsZero() {
		g.CreatedAt = s.now()
	}
	if g.Epoch == 0 {
		g.Epoch = 1
	}
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		epoch, err := globalEpoch(tx)
		if err != nil {
			return err
		}
		g.GlobalEpoch = epoch
		row := grantRow{ID: g.ID, ClientID: g.ClientID, ClientName: g.ClientName, Scopes: strings.Join(g.Scopes, " "),
			ProjectIDs: string(projects), Epoch: g.Epoch, GlobalEpoch: epoch, CreatedAt: g.CreatedAt, ExpiresAt: g.ExpiresAt}
		if err := tx.Create(&row).Error; err != nil {
			return fmt.Errorf("create grant: %w", err)
		}
		return tx.Model(&clientRow{}).Where("id = ? AND used_at IS NULL", g.ClientID).
			Update("used_at", g.CreatedAt).Error
	})
}

// Grant returns the grant with that ID (revoked or not), or ErrNotFound.
func (s *Store) Grant(ctx context.Context, id string) (*Grant, error) {
	var row grantRow
	if err := s.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return nil, notFound(err)
	}
	return row.toGrant()
}

// Grants lists grants, newest first. Without includeRevoked only grants that
// are neither revoked, expired nor from an older global epoch are returned.
func (s *Store) Grants(ctx context.Context, includeRevoked bool) ([]*Grant, error) {
	q := s.db.WithContext(ctx).Order("created_at DESC, id")
	if !includeRevoked {
		epoch, err := s.GlobalEpoch(ctx)
		if err != nil {
			return nil, err
		}
		q = q.Where("revoked_at IS NULL AND global_epoch = ? AND (expires_at IS NULL OR expires_at > ?)", epoch, s.now())
	}
	var rows []grantRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]*Grant, 0, len(rows))
	for _, r := range rows {
		g, err := r.toGrant()
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// RevokeGrant marks the grant revoked and revokes all its tokens. It reports
// whether the grant was active before; an unknown ID is ErrNotFound.
func (s *Store) RevokeGrant(ctx context.Context, id, reason string) (bool, error) {
	var changed bool
	err := s.emergency(func() error {
		return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			var n int64
			if err := tx.Model(&grantRow{}).Where("id = ?", id).Count(&n).Error; err != nil {
				return err
			}
			if n == 0 {
				return ErrNotFound
			}
			now := s.now()
			res := tx.Model(&grantRow{}).Where("id = ? AND revoked_at IS NULL", id).
				Updates(map[string]any{"revoked_at": now, "revoke_reason": reason})
			if res.Error != nil {
				return res.Error
			}
			changed = res.RowsAffected > 0
			return tx.Model(&tokenRow{}).Where("grant_id = ? AND revoked_at IS NULL", id).Update("revoked_at", now).Error
		})
	})
	return changed, err
}

// GlobalEpoch returns the current global authorization epoch.
func (s *Store) GlobalEpoch(ctx context.Context) (int64, error) {
	return globalEpoch(s.db.WithContext(ctx))
}

func globalEpoch(db *gorm.DB) (int64, error) {
	var v string
	if err := db.Raw(`SELECT value FROM settings WHERE key = 'global_epoch'`).Scan(&v).Error; err != nil {
		return 0, fmt.Errorf("read global epoch: %w", err)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse global epoch: %w", err)
	}
	return n, nil
}

// BumpGlobalEpoch is the emergency action behind revoke-all and password
// rotation: it increments the global epoch, marks every active grant revoked
// with reason and revokes every token. It returns the new epoch and the IDs of
// the grants it revoked.
func (s *Store) BumpGlobalEpoch(ctx context.Context, reason string) (int64, []string, error) {
	var epoch int64
	var ids []string
	err := s.emergency(func() error {
		return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec(`UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'global_epoch'`).Error; err != nil {
				return err
			}
			var err error
			if epoch, err = globalEpoch(tx); err != nil {
				return err
			}
			if err := tx.Model(&grantRow{}).Where("revoked_at IS NULL").Pluck("id", &ids).Error; err != nil {
				return err
			}
			now := s.now()
			if err := tx.Model(&grantRow{}).Where("revoked_at IS NULL").
				Updates(map[string]any{"revoked_at": now, "revoke_reason": reason}).Error; err != nil {
				return err
			}
			return tx.Model(&tokenRow{}).Where("revoked_at IS NULL").Update("revoked_at", now).Error
		})
	})
	return epoch, ids, err
}
