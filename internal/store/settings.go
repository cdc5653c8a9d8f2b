package store

import "context"

// SetSetting stores a small value under key (server facts that doctor
// reports, such as the last startup prune).
func (s *Store) SetSetting(ctx context.Context, key, value string) error {
	return s.db.WithContext(ctx).Exec(`INSERT INTO settings(key, value) VALUES(?, ?)
		 ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, value).Error
}

// Setting returns the value stored under key; ErrNotFound when none is.
func (s *Store) Setting(ctx context.Context, key string) (string, error) {
	var v []string
	if err := s.db.WithContext(ctx).Raw(`SELECT value FROM settings WHERE key = ?`, key).Scan(&v).Error; err != nil {
		return "", err
	}
	if len(v) == 0 {
		return "", ErrNotFound
	}
	return v[0], nil
}
