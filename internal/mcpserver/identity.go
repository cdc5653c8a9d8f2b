package mcpserver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Host metadata keys (ChatGPT). They route a call to the right binding but
// never grant authority; only their HMACs are stored.
const (
	metaSession      = "openai/session"
	metaSubject      = "openai/subject"
	metaOrganization = "openai/organization"
)

// identity derives the session and Actor references of a call. Session:
// HMAC of openai/session, else of the MCP session ID (stateful transports);
// "" when neither exists. Actor: HMAC of openai/subject+organization, else
// of the grant's client ID.
func (s *Server) identity(req *mcp.CallToolRequest, clientID string) (sessionRef, actorRef string) {
	meta := req.Params.Meta
	if v := metaString(meta, metaSession); v != "" {
		sessionRef = s.hmacRef("openai-session", v)
	} else if req.Session != nil && req.Session.ID() != "" {
		sessionRef = s.hmacRef("mcp-session", req.Session.ID())
	}
	if sub := metaString(meta, metaSubject); sub != "" {
		actorRef = s.hmacRef("openai-actor", sub+"\x00"+metaString(meta, metaOrganization))
	} else {
		actorRef = s.hmacRef("client", clientID)
	}
	return sessionRef, actorRef
}

func metaString(m mcp.Meta, k string) string {
	if m == nil {
		return ""
	}
	v, _ := m[k].(string)
	if len(v) > 1024 {
		v = v[:1024]
	}
	return v
}

func (s *Server) hmacRef(kind, v string) string {
	m := hmac.New(sha256.New, s.opts.IdentityKey)
	m.Write([]byte(kind))
	m.Write([]byte{0})
	m.Write([]byte(v))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:18])
}
