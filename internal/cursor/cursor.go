// Package cursor signs and verifies the continuation cursors DevSpace hands
// to clients (instruction pages, show_changes pages, process output pages).
//
// A cursor is
//
//	dc1.<base64url(JSON payload)>.<base64url(HMAC-SHA256(macKey, "dc1."+<payload segment>))>
//
// with unpadded base64url segments and at most MaxLen bytes in all. The MAC
// covers the exact text of the payload segment, so a cursor is accepted only
// byte for byte as it was issued.
//
// The payload is readable by the client. It therefore never holds a raw
// internal ID: the grant, authorization epoch, execution and session the
// cursor is bound to are stored as separate keyed digests, so Decode can say
// precisely which of them differs (ErrForeignGrant, ErrStaleEpoch,
// ErrForeignExecution, ErrForeignSession) without revealing any of them.
// Claims are stored as given: callers put only client-visible values (refs,
// hashes, offsets) in them.
package cursor

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/devspace-dev/devspace/internal/fault"
)

// Prefix starts every cursor of this format version. A later format gets a
// new prefix; Decode rejects every other prefix as ErrMalformed.
const Prefix = "dc1."

// Defaults used when the corresponding Options field is zero (docs/design.md §9).
const (
	DefaultTTL    = 30 * time.Minute
	DefaultMaxLen = 4096
)

// MinKeyLen is the shortest key New accepts.
const MinKeyLen = 32

// digestLen is the length in bytes of a binding digest (22 base64url
// characters). Digests only tell bindings apart; forgery is prevented by the
// MAC over the whole payload.
const digestLen = 16

// Errors returned by Encode and Decode. The cursor package owns them, each
// with its tool error code (cursor_invalid, cursor_expired, cursor_foreign,
// …). Decode returns them wrapped with a short detail, which the client is
// shown with cursor_invalid; test them with errors.Is. None of them ever
// carries the cursor, a key or a bound ID.
var (
	// ErrMalformed: not a cursor of this format: oversized, wrong prefix,
	// wrong number of segments, bad base64url, or a payload that is not the
	// exact JSON this package writes.
	ErrMalformed = fault.New("cursor_invalid", "malformed cursor")
	// ErrTampered: well-formed, but the MAC does not match: the cursor was
	// altered or signed with another key (for example before a key rotation).
	ErrTampered = fault.New("cursor_invalid", "cursor signature mismatch")
	// ErrExpired: authentic, but older than its TTL.
	ErrExpired = fault.New("cursor_expired", "cursor expired")
	// ErrForeignGrant: authentic, but issued to another grant.
	ErrForeignGrant = fault.New("cursor_foreign", "cursor belongs to another grant")
	// ErrStaleEpoch: authentic and for this grant, but issued under another
	// authorization epoch.
	ErrStaleEpoch = fault.New("cursor_expired", "cursor authorization epoch is stale")
	// ErrForeignExecution: authentic, but issued for another execution.
	ErrForeignExecution = fault.New("cursor_foreign", "cursor belongs to another execution")
	// ErrForeignSession: authentic, but issued to another session.
	ErrForeignSession = fault.New("cursor_foreign", "cursor belongs to another session")
	// ErrWrongKind: authentic and bound to the caller, but issued by another
	// tool or listing (for example an output cursor given to show_changes).
	ErrWrongKind = fault.New("cursor_wrong_kind", "cursor is for another kind of listing")
	// ErrTooLong is returned by Encode when the cursor would exceed MaxLen.
	ErrTooLong = fault.New("cursor_invalid", "cursor too long")
)

// Binding identifies who a cursor was issued to. Every field must match
// exactly for Decode to accept the cursor; an empty field matches only an
// empty field. The values are never written into the cursor.
type Binding struct {
	GrantID     string
	Epoch       int64 // the grant's authorization epoch
	ExecutionID string
	SessionRef  string
}

// Claims is what a cursor carries back to the server. Every field is
// visible to the client; Kind is required.
type Claims struct {
	Kind      string            // e.g. "instructions", "changes", "output"
	Resource  string            // what is being paged, as the client knows it (a ref or relative path)
	Revision  string            // version of Resource the pages were computed against
	QueryHash string            // hash of the query parameters the pages belong to
	Offset    int64             // where the next page starts
	Limit     int               // page size
	Extra     map[string]string // kind-specific parameters; nil when none
}

