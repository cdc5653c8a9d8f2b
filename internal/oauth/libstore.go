package oauth

import (
	"context"
	"errors"
	"time"

	oauth2 "github.com/go-oauth2/oauth2/v4"
	"github.com/go-oauth2/oauth2/v4/models"

	"github.com/devspace-dev/devspace/internal/store"
)

// This file adapts our store to go-oauth2's ClientStore and TokenStore.
// The library compares the value it loaded with the value presented, so a
// store that keeps only hashes must put the presented value back into the
// TokenInfo it returns: the lookup is by hash, hence the value is correct.

// loadedToken is what the adapter returns: the library's model plus the row
// it came from, so that a refresh rotation can consume its parent
// atomically when the library calls Create.
type loadedToken struct {
	*models.Token
	rowID    int64
	grantID  string
	resource string
}

// clientInfo implements oauth2.ClientInfo and ClientPasswordVerifier over a
// stored client (secret kept as a hash).
type clientInfo struct{ c *store.Client }

func (ci clientInfo) GetID() string     { return ci.c.ID }
func (ci clientInfo) GetSecret() string { return "" }
func (ci clientInfo) GetDomain() string { return "" }
func (ci clientInfo) IsPublic() bool    { return ci.c.AuthMethod == "none" }
func (ci clientInfo) GetUserID() string { return "" }

// VerifyPassword is called by the library on the code exchange. Client
// authentication was already enforced by authenticateClient; a public client
// may omit its secret, and a presented secret must match.
func (ci clientInfo) VerifyPassword(secret string) bool {
	if secret == "" {
		return ci.c.AuthMethod == "none"
	}
	return secretMatches(secret, ci.c.SecretHash)
}

type clientStore struct{ st *store.Store }

func (cs clientStore) GetByID(ctx context.Context, id string) (oauth2.ClientInfo, error) {
	c, err := cs.st.Client(ctx, id)
	if err != nil {
		return nil, err
	}
	return clientInfo{c}, nil
}

type tokenStore struct {
	st       *store.Store
	resource string
}

func ptr(t time.Time) *time.Time { return &t }

func expiry(created time.Time, ttl time.Duration) *time.Time {
	if ttl <= 0 {
		return nil
	}
	return ptr(created.Add(ttl))
}

// Create stores a new issuance. The grant ID travels in the library's UserID
// field. When ti was loaded from a refresh token, the parent's refresh token
// is consumed in the same transaction (single use, race-free).
func (ts tokenStore) Create(ctx context.Context, ti oauth2.TokenInfo) error {
	t := &store.Token{GrantID: ti.GetUserID(), ClientID: ti.GetClientID(), Scope: ti.GetScope(),
		RedirectURI: ti.GetRedirectURI(), Resource: ts.resource}
	if code := ti.GetCode(); code != "" {
		t.CodeHash = hashSecret(code)
		t.CodeChallenge = ti.GetCodeChallenge()
		t.CodeChallengeMethod = ti.GetCodeChallengeMethod().String()
		t.CodeCreatedAt = ptr(ti.GetCodeCreateAt())
		t.CodeExpiresAt = expiry(ti.GetCodeCreateAt(), ti.GetCodeExpiresIn())
	}
	if access := ti.GetAccess(); access != "" {
		t.AccessHash = hashSecret(access)
		t.AccessCreatedAt = ptr(ti.GetAccessCreateAt())
		t.AccessExpiresAt = expiry(ti.GetAccessCreateAt(), ti.GetAccessExpiresIn())
	}
	if refresh := ti.GetRefresh(); refresh != "" {
		t.RefreshHash = hashSecret(refresh)
		t.RefreshCreatedAt = ptr(ti.GetRefreshCreateAt())
		t.RefreshExpiresAt = expiry(ti.GetRefreshCreateAt(), ti.GetRefreshExpiresIn())
	}
	if lt, ok := ti.(*loadedToken); ok && lt.rowID != 0 {
		t.ParentID = lt.rowID
		t.GrantID = lt.grantID
		// The loaded value was replaced by the rotation; the new row must
		// not carry the parent's code.
		t.CodeHash = ""
	}
	return ts.st.CreateToken(ctx, t)
}

