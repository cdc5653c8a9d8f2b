package edits

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/devspace-dev/devspace/internal/idempotency"
	"github.com/devspace-dev/devspace/internal/patch"
)

func TestPreconditions(t *testing.T) {
	const h = "sha256:" + "ab"
	one, two := []string{"a.txt"}, []string{"a.txt", "b.txt"}
	for _, tc := range []struct {
		name    string
		ifMatch string
		paths   []string
		want    map[string]patch.Precondition
		err     error
	}{
		{"absent", ``, two, map[string]patch.Precondition{}, nil},
		{"hash for one path", `"` + h + `"`, one, map[string]patch.Precondition{"a.txt": {Set: true, ContentHash: h}}, nil},
		{"version for one path", `{"contentHash":"` + h + `","mtimeNs":5}`, one, map[string]patch.Precondition{"a.txt": {Set: true, ContentHash: h}}, nil},
		{"null for one path", `null`, one, map[string]patch.Precondition{"a.txt": {Set: true, MustNotExist: true}}, nil},
		{"single value for two paths", `null`, two, nil, ErrIfMatchAmbiguous},
		// Keys are passed as written: patch.Apply cleans and checks them.
		{"keyed by path", `{"./a.txt":"` + h + `","b.txt":null}`, two,
			map[string]patch.Precondition{"./a.txt": {Set: true, ContentHash: h}, "b.txt": {Set: true, MustNotExist: true}}, nil},
		{"keyed version", `{"a.txt":{"contentHash":"` + h + `"}}`, one, map[string]patch.Precondition{"a.txt": {Set: true, ContentHash: h}}, nil},
		{"bad value", `{"a.txt":5}`, one, nil, ErrInvalidIfMatch},
		{"version without hash", `{"a.txt":{"mtimeNs":5}}`, one, nil, ErrInvalidIfMatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseIfMatch(json.RawMessage(tc.ifMatch))
			var got map[string]patch.Precondition
			if err == nil {
				got, err = m.preconditions(tc.paths)
			}
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("preconditions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestIfMatchHashesByMeaning: the operation's request hash sees the
// parsed preconditions, so spellings of the same ifMatch replay each other
// and different ones do not.
func TestIfMatchHashesByMeaning(t *testing.T) {
	hash := func(raw string) string {
		t.Helper()
		m, err := ParseIfMatch(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		h, err := idempotency.HashRequest(map[string]any{"ifMatch": m})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	const h = "sha256:ab"
	same := [][2]string{
		{`"` + h + `"`, `{"contentHash":"` + h + `","mtimeNs":5}`},
		{`{"a":"` + h + `","b":null}`, ` {"b":null, "a":{"contentHash":"` + h + `"}} `},
	}
	for _, p := range same {
		if hash(p[0]) != hash(p[1]) {
			t.Errorf("%s and %s hash differently", p[0], p[1])
		}
	}
	for _, p := range [][2]string{{`null`, `"` + h + `"`}, {`{"a":null}`, `null`}, {``, `{"a":null}`}} {
		if hash(p[0]) == hash(p[1]) {
			t.Errorf("%s and %s hash alike", p[0], p[1])
		}
	}
}