// Options tune a Codec. The zero value is the production default.
type Options struct {
	// TTL is how long an issued cursor stays valid. Zero means DefaultTTL.
	TTL time.Duration
	// MaxLen bounds the encoded length in bytes. Zero means DefaultMaxLen.
	MaxLen int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Codec encodes and decodes cursors under one key. It is immutable and safe
// for concurrent use.
type Codec struct {
	macKey    []byte
	bindKey   []byte
	ttl       time.Duration
	maxLen    int
	now       func() time.Time
	b64Strict *base64.Encoding
}

// New returns a Codec keyed by key (at least MinKeyLen bytes, typically
// authstate's Derive("cursor-hmac")); the slice is not retained. Two
// independent subkeys are derived from it, one for the MAC and one for the
// binding digests. New panics on a short key: that is a wiring bug, and a
// weak key must never sign anything.
func New(key []byte, opts Options) *Codec {
	if len(key) < MinKeyLen {
		panic("cursor: key shorter than " + strconv.Itoa(MinKeyLen) + " bytes")
	}
	c := &Codec{
		macKey:    subkey(key, "devspace/cursor/mac"),
		bindKey:   subkey(key, "devspace/cursor/binding"),
		ttl:       opts.TTL,
		maxLen:    opts.MaxLen,
		now:       opts.Now,
		b64Strict: base64.RawURLEncoding.Strict(),
	}
	if c.ttl <= 0 {
		c.ttl = DefaultTTL
	}
	if c.maxLen <= 0 {
		c.maxLen = DefaultMaxLen
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}

func subkey(key []byte, label string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(label))
	return m.Sum(nil)
}

// payload is the JSON inside a cursor. Short names keep cursors small.
type payload struct {
	Kind      string            `json:"k"`
	Resource  string            `json:"r,omitempty"`
	Revision  string            `json:"v,omitempty"`
	QueryHash string            `json:"q,omitempty"`
	Offset    int64             `json:"o,omitempty"`
	Limit     int               `json:"n,omitempty"`
	Extra     map[string]string `json:"x,omitempty"`
	Grant     string            `json:"g"`
	Epoch     string            `json:"e"`
	Execution string            `json:"xe"`
	Session   string            `json:"s"`
	Expires   int64             `json:"exp"` // Unix seconds
}

// digests of one Binding; each field is domain-separated so equal values in
// different roles give different digests.
type digests struct{ grant, epoch, execution, session string }

func (c *Codec) digests(b Binding) digests {
	return digests{
		grant:     c.digest("grant", b.GrantID),
		epoch:     c.digest("epoch", b.GrantID+"\x00"+strconv.FormatInt(b.Epoch, 10)),
		execution: c.digest("execution", b.ExecutionID),
		session:   c.digest("session", b.SessionRef),
	}
}

func (c *Codec) digest(role, value string) string {
	m := hmac.New(sha256.New, c.bindKey)
	m.Write([]byte(role))
	m.Write([]byte{0})
	m.Write([]byte(value))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:digestLen])
}

func (c *Codec) mac(signed string) []byte {
	m := hmac.New(sha256.New, c.macKey)
	m.Write([]byte(signed))
	return m.Sum(nil)
}

// Encode returns a cursor carrying cl, bound to b and valid for the Codec's
// TTL. It fails when cl.Kind is empty and with ErrTooLong when the result
// would exceed MaxLen (keep Extra and Resource short).
func (c *Codec) Encode(b Binding, cl Claims) (string, error) {
	if cl.Kind == "" {
		return "", errors.New("cursor: empty kind")
	}
	d := c.digests(b)
	p := payload{
		Kind: cl.Kind, Resource: cl.Resource, Revision: cl.Revision, QueryHash: cl.QueryHash,
		Offset: cl.Offset, Limit: cl.Limit, Extra: cl.Extra,
		Grant: d.grant, Epoch: d.epoch, Execution: d.execution, Session: d.session,
		Expires: c.now().Add(c.ttl).Unix(),
	}
	if len(p.Extra) == 0 {
		p.Extra = nil
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("cursor: encode payload: %w", err)
	}
	signed := Prefix + base64.RawURLEncoding.EncodeToString(raw)
	s := signed + "." + base64.RawURLEncoding.EncodeToString(c.mac(signed))
	if len(s) > c.maxLen {
		return "", fmt.Errorf("%w: %d bytes, limit %d", ErrTooLong, len(s), c.maxLen)
	}
	return s, nil
}

