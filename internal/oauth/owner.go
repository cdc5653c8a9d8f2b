package oauth

import (
	"context"
	"time"
)

// CheckOwnerPassword verifies the Owner password for a page other than
// consent (the Owner's console), under the consent page's rules: the
// attempt is reserved before Argon2id runs (Limiter.Reserve, with the
// caller's keys: one attempt in flight per key, back-off after failures,
// the global bound on verifications), and a wrong password is audited as
// owner_password_failed with detail {"via": via}. It returns ok for the
// right password; a positive retryAfter (and ok false) when the attempt
// was refused without checking; and an error when the check itself
// failed. Safe for concurrent use.
func (s *Server) CheckOwnerPassword(ctx context.Context, password []byte, via string, keys ...string) (ok bool, retryAfter time.Duration, err error) {
	done, wait, allowed := s.opts.Limiter.Reserve(keys...)
	if !allowed {
		return false, max(wait, time.Second), nil
	}
	ok, err = s.verifyReserved(ctx, password, done)
	if err != nil {
		return false, 0, err
	}
	if !ok {
		s.audit(ctx, "owner_password_failed", "", "", map[string]any{"via": via})
	}
	return ok, 0, nil
}