// RemoveByCode consumes the code: exactly one exchange wins.
func (ts tokenStore) RemoveByCode(ctx context.Context, code string) error {
	return ts.st.ConsumeCode(ctx, hashSecret(code))
}

// RemoveByAccess is a no-op: during a rotation Create already revoked the
// parent row (its access token included), and the library passes the old
// access value, which a hash-only store cannot know.
func (ts tokenStore) RemoveByAccess(context.Context, string) error { return nil }

// RemoveByRefresh is a no-op: Create already consumed the parent refresh
// token atomically, and a consumed token must stay on record for replay
// detection.
func (ts tokenStore) RemoveByRefresh(context.Context, string) error { return nil }

func (ts tokenStore) GetByCode(ctx context.Context, code string) (oauth2.TokenInfo, error) {
	t, err := ts.st.TokenByCodeHash(ctx, hashSecret(code))
	if err != nil {
		return nil, libNotFound(err)
	}
	if t.CodeConsumedAt != nil || t.RevokedAt != nil {
		return nil, store.ErrConsumed
	}
	lt := toLoaded(t)
	lt.SetCode(code)
	lt.rowID = 0 // a code exchange creates a fresh pair, not a rotation
	return lt, nil
}

func (ts tokenStore) GetByAccess(ctx context.Context, access string) (oauth2.TokenInfo, error) {
	t, err := ts.st.TokenByAccessHash(ctx, hashSecret(access))
	if err != nil {
		return nil, libNotFound(err)
	}
	if t.RevokedAt != nil {
		return nil, nil
	}
	lt := toLoaded(t)
	lt.SetAccess(access)
	return lt, nil
}

func (ts tokenStore) GetByRefresh(ctx context.Context, refresh string) (oauth2.TokenInfo, error) {
	t, err := ts.st.TokenByRefreshHash(ctx, hashSecret(refresh))
	if err != nil {
		return nil, libNotFound(err)
	}
	if t.RefreshConsumedAt != nil {
		return nil, store.ErrConsumed
	}
	if t.RevokedAt != nil {
		return nil, nil
	}
	lt := toLoaded(t)
	lt.SetRefresh(refresh)
	// The access value is unknown (only its hash is stored); keep a marker
	// so RemoveByAccess can find the row by hash.
	lt.SetAccess("")
	return lt, nil
}

// libNotFound maps our ErrNotFound to the library's "nothing" (nil, nil),
// which it turns into the right invalid_grant error.
func libNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

func toLoaded(t *store.Token) *loadedToken {
	m := models.NewToken()
	m.SetClientID(t.ClientID)
	m.SetUserID(t.GrantID)
	m.SetRedirectURI(t.RedirectURI)
	m.SetScope(t.Scope)
	m.SetCodeChallenge(t.CodeChallenge)
	m.SetCodeChallengeMethod(oauth2.CodeChallengeMethod(t.CodeChallengeMethod))
	if t.CodeCreatedAt != nil {
		m.SetCodeCreateAt(*t.CodeCreatedAt)
		if t.CodeExpiresAt != nil {
			m.SetCodeExpiresIn(t.CodeExpiresAt.Sub(*t.CodeCreatedAt))
		}
	}
	if t.AccessCreatedAt != nil {
		m.SetAccessCreateAt(*t.AccessCreatedAt)
		if t.AccessExpiresAt != nil {
			m.SetAccessExpiresIn(t.AccessExpiresAt.Sub(*t.AccessCreatedAt))
		}
	}
	if t.RefreshCreatedAt != nil {
		m.SetRefreshCreateAt(*t.RefreshCreatedAt)
		if t.RefreshExpiresAt != nil {
			m.SetRefreshExpiresIn(t.RefreshExpiresAt.Sub(*t.RefreshCreatedAt))
		}
	}
	return &loadedToken{Token: m, rowID: t.ID, grantID: t.GrantID, resource: t.Resource}
}

var (
	_ oauth2.ClientStore            = clientStore{}
	_ oauth2.TokenStore             = tokenStore{}
	_ oauth2.ClientPasswordVerifier = clientInfo{}
)
