package store

import (
	"context"
	"time"
)

// AuditEvent is one security-relevant event. References are HMAC-derived
// (never raw grant IDs, tokens or command text); Detail is a short,
// already-redacted JSON object.
type AuditEvent struct {
	ID        int64
	At        time.Time
	Kind      string
	GrantRef  string
	ClientRef string
	Detail    string
}

type auditRow struct {
	ID        int64 `gorm:"primaryKey;autoIncrement"`
	At        time.Time
	Kind      string
	GrantRef  string
	ClientRef string
	Detail    string
}

func (auditRow) TableName() string { return "audit_events" }

// AppendAudit records e, stamping At when zero.
func (s *Store) AppendAudit(ctx context.Context, e AuditEvent) error {
	if e.At.IsZero() {
		e.At = s.now()
	}
	row := auditRow{At: e.At, Kind: e.Kind, GrantRef: e.GrantRef, ClientRef: e.ClientRef, Detail: e.Detail}
	return s.db.WithContext(ctx).Create(&row).Error
}

// RecentAudit returns up to limit events, newest first.
func (s *Store) RecentAudit(ctx context.Context, limit int) ([]AuditEvent, error) {
	var rows []auditRow
	if err := s.db.WithContext(ctx).Order("id DESC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]AuditEvent, len(rows))
	for i, r := range rows {
		out[i] = AuditEvent(r)
	}
	return out, nil
}
