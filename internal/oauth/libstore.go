package oauth

import (
	"context"
	"errors"
	"math"
	"time"

	oauth2 "github.com/go-oauth2/oauth2/v4"
	"github.com/go-oauth2/oauth2/v4/models"

	"github.com/devspace-dev/devspace/internal/store"
)

// This file adapts our store to go-oauth2's ClientStore and TokenStore.
//
// The token endpoint (exchangeCode, refresh) owns every check of a
// presented code or refresh token, with Server.now. It hands the manager
// what it checked through the request context (checked); the adapters serve
// that instead of reading the database again, and refuse a code or refresh
// token that was not checked. What they serve cannot fail the manager's own
// comparisons: same client, same redirect URI, no PKCE challenge left to
// verify (exchangeCode verified it before anything could consume the code)
// and no expiry left to compare with time.Now. Create stamps every issued
// credential with Server.now, so the manager's clock decides nothing.

// checked is what the token endpoint established about a request before
// the manager runs: the authenticated client and the row of the presented
// code or refresh token, which passed every check.
type checked struct {
	client    *store.Client
	row       *store.Token
	presented string // the code or refresh token the client presented
}

type checkedKey struct{}

func withChecked(ctx context.Context, c *checked) context.Context {
	return context.WithValue(ctx, checkedKey{}, c)
}

func checkedFrom(ctx context.Context) *checked {
	c, _ := ctx.Value(checkedKey{}).(*checked)
	return c
}

// errUnchecked is returned when the manager asks for a code or refresh
// token the token endpoint did not check: a bug, answered as server_error.
var errUnchecked = errors.New("credential was not checked by the token endpoint")

// unexpiring is the code lifetime the manager sees: expiry was decided by
// exchangeCode with Server.now.
const unexpiring = time.Duration(math.MaxInt64)

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
type clientInfo struct {
	c             *store.Client
	authenticated bool // authenticateClient accepted it for this request
}

func (ci clientInfo) GetID() string     { return ci.c.ID }
func (ci clientInfo) GetSecret() string { return "" }
func (ci clientInfo) GetDomain() string { return "" }
func (ci clientInfo) IsPublic() bool    { return ci.c.AuthMethod == "none" }
func (ci clientInfo) GetUserID() string { return "" }

// VerifyPassword is the library asking, on the code exchange, whether the
// client authenticated. authenticateClient decided that; a client the
// token endpoint did not authenticate is refused.
func (ci clientInfo) VerifyPassword(string) bool { return ci.authenticated }

type clientStore struct{ st *store.Store }

// GetByID serves the client the token endpoint authenticated, or reads it.
func (cs clientStore) GetByID(ctx context.Context, id string) (oauth2.ClientInfo, error) {
	if c := checkedFrom(ctx); c != nil && c.client.ID == id {
		return clientInfo{c: c.client, authenticated: true}, nil
	}
	c, err := cs.st.Client(ctx, id)
	if err != nil {
		return nil, err
	}
	return clientInfo{c: c}, nil
}

type tokenStore struct {
	st       *store.Store
	resource string
	now      func() time.Time
}

func ptr(t time.Time) *time.Time { return &t }

func expiry(created time.Time, ttl time.Duration) *time.Time {
	if ttl <= 0 {
		return nil
	}
	return ptr(created.Add(ttl))
}

// Create stores a new issuance, stamped with Server.now (the manager's own
// timestamps are ignored; its lifetimes are kept). The grant ID travels in
// the library's UserID field. A pair issued for a checked code consumes
// the code in the same transaction; a pair rotated from a refresh token
// consumes the parent's refresh token the same way (single use,
// race-free).
func (ts tokenStore) Create(ctx context.Context, ti oauth2.TokenInfo) error {
	now := ts.now()
	t := &store.Token{GrantID: ti.GetUserID(), ClientID: ti.GetClientID(), Scope: ti.GetScope(),
		RedirectURI: ti.GetRedirectURI(), Resource: ts.resource}
	if code := ti.GetCode(); code != "" {
		t.CodeHash = hashSecret(code)
		t.CodeChallenge = ti.GetCodeChallenge()
		t.CodeChallengeMethod = ti.GetCodeChallengeMethod().String()
		t.CodeCreatedAt = ptr(now)
		t.CodeExpiresAt = expiry(now, ti.GetCodeExpiresIn())
	}
	if access := ti.GetAccess(); access != "" {
		t.AccessHash = hashSecret(access)
		t.AccessCreatedAt = ptr(now)
		t.AccessExpiresAt = expiry(now, ti.GetAccessExpiresIn())
	}
	if refresh := ti.GetRefresh(); refresh != "" {
		t.RefreshHash = hashSecret(refresh)
		t.RefreshCreatedAt = ptr(now)
		t.RefreshExpiresAt = expiry(now, ti.GetRefreshExpiresIn())
	}
	if lt, ok := ti.(*loadedToken); ok && lt.rowID != 0 {
		t.ParentID = lt.rowID
		t.GrantID = lt.grantID
		// The loaded value was replaced by the rotation; the new row must
		// not carry the parent's code.
		t.CodeHash = ""
		return ts.st.CreateToken(ctx, t)
	}
	if c := checkedFrom(ctx); c != nil && c.row.CodeHash != "" {
		return ts.st.ExchangeCode(ctx, c.row.ID, t)
	}
	return ts.st.CreateToken(ctx, t)
}

// RemoveByCode is a no-op: Create consumes the code in the transaction
// that stores what it was exchanged for.
func (ts tokenStore) RemoveByCode(context.Context, string) error { return nil }

// RemoveByAccess is a no-op: during a rotation Create already revoked the
// parent row (its access token included), and the library passes the old
// access value, which a hash-only store cannot know.
func (ts tokenStore) RemoveByAccess(context.Context, string) error { return nil }

// RemoveByRefresh is a no-op: Create already consumed the parent refresh
// token atomically, and a consumed token must stay on record for replay
// detection.
func (ts tokenStore) RemoveByRefresh(context.Context, string) error { return nil }

// GetByCode serves the code exchangeCode checked.
func (ts tokenStore) GetByCode(ctx context.Context, code string) (oauth2.TokenInfo, error) {
	c := checkedFrom(ctx)
	if c == nil || c.row.CodeHash == "" || c.presented != code {
		return nil, errUnchecked
	}
	lt := toLoaded(c.row)
	lt.SetCode(code)
	lt.SetCodeExpiresIn(unexpiring)
	lt.SetCodeChallenge("") // verified by exchangeCode before the manager ran
	lt.rowID = 0            // a code exchange creates a fresh pair, not a rotation
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

// GetByRefresh serves the refresh token refresh checked.
func (ts tokenStore) GetByRefresh(ctx context.Context, refresh string) (oauth2.TokenInfo, error) {
	c := checkedFrom(ctx)
	if c == nil || c.row.RefreshHash == "" || c.presented != refresh {
		return nil, errUnchecked
	}
	lt := toLoaded(c.row)
	lt.SetRefresh(refresh)
	lt.SetRefreshExpiresIn(0) // the library's "does not expire": refresh decided it with Server.now
	// The access value is unknown (only its hash is stored).
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
