package oauth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"
)

// pendingTTL is how long the Owner has between the authorization request
// and a correct password (step 1).
const pendingTTL = 10 * time.Minute

const prefixRequest = "req_"

// sealedRequest is the payload of a step-1 request token (see
// sealRequest).
type sealedRequest struct {
	ID            string   `json:"i"` // random: the request's rate-limit key
	ClientID      string   `json:"c"`
	ClientName    string   `json:"n,omitempty"`
	RedirectURI   string   `json:"r"`
	State         string   `json:"s,omitempty"`
	CodeChallenge string   `json:"p"`
	Scopes        []string `json:"o"`
	Created       int64    `json:"t"` // Unix nanoseconds
}

// newRequestKey returns a fresh key for sealing request tokens.
func newRequestKey() []byte {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never returns an error since Go 1.24
	return key
}

// sealRequest returns the step-1 token for the validated request req and
// gives req its ID. The token carries the request itself, as base64url JSON
// with an HMAC-SHA256 under a key made when the Server starts, instead of
// naming an entry in a map: authorization requests cost nothing to open,
// so any bounded map of them can be flushed by a flood that pushes out the
// Owner's request while they type the password. The MAC keeps the request
// as it was validated (client, redirect URI, PKCE challenge); a restart
// invalidates every token, as it emptied the map before.
func (s *Server) sealRequest(req *authRequest) string {
	req.id = randomID("")
	payload, _ := json.Marshal(sealedRequest{ID: req.id, ClientID: req.clientID, ClientName: req.clientName,
		RedirectURI: req.redirectURI, State: req.state, CodeChallenge: req.codeChallenge, Scopes: req.scopes,
		Created: req.created.UnixNano()})
	enc := base64.RawURLEncoding
	return prefixRequest + enc.EncodeToString(payload) + "." + enc.EncodeToString(s.requestMAC(payload))
}

// openRequest returns the request sealed in token, or nil when token was
// not sealed by this Server, is malformed or is older than pendingTTL.
func (s *Server) openRequest(token string) *authRequest {
	body, ok := strings.CutPrefix(token, prefixRequest)
	if !ok {
		return nil
	}
	p64, m64, ok := strings.Cut(body, ".")
	if !ok {
		return nil
	}
	enc := base64.RawURLEncoding
	payload, err := enc.DecodeString(p64)
	if err != nil {
		return nil
	}
	mac, err := enc.DecodeString(m64)
	if err != nil || !hmac.Equal(mac, s.requestMAC(payload)) {
		return nil
	}
	var sr sealedRequest
	if err := json.Unmarshal(payload, &sr); err != nil {
		return nil
	}
	req := &authRequest{id: sr.ID, clientID: sr.ClientID, clientName: sr.ClientName, redirectURI: sr.RedirectURI,
		state: sr.State, codeChallenge: sr.CodeChallenge, scopes: sr.Scopes, created: time.Unix(0, sr.Created)}
	if s.now().Sub(req.created) > pendingTTL {
		return nil
	}
	return req
}

func (s *Server) requestMAC(payload []byte) []byte {
	h := hmac.New(sha256.New, s.requestKey)
	h.Write(payload)
	return h.Sum(nil)
}
