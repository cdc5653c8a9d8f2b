package cursor

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/devspace-dev/devspace/internal/testutil"
)

var (
	testKey  = bytes.Repeat([]byte{0x42}, 32)
	otherKey = bytes.Repeat([]byte{0x43}, 32)
	t0       = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
)

func newCodec(t *testing.T, key []byte) (*Codec, *testutil.Clock) {
	t.Helper()
	clk := testutil.NewClock(t0)
	return New(key, Options{Now: clk.Now}), clk
}

var (
	bindA = Binding{GrantID: "grant-0123456789", Epoch: 3, ExecutionID: "exec-abcdefghij", SessionRef: "sess-ref-zyxwvut"}
	claim = Claims{Kind: "output", Resource: "out_42", Revision: "r7", QueryHash: "sha256:ab", Offset: 4096, Limit: 100,
		Extra: map[string]string{"mode": "tail", "search": "needle"}}
)

func mustEncode(t *testing.T, c *Codec, b Binding, cl Claims) string {
	t.Helper()
	s, err := c.Encode(b, cl)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	return s
}

func TestRoundTrip(t *testing.T) {
	c, _ := newCodec(t, testKey)
	for _, cl := range []Claims{
		claim,
		{Kind: "instructions"},
		{Kind: "changes", Resource: "src/ä/ü.go", Offset: 1 << 40, Limit: -1},
	} {
		s := mustEncode(t, c, bindA, cl)
		if !strings.HasPrefix(s, Prefix) || strings.Count(s, ".") != 2 {
			t.Fatalf("cursor %q does not have the dc1.<payload>.<mac> shape", s)
		}
		got, err := c.Decode(s, bindA, cl.Kind)
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		if diff := cmp.Diff(cl, got); diff != "" {
			t.Errorf("claims mismatch (-want +got):\n%s", diff)
		}
	}
}

func TestEmptyExtraDecodesNil(t *testing.T) {
	c, _ := newCodec(t, testKey)
	s := mustEncode(t, c, bindA, Claims{Kind: "output", Extra: map[string]string{}})
	got, err := c.Decode(s, bindA, "output")
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if got.Extra != nil {
		t.Errorf("Extra = %#v, want nil", got.Extra)
	}
}

func TestEncodeErrors(t *testing.T) {
	c, _ := newCodec(t, testKey)
	if _, err := c.Encode(bindA, Claims{}); err == nil {
		t.Error("Encode with empty kind succeeded")
	}
	big := Claims{Kind: "output", Resource: strings.Repeat("r", DefaultMaxLen)}
	if _, err := c.Encode(bindA, big); !errors.Is(err, ErrTooLong) {
		t.Errorf("Encode oversized: err = %v, want ErrTooLong", err)
	}
	small := New(testKey, Options{MaxLen: 100})
	if _, err := small.Encode(bindA, claim); !errors.Is(err, ErrTooLong) {
		t.Errorf("Encode over MaxLen 100: err = %v, want ErrTooLong", err)
	}
}

func TestNewPanicsOnShortKey(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New with a 16-byte key did not panic")
		}
	}()
	New(make([]byte, 16), Options{})
}

// flip returns s with one bit of the byte at i changed, keeping it in the
// base64url alphabet so the failure is the MAC, not the format.
func flip(s string, i int) string {
	b := []byte(s)
	switch b[i] {
	case 'A':
		b[i] = 'B'
	default:
		b[i] = 'A'
	}
	return string(b)
}

