package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// ErrClientLimit is returned by CreateClient when registering another client
// would exceed MaxTotal even after every unused client was evicted (all
// remaining clients have grants).
var ErrClientLimit = errors.New("too many registered clients")

// Client is a registered OAuth client (dynamic registration or a cached
// client ID metadata document).
type Client struct {
	ID               string
	SecretHash       string // hex SHA-256 of the client secret; "" for none
	Name             string
	RedirectURIs     []string
	AuthMethod       string // none, client_secret_post, client_secret_basic
	MetadataDocument bool   // ID is an https URL whose document we fetched
	CreatedAt        time.Time
	UsedAt           *time.Time // first grant issued to this client; nil while unused
}

type clientRow struct {
	ID               string `gorm:"primaryKey"`
	SecretHash       string
	Name             string
	RedirectURIs     string
	AuthMethod       string
	MetadataDocument bool
	CreatedAt        time.Time
	UsedAt           *time.Time
}

func (clientRow) TableName() string { return "oauth_clients" }

func (r clientRow) toClient() (*Client, error) {
	c := &Client{ID: r.ID, SecretHash: r.SecretHash, Name: r.Name, AuthMethod: r.AuthMethod,
		MetadataDocument: r.MetadataDocument, CreatedAt: r.CreatedAt, UsedAt: r.UsedAt}
	if err := json.Unmarshal([]byte(r.RedirectURIs), &c.RedirectURIs); err != nil {
		return nil, fmt.Errorf("decode client redirect uris: %w", err)
	}
	return c, nil
}

// ClientLimits bound dynamic registration.
type ClientLimits struct {
	MaxUnused int           // clients never used for a grant
	MaxTotal  int           // all clients
	UnusedTTL time.Duration // unused clients older than this are pruned
}

// CreateClient prunes unused clients older than limits.UnusedTTL and inserts
// c. At a bound it evicts the oldest clients never used for a grant instead
// of refusing, so a flood of registrations cannot lock out the next real
// client; it returns ErrClientLimit only when MaxTotal is reached by clients
// that all have grants. Metadata document clients are upserted (their
// document may have changed).
func (s *Store) CreateClient(ctx context.Context, c *Client, limits ClientLimits) error {
	uris, err := json.Marshal(c.RedirectURIs)
	if err != nil {
		return fmt.Errorf("encode redirect uris: %w", err)
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = s.now()
	}
	row := clientRow{ID: c.ID, SecretHash: c.SecretHash, Name: c.Name, RedirectURIs: string(uris),
		AuthMethod: c.AuthMethod, MetadataDocument: c.MetadataDocument, CreatedAt: c.CreatedAt, UsedAt: c.UsedAt}
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("used_at IS NULL AND created_at < ?", s.now().Add(-limits.UnusedTTL)).
			Delete(&clientRow{}).Error; err != nil {
			return fmt.Errorf("prune clients: %w", err)
		}
		if c.MetadataDocument {
			var existing int64
			if err := tx.Model(&clientRow{}).Where("id = ?", c.ID).Count(&existing).Error; err != nil {
				return err
			}
			if existing > 0 {
				return tx.Model(&clientRow{}).Where("id = ?", c.ID).Updates(map[string]any{
					"name": row.Name, "redirect_uris": row.RedirectURIs, "auth_method": row.AuthMethod,
				}).Error
			}
		}
		var unused, total int64
		if err := tx.Model(&clientRow{}).Where("used_at IS NULL").Count(&unused).Error; err != nil {
			return err
		}
		if err := tx.Model(&clientRow{}).Count(&total).Error; err != nil {
			return err
		}
		evict := max(int(unused)-limits.MaxUnused+1, int(total)-limits.MaxTotal+1, 0)
		if evict > 0 {
			var ids []string
			if err := tx.Model(&clientRow{}).Where("used_at IS NULL").Order("created_at, rowid").
				Limit(evict).Pluck("id", &ids).Error; err != nil {
				return fmt.Errorf("find unused clients to evict: %w", err)
			}
			if len(ids) > 0 {
				if err := tx.Where("id IN ?", ids).Delete(&clientRow{}).Error; err != nil {
					return fmt.Errorf("evict unused clients: %w", err)
				}
			}
			if int(total)-len(ids) >= limits.MaxTotal {
				return ErrClientLimit
			}
		}
		return tx.Create(&row).Error
	})
}

// Client returns the client with that ID, or ErrNotFound.
func (s *Store) Client(ctx context.Context, id string) (*Client, error) {
	var row clientRow
	if err := s.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return nil, notFound(err)
	}
	return row.toClient()
}

// CountClients returns the number of registered clients.
func (s *Store) CountClients(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.WithContext(ctx).Model(&clientRow{}).Count(&n).Error
	return n, err
}

// RecentClients returns the n most recently registered clients, newest
// first (none when there are none).
func (s *Store) RecentClients(ctx context.Context, n int) ([]*Client, error) {
	var rows []clientRow
	if err := s.db.WithContext(ctx).Order("created_at DESC, id").Limit(n).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]*Client, 0, len(rows))
	for _, r := range rows {
		c, err := r.toClient()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}
