package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

// FuzzCheck checks that Check never panics, reports only *Error with a
// known reason and a bounded message, and accepts only input that
// encoding/json decodes into a map[string]any.
func FuzzCheck(f *testing.F) {
	for _, seed := range []string{
		``,
		`null`,
		`{}`,
		`{"project":"p","yieldTimeMs":5,"items":[{"path":"a","mode":420}],"environment":{"A":"b"},"meta":[1,-2.5e3,true,null,"\u00e9\ud83d\ude00"]}`,
		`{"yield-timeMs":1}`,
		`{"a":1,"A":2}`,
		`{"a\u0000b":1}`,
		`{"meta":"\ud800"}`,
		`{"meta":[[[[[[[[]]]]]]]]}`,
		`{"meta":1e400}`,
		"{\"meta\":\"\xff\"}",
		`{} {}`,
	} {
		f.Add([]byte(seed))
	}
	reasons := []string{
		ReasonUnknownField, ReasonDuplicateKey, ReasonCaseVariant, ReasonNULInKey,
		ReasonNotObject, ReasonTooDeep, ReasonTooLarge, ReasonMalformed,
		ReasonTrailingData, ReasonInvalidUTF8, ReasonLoneSurrogate,
	}
	schemas := []*Schema{nil, testSchema()}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, s := range schemas {
			err := Check(data, s, Options{})
			if err != nil {
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("Check(%q) error = %T %v, want *Error", data, err, err)
				}
				if !slices.Contains(reasons, e.Reason) {
					t.Fatalf("Check(%q) reason = %q, want a Reason constant", data, e.Reason)
				}
				if n := len(e.Error()); n == 0 || n > 400 {
					t.Fatalf("Check(%q) message length = %d, want 1..400", data, n)
				}
				continue
			}
			if len(bytes.Trim(data, " \t\r\n")) == 0 {
				continue // an absent arguments object
			}
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatalf("Check(%q) = nil, but json.Unmarshal: %v", data, err)
			}
		}
	})
}