// Decode verifies s and returns its claims when s was issued by a Codec
// with the same key, has not expired, is bound to exactly b and has the
// given kind. Checks run in this order, and the first failure is returned:
// size and format (ErrMalformed), MAC (ErrTampered), payload JSON
// (ErrMalformed; only authentic payloads are parsed), expiry (ErrExpired),
// binding (ErrForeignGrant, ErrStaleEpoch, ErrForeignExecution,
// ErrForeignSession, in that order) and kind (ErrWrongKind).
func (c *Codec) Decode(s string, b Binding, kind string) (Claims, error) {
	if len(s) > c.maxLen {
		return Claims{}, fmt.Errorf("%w: longer than %d bytes", ErrMalformed, c.maxLen)
	}
	rest, ok := strings.CutPrefix(s, Prefix)
	if !ok {
		return Claims{}, fmt.Errorf("%w: unknown version prefix", ErrMalformed)
	}
	seg, macSeg, ok := strings.Cut(rest, ".")
	if !ok || seg == "" || macSeg == "" {
		return Claims{}, fmt.Errorf("%w: want 3 segments", ErrMalformed)
	}
	// The base64 decoder skips CR and LF; checking the alphabet first makes
	// the accepted text unique, so only the exact issued string verifies.
	if !isBase64URL(seg) || !isBase64URL(macSeg) {
		return Claims{}, fmt.Errorf("%w: bad segment characters", ErrMalformed)
	}
	raw, err := c.b64Strict.DecodeString(seg)
	if err != nil {
		return Claims{}, fmt.Errorf("%w: payload encoding", ErrMalformed)
	}
	gotMAC, err := c.b64Strict.DecodeString(macSeg)
	if err != nil || len(gotMAC) != sha256.Size {
		return Claims{}, fmt.Errorf("%w: signature encoding", ErrMalformed)
	}
	if !hmac.Equal(gotMAC, c.mac(Prefix+seg)) {
		return Claims{}, ErrTampered
	}
	p, err := parsePayload(raw)
	if err != nil {
		return Claims{}, err
	}
	if !c.now().Before(time.Unix(p.Expires, 0)) {
		return Claims{}, ErrExpired
	}
	d := c.digests(b)
	switch {
	case !hmac.Equal([]byte(p.Grant), []byte(d.grant)):
		return Claims{}, ErrForeignGrant
	case !hmac.Equal([]byte(p.Epoch), []byte(d.epoch)):
		return Claims{}, ErrStaleEpoch
	case !hmac.Equal([]byte(p.Execution), []byte(d.execution)):
		return Claims{}, ErrForeignExecution
	case !hmac.Equal([]byte(p.Session), []byte(d.session)):
		return Claims{}, ErrForeignSession
	}
	if p.Kind != kind {
		return Claims{}, ErrWrongKind
	}
	return Claims{Kind: p.Kind, Resource: p.Resource, Revision: p.Revision, QueryHash: p.QueryHash,
		Offset: p.Offset, Limit: p.Limit, Extra: p.Extra}, nil
}

// parsePayload decodes raw strictly: unknown fields and trailing data are
// rejected, and raw must be byte for byte what Encode would write for the
// decoded value (no duplicate or case-variant keys, no extra whitespace).
func parsePayload(raw []byte) (payload, error) {
	var p payload
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return payload{}, fmt.Errorf("%w: payload json", ErrMalformed)
	}
	if _, err := dec.Token(); err != io.EOF {
		return payload{}, fmt.Errorf("%w: trailing data", ErrMalformed)
	}
	canon, err := json.Marshal(p)
	if err != nil || !bytes.Equal(canon, raw) {
		return payload{}, fmt.Errorf("%w: non-canonical payload", ErrMalformed)
	}
	return p, nil
}

func isBase64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case 'A' <= ch && ch <= 'Z', 'a' <= ch && ch <= 'z', '0' <= ch && ch <= '9', ch == '-', ch == '_':
		default:
			return false
		}
	}
	return true
}
