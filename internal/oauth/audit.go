package oauth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/devspace-dev/devspace/internal/store"
)

// ref returns a stable, non-reversible reference to an identifier for logs
// and audit records: raw grant and client IDs never appear there.
func (s *Server) ref(id string) string {
	if id == "" {
		return ""
	}
	m := hmac.New(sha256.New, s.opts.RefKey)
	m.Write([]byte(id))
	return hex.EncodeToString(m.Sum(nil)[:8])
}

// audit records a security event in the store and the log. detail must not
// contain secrets; it is meant for counts and scope names.
func (s *Server) audit(ctx context.Context, kind, grantID, clientID string, detail map[string]any) {
	e := store.AuditEvent{Kind: kind, GrantRef: s.ref(grantID), ClientRef: s.ref(clientID)}
	if detail != nil {
		b, _ := json.Marshal(detail)
		e.Detail = string(b)
	}
	if err := s.opts.Store.AppendAudit(ctx, e); err != nil {
		s.log.ErrorContext(ctx, "append audit event", "kind", kind, "err", err)
	}
	s.log.InfoContext(ctx, "audit", "event", kind, "grant_ref", e.GrantRef, "client_ref", e.ClientRef)
}