func TestDecodeErrors(t *testing.T) {
	c, _ := newCodec(t, testKey)
	valid := mustEncode(t, c, bindA, claim)
	payloadSeg := strings.Split(valid, ".")[1]
	macStart := len(Prefix) + len(payloadSeg) + 1
	other := New(otherKey, Options{Now: testutil.NewClock(t0).Now})

	tests := []struct {
		name string
		in   string
		b    Binding
		kind string
		want error
	}{
		{"empty", "", bindA, "output", ErrMalformed},
		{"no prefix", strings.TrimPrefix(valid, Prefix), bindA, "output", ErrMalformed},
		{"wrong version", "dc2." + strings.TrimPrefix(valid, Prefix), bindA, "output", ErrMalformed},
		{"uppercase prefix", "DC1." + strings.TrimPrefix(valid, Prefix), bindA, "output", ErrMalformed},
		{"missing mac", Prefix + payloadSeg, bindA, "output", ErrMalformed},
		{"empty mac", Prefix + payloadSeg + ".", bindA, "output", ErrMalformed},
		{"empty payload", Prefix + "." + valid[macStart:], bindA, "output", ErrMalformed},
		{"extra dot", valid + ".", bindA, "output", ErrMalformed},
		{"extra segment", valid + ".AAAA", bindA, "output", ErrMalformed},
		{"dot inside payload", Prefix + payloadSeg[:5] + "." + payloadSeg[5:] + "." + valid[macStart:], bindA, "output", ErrMalformed},
		{"truncated mac", valid[:len(valid)-1], bindA, "output", ErrMalformed},
		{"truncated payload", Prefix + payloadSeg[:len(payloadSeg)-4] + "." + valid[macStart:], bindA, "output", ErrMalformed},
		{"spliced payload", Prefix + strings.Split(mustEncode(t, c, bindA, Claims{Kind: "output"}), ".")[1] + "." + valid[macStart:], bindA, "output", ErrTampered},
		{"truncated to prefix", Prefix, bindA, "output", ErrMalformed},
		{"standard base64 chars", strings.Replace(valid, payloadSeg[:1], "+", 1), bindA, "output", ErrMalformed},
		{"padding", valid + "=", bindA, "output", ErrMalformed},
		{"newline in mac", valid[:macStart+4] + "\n" + valid[macStart+4:], bindA, "output", ErrMalformed},
		{"5 KB", valid + strings.Repeat("A", 5*1024), bindA, "output", ErrMalformed},
		{"5 KB garbage", strings.Repeat("x", 5*1024), bindA, "output", ErrMalformed},
		{"flipped bit in payload", flip(valid, len(Prefix)+3), bindA, "output", ErrTampered},
		{"flipped bit in mac", flip(valid, macStart+3), bindA, "output", ErrTampered},
		{"other key", mustEncode(t, other, bindA, claim), bindA, "output", ErrTampered},
		{"foreign grant", valid, Binding{GrantID: "grant-other", Epoch: 3, ExecutionID: bindA.ExecutionID, SessionRef: bindA.SessionRef}, "output", ErrForeignGrant},
		{"stale epoch", valid, Binding{GrantID: bindA.GrantID, Epoch: 4, ExecutionID: bindA.ExecutionID, SessionRef: bindA.SessionRef}, "output", ErrStaleEpoch},
		{"foreign execution", valid, Binding{GrantID: bindA.GrantID, Epoch: 3, ExecutionID: "exec-other", SessionRef: bindA.SessionRef}, "output", ErrForeignExecution},
		{"foreign session", valid, Binding{GrantID: bindA.GrantID, Epoch: 3, ExecutionID: bindA.ExecutionID, SessionRef: "sess-other"}, "output", ErrForeignSession},
		{"empty binding", valid, Binding{}, "output", ErrForeignGrant},
		{"wrong kind", valid, bindA, "changes", ErrWrongKind},
		{"empty kind", valid, bindA, "", ErrWrongKind},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.Decode(tt.in, tt.b, tt.kind)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Decode err = %v, want %v", err, tt.want)
			}
			if diff := cmp.Diff(Claims{}, got); diff != "" {
				t.Errorf("Decode returned claims on error (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBindingCheckOrder shows that each mismatch is reported precisely: the
// first differing field in the order grant, epoch, execution, session.
func TestBindingCheckOrder(t *testing.T) {
	c, _ := newCodec(t, testKey)
	valid := mustEncode(t, c, bindA, claim)
	b := Binding{GrantID: "g2", Epoch: 9, ExecutionID: "e2", SessionRef: "s2"}
	for _, want := range []error{ErrForeignGrant, ErrStaleEpoch, ErrForeignExecution, ErrForeignSession, nil} {
		_, err := c.Decode(valid, b, "output")
		if !errors.Is(err, want) && !(want == nil && err == nil) {
			t.Fatalf("binding %+v: err = %v, want %v", b, err, want)
		}
		switch want {
		case ErrForeignGrant:
			b.GrantID = bindA.GrantID
		case ErrStaleEpoch:
			b.Epoch = bindA.Epoch
		case ErrForeignExecution:
			b.ExecutionID = bindA.ExecutionID
		case ErrForeignSession:
			b.SessionRef = bindA.SessionRef
		}
	}
}

// TestCheckOrder: MAC before expiry, expiry before binding, binding before
// kind.
func TestCheckOrder(t *testing.T) {
	c, clk := newCodec(t, testKey)
	valid := mustEncode(t, c, bindA, claim)
	foreign := Binding{GrantID: "other"}

	clk.Set(t0.Add(time.Hour))
	if _, err := c.Decode(flip(valid, len(Prefix)+3), foreign, "changes"); !errors.Is(err, ErrTampered) {
		t.Errorf("tampered, expired, foreign, wrong kind: err = %v, want ErrTampered", err)
	}
	if _, err := c.Decode(valid, foreign, "changes"); !errors.Is(err, ErrExpired) {
		t.Errorf("expired, foreign, wrong kind: err = %v, want ErrExpired", err)
	}
	clk.Set(t0)
	if _, err := c.Decode(valid, foreign, "changes"); !errors.Is(err, ErrForeignGrant) {
		t.Errorf("foreign, wrong kind: err = %v, want ErrForeignGrant", err)
	}
}

func TestExpiry(t *testing.T) {
	tests := []struct {
		name    string
		ttl     time.Duration
		elapsed time.Duration
		want    error
	}{
		{"fresh", 0, 0, nil},
		{"just before default ttl", 0, DefaultTTL - time.Second, nil},
		{"at default ttl", 0, DefaultTTL, ErrExpired},
		{"after default ttl", 0, DefaultTTL + time.Hour, ErrExpired},
		{"custom ttl", time.Minute, 2 * time.Minute, ErrExpired},
		{"within custom ttl", time.Minute, 30 * time.Second, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := testutil.NewClock(t0)
			c := New(testKey, Options{TTL: tt.ttl, Now: clk.Now})
			s := mustEncode(t, c, bindA, claim)
			clk.Set(t0.Add(tt.elapsed))
			_, err := c.Decode(s, bindA, "output")
			if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Errorf("Decode after %v: err = %v, want %v", tt.elapsed, err, tt.want)
			}
		})
	}
}

func TestKeyRotation(t *testing.T) {
	old, _ := newCodec(t, testKey)
	rotated, _ := newCodec(t, otherKey)
	s := mustEncode(t, old, bindA, claim)
	if _, err := rotated.Decode(s, bindA, "output"); !errors.Is(err, ErrTampered) {
		t.Errorf("Decode with rotated key: err = %v, want ErrTampered", err)
	}
	if _, err := old.Decode(s, bindA, "output"); err != nil {
		t.Errorf("Decode with original key: %v", err)
	}
}

func TestPayloadHidesIDs(t *testing.T) {
	c, _ := newCodec(t, testKey)
	b := Binding{GrantID: "grant_SECRET_1", Epoch: 987654321, ExecutionID: "exec_SECRET_2", SessionRef: "session_SECRET_3"}
	s := mustEncode(t, c, b, Claims{Kind: "output"})
	raw, err := base64.RawURLEncoding.DecodeString(strings.Split(s, ".")[1])
	if err != nil {
		t.Fatalf("decode payload segment: %v", err)
	}
	for _, id := range []string{b.GrantID, "987654321", b.ExecutionID, b.SessionRef, "SECRET"} {
		if bytes.Contains(raw, []byte(id)) || strings.Contains(s, id) {
			t.Errorf("cursor payload %s contains %q", raw, id)
		}
	}
}

// TestNonCanonicalPayloadRejected signs payloads this package would never
// write, as if the key had been used by a buggy or older encoder: they are
// authentic but still rejected as malformed.
func TestNonCanonicalPayloadRejected(t *testing.T) {
	c, _ := newCodec(t, testKey)
	d := c.digests(bindA)
	exp := t0.Add(time.Minute).Unix()
	base := `"g":"` + d.grant + `","e":"` + d.epoch + `","xe":"` + d.execution + `","s":"` + d.session + `","exp":` + strconv.FormatInt(exp, 10)
	sign := func(js string) string {
		signed := Prefix + base64.RawURLEncoding.EncodeToString([]byte(js))
		return signed + "." + base64.RawURLEncoding.EncodeToString(c.mac(signed))
	}
	if _, err := c.Decode(sign(`{"k":"output",`+base+`}`), bindA, "output"); err != nil {
		t.Fatalf("canonical hand-made payload rejected: %v", err)
	}
	for name, js := range map[string]string{
		"unknown field":  `{"k":"output",` + base + `,"zz":1}`,
		"duplicate key":  `{"k":"output","k":"output",` + base + `}`,
		"case variant":   `{"K":"output",` + base + `}`,
		"whitespace":     `{ "k":"output",` + base + `}`,
		"trailing data":  `{"k":"output",` + base + `}{}`,
		"not an object":  `[]`,
		"not json":       `not json`,
		"empty extra":    `{"k":"output","x":{},` + base + `}`,
		"wrong type":     `{"k":1,` + base + `}`,
		"trailing space": `{"k":"output",` + base + `} `,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := c.Decode(sign(js), bindA, "output"); !errors.Is(err, ErrMalformed) {
				t.Errorf("Decode(%s): err = %v, want ErrMalformed", js, err)
			}
		})
	}
}
