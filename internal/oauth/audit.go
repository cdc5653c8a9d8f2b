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

// AuditOwner records an action the Owner took on a grant's behalf (the
// console stopping a command, say) in the audit log and the log, as kind
// with detail {"by": "owner"} plus detail: the grant and its client are
// referenced as every audit event references them. detail must not
// contain secrets or untrusted text. Failures to record are logged.
func (s *Server) AuditOwner(ctx context.Context, kind, grantID string, detail map[string]any) {
	clientID := ""
	if g, err := s.opts.Store.Grant(ctx, grantID); err == nil {
		clientID = g.ClientID
	}
	d := map[string]any{"by": "owner"}
	for k, v := range detail {
		d[k] = v
	}
	s.audit(ctx, kind, grantID, clientID, d)
}
