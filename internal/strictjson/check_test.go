package strictjson

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testSchema describes the arguments of a typical tool: scalars, an array
// of objects, a string map, two values of any shape and a nested optional
// object. The schemas are built as Compile builds them, without value
// constraints, so these tests are about keys alone.
func testSchema() *Schema {
	item := &Schema{Fields: map[string]*Schema{"path": {}, "mode": {}}}
	return &Schema{Fields: map[string]*Schema{
		"project":     {},
		"yieldTimeMs": {},
		"items":       {Items: item},
		"environment": {Map: &Schema{}},
		"extra":       {Any: true},
		"meta":        {Any: true},
		"opt":         {Fields: map[string]*Schema{"deep": {Map: &Schema{Items: item}}}},
	}}
}

// result is the part of a Check error that tests compare.
type result struct {
	Path       string
	Reason     string
	Suggestion string
}

func resultOf(t *testing.T, err error) result {
	t.Helper()
	if err == nil {
		return result{}
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Check() error = %T %v, want *Error", err, err)
	}
	return result{Path: e.Path, Reason: e.Reason, Suggestion: e.Suggestion}
}

func nested(open, close string, n int) string {
	return strings.Repeat(open, n) + strings.Repeat(close, n)
}

func TestCheck(t *testing.T) {
	schema := testSchema()
	manyKeys := func(last string) string {
		var b strings.Builder
		b.WriteString(`{"meta":{`)
		for i := range 40 {
			b.WriteString(`"k` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `":1,`)
		}
		b.WriteString(last + `}}`)
		return b.String()
	}

	tests := []struct {
		name    string
		input   string
		opts    Options
		want    result
		wantMsg string // substring of the message
	}{
		// Accepted.
		{name: "empty input", input: ``},
		{name: "white space only", input: " \n\t"},
		{name: "null", input: ` null `},
		{name: "empty object", input: `{}`},
		{
			name: "every field",
			input: `{"project":"p","yieldTimeMs":5,"items":[{"path":"a","mode":420},{"path":"b"}],
				"environment":{"PATH":"/bin","Home":"/h"},"extra":{"free":[{"x":null}]},
				"meta":[1,-2.5e3,true,false,null,"s\n\"\\\/\u00e9"],"opt":{"deep":{"k":[{"path":"x"}]}}}`,
		},
		{name: "valid surrogate pair", input: `{"meta":"\ud83d\ude00"}`},
		{name: "valid surrogate pair in key", input: `{"meta":{"\ud83d\ude00":1}}`},
		{name: "raw non-ASCII", input: `{"meta":{"clé":"日本語 😀"}}`},
		{name: "tiny number", input: `{"meta":1e-400}`},
		{name: "nesting at the limit", input: `{"meta":` + nested("[", "]", 63) + `}`},
		{name: "value shape not checked", input: `{"items":{"anything":1},"environment":[{"x":1}]}`},

		// unknown_field
		{name: "unknown field", input: `{"foo":1}`, want: result{"/foo", ReasonUnknownField, ""}, wantMsg: `unknown field "foo" in the top-level object`},
		{
			name:    "inserted hyphen",
			input:   `{"project":"p","yield-timeMs":30000}`,
			want:    result{"/yield-timeMs", ReasonUnknownField, "yieldTimeMs"},
			wantMsg: `unknown field "yield-timeMs" in the top-level object; did you mean "yieldTimeMs"?`,
		},
		{name: "inserted underscore", input: `{"yield_time_ms":1}`, want: result{"/yield_time_ms", ReasonUnknownField, "yieldTimeMs"}},
		{
			name:    "case differs",
			input:   `{"items":[{"Path":"a"}]}`,
			want:    result{"/items/0/Path", ReasonUnknownField, "path"},
			wantMsg: `unknown field "Path" in the object at "/items/0"; did you mean "path"?`,
		},
		{name: "nested path", input: `{"items":[{"path":"a"},{"path":"b"},{"path":"c","pth":1}]}`, want: result{"/items/2/pth", ReasonUnknownField, ""}},
		{name: "inside map values", input: `{"opt":{"deep":{"a/b~":[{"path":"x","bad":1}]}}}`, want: result{"/opt/deep/a~1b~0/0/bad", ReasonUnknownField, ""}},
		{name: "Go name of a tagged field", input: `{"Project":"p"}`, want: result{"/Project", ReasonUnknownField, "project"}},
		{name: "free-form values accept any name", input: `{"meta":{"a":{"b":[{"c":1}]}},"extra":{"z":1},"environment":{"ANY":"x"}}`},

		// duplicate_key
		{name: "duplicate", input: `{"project":"a","project":"b"}`, want: result{"/project", ReasonDuplicateKey, ""}, wantMsg: `duplicate key "project"`},
		{name: "duplicate spelled with escape", input: `{"project":"a","\u0070roject":"b"}`, want: result{"/project", ReasonDuplicateKey, ""}},
		{name: "duplicate surrogate pair key", input: `{"meta":{"😀":1,"\ud83d\ude00":2}}`, want: result{"/meta/😀", ReasonDuplicateKey, ""}},
		{name: "duplicate in any", input: `{"meta":[{"a":1,"a":2}]}`, want: result{"/meta/0/a", ReasonDuplicateKey, ""}},
		{name: "duplicate in map", input: `{"environment":{"A":"1","A":"2"}}`, want: result{"/environment/A", ReasonDuplicateKey, ""}},
		{name: "duplicate among many keys", input: manyKeys(`"kza":2,"kza":3`), want: result{"/meta/kza", ReasonDuplicateKey, ""}},
		{name: "duplicate empty key", input: `{"meta":{"":1,"":2}}`, want: result{"/meta/", ReasonDuplicateKey, ""}},
		{name: "empty key then nested error", input: `{"meta":{"":{"a":1,"a":2}}}`, want: result{"/meta//a", ReasonDuplicateKey, ""}},
		{name: "sibling objects do not share keys", input: `{"items":[{"path":"a"},{"path":"b"}],"meta":{"project":1}}`},

		// case_variant_key
		{name: "case variant", input: `{"project":"a","PROJECT":"b"}`, want: result{"/PROJECT", ReasonCaseVariant, ""}, wantMsg: `key "PROJECT" differs only by case from key "project"`},
		{name: "case variant in map", input: `{"environment":{"path":"1","PATH":"2"}}`, want: result{"/environment/PATH", ReasonCaseVariant, ""}},
		{name: "case variant of unknown keys in any", input: `{"meta":{"x":1,"X":2}}`, want: result{"/meta/X", ReasonCaseVariant, ""}},
		{name: "case variant by Kelvin sign", input: `{"meta":{"k":1,"\u212a":2}}`, want: result{"/meta/\u212a", ReasonCaseVariant, ""}},
		{name: "case variant among many keys", input: manyKeys(`"KAB":2`), want: result{"/meta/KAB", ReasonCaseVariant, ""}},
		{name: "Kelvin sign among many keys", input: manyKeys(`"\u212aab":2`), want: result{"/meta/\u212aab", ReasonCaseVariant, ""}},

		// nul_in_key
		{name: "escaped NUL in key", input: `{"meta":{"a\u0000b":1}}`, want: result{"/meta/a\x00b", ReasonNULInKey, ""}, wantMsg: `key "a\x00b" contains a NUL character`},
		{name: "escaped NUL in top-level key", input: `{"a\u0000b":1}`, want: result{"/a\x00b", ReasonNULInKey, ""}},
		{name: "raw NUL in key", input: "{\"a\x00\":1}", want: result{"/a\x00", ReasonNULInKey, ""}},
		{name: "NUL in value is fine", input: `{"meta":"a\u0000b"}`},

		// not_object
		{name: "array", input: `[]`, want: result{"", ReasonNotObject, ""}, wantMsg: "not an array"},
		{name: "string", input: `"x"`, want: result{"", ReasonNotObject, ""}},
		{name: "number", input: `-1`, want: result{"", ReasonNotObject, ""}},
		{name: "boolean", input: `true`, want: result{"", ReasonNotObject, ""}},

		// too_deep
		{name: "one level too deep", input: `{"meta":` + nested("[", "]", 64) + `}`, want: result{"/meta" + strings.Repeat("/0", 63), ReasonTooDeep, ""}},
		{name: "custom depth", input: `{"meta":{"a":{}}}`, opts: Options{MaxDepth: 2}, want: result{"/meta/a", ReasonTooDeep, ""}},

		// too_large
		{name: "too large", input: `{"meta":"0123456789"}`, opts: Options{MaxBytes: 20}, want: result{"", ReasonTooLarge, ""}, wantMsg: "larger than 20 bytes"},
		{name: "exactly MaxBytes", input: `{"meta":"012345678"}`, opts: Options{MaxBytes: 20}},

		// malformed_json
		{name: "unterminated object", input: `{`, want: result{"", ReasonMalformed, ""}},
		{name: "missing value", input: `{"meta":}`, want: result{"/meta", ReasonMalformed, ""}},
		{name: "missing colon", input: `{"meta" 1}`, want: result{"/meta", ReasonMalformed, ""}},
		{name: "trailing comma in object", input: `{"meta":1,}`, want: result{"", ReasonMalformed, ""}},
		{name: "trailing comma in array", input: `{"meta":[1,]}`, want: result{"/meta/1", ReasonMalformed, ""}},
		{name: "missing comma", input: `{"meta":[1 2]}`, want: result{"/meta/0", ReasonMalformed, ""}},
		{name: "single quotes", input: `{'meta':1}`, want: result{"", ReasonMalformed, ""}},
		{name: "leading zero", input: `{"meta":01}`, want: result{"/meta", ReasonMalformed, ""}},
		{name: "bare minus", input: `{"meta":-}`, want: result{"/meta", ReasonMalformed, ""}},
		{name: "empty fraction", input: `{"meta":1.}`, want: result{"/meta", ReasonMalformed, ""}},
		{name: "empty exponent", input: `{"meta":1e+}`, want: result{"/meta", ReasonMalformed, ""}},
		{name: "number out of range", input: `{"meta":1e400}`, want: result{"/meta", ReasonMalformed, ""}, wantMsg: "number out of range"},
		{name: "long number out of range", input: `{"meta":` + strings.Repeat("9", 400) + `}`, want: result{"/meta", ReasonMalformed, ""}},
		{name: "bad literal", input: `{"meta":nul}`, want: result{"/meta", ReasonMalformed, ""}},
		{name: "bad escape", input: `{"meta":"\x"}`, want: result{"/meta", ReasonMalformed, ""}},
		{name: "short unicode escape", input: `{"meta":"\u12"}`, want: result{"/meta", ReasonMalformed, ""}},
		{name: "control character", input: "{\"meta\":\"a\nb\"}", want: result{"/meta", ReasonMalformed, ""}},
		{name: "unterminated string", input: `{"meta":"abc`, want: result{"/meta", ReasonMalformed, ""}},
		{name: "garbage", input: `x`, want: result{"", ReasonMalformed, ""}},
		{name: "non-string key", input: `{1:2}`, want: result{"", ReasonMalformed, ""}},
		{name: "null prefix", input: `nul`, want: result{"", ReasonMalformed, ""}},

		// trailing_data
		{name: "two objects", input: `{} {}`, want: result{"", ReasonTrailingData, ""}, wantMsg: "byte offset 3"},
		{name: "garbage after null", input: `null x`, want: result{"", ReasonTrailingData, ""}},
		{name: "extra closer", input: `{"meta":[]}]`, want: result{"", ReasonTrailingData, ""}},

		// invalid_utf8
		{name: "invalid UTF-8 in value", input: "{\"meta\":\"a\xffb\"}", want: result{"/meta", ReasonInvalidUTF8, ""}},
		{name: "invalid UTF-8 in key", input: "{\"meta\":{\"\xc3\":1}}", want: result{"/meta", ReasonInvalidUTF8, ""}},
		{name: "UTF-8 encoded surrogate", input: "{\"meta\":\"\xed\xa0\x80\"}", want: result{"/meta", ReasonInvalidUTF8, ""}},
		{name: "invalid UTF-8 outside strings", input: "{\"meta\":\xff}", want: result{"/meta", ReasonInvalidUTF8, ""}},
		{name: "invalid UTF-8 after the object", input: "{}\xff", want: result{"", ReasonInvalidUTF8, ""}},

		// lone_surrogate
		{name: "lone high surrogate", input: `{"meta":"\ud800"}`, want: result{"/meta", ReasonLoneSurrogate, ""}},
		{name: "lone low surrogate", input: `{"meta":"\uDC00"}`, want: result{"/meta", ReasonLoneSurrogate, ""}},
		{name: "high then non-surrogate", input: `{"meta":"\ud800\u0041"}`, want: result{"/meta", ReasonLoneSurrogate, ""}},
		{name: "high then text", input: `{"meta":"\ud800abcdef"}`, want: result{"/meta", ReasonLoneSurrogate, ""}},
		{name: "reversed pair", input: `{"meta":"\ude00\ud83d"}`, want: result{"/meta", ReasonLoneSurrogate, ""}},
		{name: "high at end of string", input: `{"meta":["\ud83d"]}`, want: result{"/meta/0", ReasonLoneSurrogate, ""}},
		{name: "lone surrogate in key", input: `{"meta":{"\ud800":1}}`, want: result{"/meta", ReasonLoneSurrogate, ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check([]byte(tt.input), schema, tt.opts)
			if diff := cmp.Diff(tt.want, resultOf(t, err)); diff != "" {
				t.Errorf("Check(%.80q) mismatch (-want +got):\n%s\nerror: %v", tt.input, diff, err)
			}
			if tt.wantMsg != "" && (err == nil || !strings.Contains(err.Error(), tt.wantMsg)) {
				t.Errorf("Check(%.80q) error = %v, want it to contain %q", tt.input, err, tt.wantMsg)
			}
		})
	}
}

