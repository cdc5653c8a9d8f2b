package store

import (
	"context"
	"time"
)

// GrantUse is what a grant's token rows say about its use.
type GrantUse struct {
	// RedirectURI is the redirect URI its authorization code named.
	RedirectURI string
	// LastIssued is when it was last given a token: its code, the code's
	// exchange, or a refresh (zero when its rows were pruned).
	LastIssued time.Time
}

// GrantUses returns, per grant that still has token rows, its GrantUse
// (from its latest row: a refresh rotates into a new row carrying the
// redirect URI forward). A grant without rows is absent from the map.
func (s *Store) GrantUses(ctx context.Context) (map[string]GrantUse, error) {
	var rows []tokenRow
	err := s.db.WithContext(ctx).
		Where("id IN (SELECT MAX(id) FROM oauth_tokens GROUP BY grant_id)").
		Select("grant_id", "redirect_uri", "code_created_at", "access_created_at", "refresh_created_at").
		Find(&rows).Error
	if err != nil {
		return nil, err
	}
	out := make(map[string]GrantUse, len(rows))
	for _, r := range rows {
		u := GrantUse{RedirectURI: r.RedirectURI}
		for _, t := range []*time.Time{r.CodeCreatedAt, r.AccessCreatedAt, r.RefreshCreatedAt} {
			if t != nil && t.After(u.LastIssued) {
				u.LastIssued = *t
			}
		}
		out[r.GrantID] = u
	}
	return out, nil
}
