package cursor

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the FuzzDecode seed corpus under testdata/fuzz")

// fuzzSigned returns the cursors the fuzz codec signed: the only inputs
// FuzzDecode may ever accept. The codec's clock is fixed, so they stay
// valid forever and the seed files never go stale.
func fuzzSigned(c *Codec) []string {
	var out []string
	for _, cl := range []Claims{
		claim,
		{Kind: "output"},
		{Kind: "output", Resource: "out_1", Offset: 40000, Limit: 40000, Extra: map[string]string{"q": "a\x00b\"c"}},
	} {
		s, err := c.Encode(bindA, cl)
		if err != nil {
			panic(err)
		}
		out = append(out, s)
	}
	return out
}

func fuzzCodec() *Codec {
	return New(testKey, Options{Now: testutil.NewClock(t0).Now})
}

// fuzzSeeds are the seed inputs: the signed cursors and damaged variants.
func fuzzSeeds() []string {
	signed := fuzzSigned(fuzzCodec())
	v := signed[0]
	other, _ := New(otherKey, Options{Now: testutil.NewClock(t0).Now}).Encode(bindA, claim)
	foreign, _ := fuzzCodec().Encode(Binding{GrantID: "g"}, claim)
	wrongKind, _ := fuzzCodec().Encode(bindA, Claims{Kind: "changes"})
	seeds := append([]string(nil), signed...)
	return append(seeds,
		"", "dc1.", "dc1..", "dc1.e30.", "dc1.e30.AAAA", "dc2.e30.AAAA",
		v[:len(v)-1], v+".", v+"=", strings.Replace(v, ".", "..", 1),
		flip(v, len(Prefix)+2), flip(v, len(v)-2),
		other, foreign, wrongKind,
		strings.Repeat("A", 5000),
	)
}

func TestFuzzSeedCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	seeds := fuzzSeeds()
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, s := range seeds {
			body := "go test fuzz v1\nstring(" + strconv.Quote(s) + ")\n"
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read seed corpus (run with -update to create it): %v", err)
	}
	if len(entries) < len(seeds) {
		t.Errorf("seed corpus has %d files, want at least %d; run go test -run TestFuzzSeedCorpus -update", len(entries), len(seeds))
	}
	// The signed seeds must still verify, or the corpus stopped exercising
	// the accepting path.
	c := fuzzCodec()
	for _, s := range fuzzSigned(c) {
		if _, err := c.Decode(s, bindA, "output"); err != nil {
			t.Errorf("signed seed rejected: %v", err)
		}
	}
}

var sentinels = []error{ErrMalformed, ErrTampered, ErrExpired, ErrWrongKind,
	ErrForeignGrant, ErrForeignExecution, ErrForeignSession, ErrStaleEpoch}

// FuzzDecode checks that Decode never panics, fails only with a documented
// sentinel, and never accepts a string the codec did not sign.
func FuzzDecode(f *testing.F) {
	c := fuzzCodec()
	signed := map[string]bool{}
	for _, s := range fuzzSigned(c) {
		signed[s] = true
	}
	f.Fuzz(func(t *testing.T, s string) {
		cl, err := c.Decode(s, bindA, "output")
		if err == nil {
			if !signed[s] {
				t.Fatalf("Decode accepted a cursor it did not sign: %q -> %+v", s, cl)
			}
			return
		}
		for _, want := range sentinels {
			if errors.Is(err, want) {
				return
			}
		}
		t.Fatalf("Decode(%q) error %v matches no sentinel", s, err)
	})
}