func TestCheckNilSchemaAcceptsAnyKeys(t *testing.T) {
	if err := Check([]byte(`{"a":{"b":[1,{"c":null}]},"B":2}`), nil, Options{}); err != nil {
		t.Fatalf("Check() = %v, want nil", err)
	}
	got := resultOf(t, Check([]byte(`{"a":1,"A":2}`), nil, Options{}))
	if diff := cmp.Diff(result{"/A", ReasonCaseVariant, ""}, got); diff != "" {
		t.Errorf("Check() mismatch (-want +got):\n%s", diff)
	}
}

func TestCheckHugeNesting(t *testing.T) {
	const depth = 100_000
	tests := []struct {
		name  string
		input string
	}{
		{"arrays", `{"meta":` + nested("[", "]", depth) + `}`},
		{"objects", nested(`{"a":`, "}", depth)},
		{"unclosed", strings.Repeat(`{"a":[`, depth)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			err := Check([]byte(tt.input), nil, Options{})
			if got := resultOf(t, err).Reason; got != ReasonTooDeep {
				t.Errorf("Check() reason = %q, want %q (error %v)", got, ReasonTooDeep, err)
			}
			if elapsed := time.Since(start); elapsed > time.Second {
				t.Errorf("Check() took %v, want well under a second", elapsed)
			}
			if n := len(err.Error()); n > 400 {
				t.Errorf("len(Error()) = %d, want at most 400", n)
			}
		})
	}
}

