package edits

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

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
			got, err := preconditions(json.RawMessage(tc.ifMatch), tc.paths)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("preconditions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCanonicalJSON(t *testing.T) {
	for in, want := range map[string]string{
		``:                       `null`,
		` {"b":1, "a":null} `:    `{"a":null,"b":1}`,
		`not json`:               `null`,
		`"sha256:ab"`:            `"sha256:ab"`,
		`{"x":{"z":1,"y":true}}`: `{"x":{"y":true,"z":1}}`,
	} {
		if got := string(canonicalJSON(json.RawMessage(in))); got != want {
			t.Errorf("canonicalJSON(%q) = %s, want %s", in, got, want)
		}
	}
}