func TestCheckLargeString(t *testing.T) {
	big := strings.Repeat("abcdefgh", 10<<20/8)
	input := []byte(`{"meta":"` + big + `","extra":"é` + big + `"}`)
	if err := Check(input, testSchema(), Options{}); err != nil {
		t.Fatalf("Check(10 MB value) = %v, want nil", err)
	}
	err := Check(input, nil, Options{MaxBytes: 10 << 20})
	if got := resultOf(t, err).Reason; got != ReasonTooLarge {
		t.Errorf("Check() reason = %q, want %q", got, ReasonTooLarge)
	}
}

func TestErrorMessageBounded(t *testing.T) {
	long := strings.Repeat("x", 10_000)
	tests := []struct {
		name     string
		input    string
		wantPath string
	}{
		{"unknown key", `{"` + long + `":1}`, "/" + strings.Repeat("x", 64) + "…"},
		{"duplicate key", `{"meta":{"` + long + `":1,"` + long + `":2}}`, "/meta/" + strings.Repeat("x", 64) + "…"},
		{"deep path under long keys", `{"meta":` + strings.Repeat(`{"`+long+`":`, 70) + `1` + strings.Repeat("}", 71), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check([]byte(tt.input), testSchema(), Options{})
			if err == nil {
				t.Fatal("Check() = nil, want an error")
			}
			if n := len(err.Error()); n > 400 {
				t.Errorf("len(Error()) = %d, want at most 400: %.100s…", n, err.Error())
			}
			if tt.wantPath != "" {
				if diff := cmp.Diff(tt.wantPath, resultOf(t, err).Path); diff != "" {
					t.Errorf("Path mismatch (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func BenchmarkCheck(b *testing.B) {
	input := []byte(`{"project":"devspace","yieldTimeMs":5000,
		"items":[{"path":"internal/strictjson/check.go","mode":420},{"path":"internal/strictjson/schema.go"},{"path":"README.md"}],
		"environment":{"GOFLAGS":"-mod=mod","CGO_ENABLED":"0","PATH":"/usr/local/go/bin:/usr/bin:/bin","HOME":"/home/dev"},
		"meta":{"reason":"run the unit tests of the strict JSON package before committing","attempt":2,"tags":["go","test","ci"]},
		"extra":{"command":"go test -race ./internal/strictjson","cwd":"/work/main","timeoutMs":60000,"stdin":null,"shell":false,
		"note":"A typical argument object: a few short fields, an array of small objects, a string map and a paragraph of text \u00e9\ud83d\ude00. Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua."}}`)
	s := testSchema()
	if err := Check(input, s, Options{}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(input)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Check(input, s, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
