package strictjson

import (
	"strings"
	"testing"
)

// toolSchema is shaped like the input schemas the MCP tools publish.
const toolSchema = `{
  "type": "object", "additionalProperties": false,
  "required": ["operationId", "source"],
  "properties": {
    "operationId": {"type": "string", "description": "idempotency key", "minLength": 1, "maxLength": 4},
    "source": {"type": "string", "enum": ["repository", "apply_patch_history"]},
    "ifMatch": {"type": ["null", "integer"]},
    "limit": {"type": "integer", "minimum": 0, "maximum": 10},
    "ratio": {"type": "number"},
    "ref": {"type": "string", "pattern": "^prj_[a-z]+$"},
    "environment": {"type": "object", "additionalProperties": {"type": "string"}},
    "version": {"type": ["object", "string", "null"]},
    "tags": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string"}},
    "files": {"type": ["null", "array"], "items": {
      "type": "object", "additionalProperties": false, "required": ["path"],
      "properties": {"path": {"type": "string"}, "offset": {"type": "integer"}}}}
  }
}`

func TestCompiledSchemaIsEnforced(t *testing.T) {
	s, err := Compile([]byte(toolSchema))
	if err != nil {
		t.Fatal(err)
	}
	base := `"operationId":"op1","source":"repository"`
	tests := []struct {
		name, in string
		want     result
	}{
		{"minimal", `{` + base + `}`, result{}},
		{"every_field", `{` + base + `,"ifMatch":3,"limit":10,"ratio":0.5,"ref":"prj_abc","environment":{"A":"b"},"version":{"contentHash":"x","mtimeNs":5},"files":[{"path":"a","offset":2}]}`, result{}},
		{"nulls_where_allowed", `{` + base + `,"ifMatch":null,"files":null,"version":null}`, result{}},
		{"version_as_string", `{` + base + `,"version":"sha256:1"}`, result{}},
		{"empty_arguments", ``, result{Path: "/operationId", Reason: ReasonMissingField}},
		{"null_arguments", `null`, result{Path: "/operationId", Reason: ReasonMissingField}},
		{"missing_source", `{"operationId":"op1"}`, result{Path: "/source", Reason: ReasonMissingField}},
		{"enum", `{"operationId":"op1","source":"Repository"}`, result{Path: "/source", Reason: ReasonNotAllowed}},
		{"enum_escaped_match", `{"operationId":"op1","source":"repositor\u0079"}`, result{}},
		{"string_as_number", `{"operationId":1,"source":"repository"}`, result{Path: "/operationId", Reason: ReasonWrongType}},
		{"null_for_string", `{"operationId":null,"source":"repository"}`, result{Path: "/operationId", Reason: ReasonWrongType}},
		{"too_long", `{"operationId":"op123","source":"repository"}`, result{Path: "/operationId", Reason: ReasonNotAllowed}},
		{"length_counts_code_points", `{"operationId":"éééé","source":"repository"}`, result{}},
		{"too_short", `{"operationId":"","source":"repository"}`, result{Path: "/operationId", Reason: ReasonNotAllowed}},
		{"integer_with_fraction", `{` + base + `,"ifMatch":1.5}`, result{Path: "/ifMatch", Reason: ReasonWrongType}},
		{"integer_with_exponent", `{` + base + `,"ifMatch":1e2}`, result{Path: "/ifMatch", Reason: ReasonWrongType}},
		{"integer_as_string", `{` + base + `,"ifMatch":"3"}`, result{Path: "/ifMatch", Reason: ReasonWrongType}},
		{"number_accepts_integer", `{` + base + `,"ratio":2}`, result{}},
		{"above_maximum", `{` + base + `,"limit":11}`, result{Path: "/limit", Reason: ReasonNotAllowed}},
		{"below_minimum", `{` + base + `,"limit":-1}`, result{Path: "/limit", Reason: ReasonNotAllowed}},
		{"pattern", `{` + base + `,"ref":"prj_ABC"}`, result{Path: "/ref", Reason: ReasonNotAllowed}},
		{"map_value_type", `{` + base + `,"environment":{"A":1}}`, result{Path: "/environment/A", Reason: ReasonWrongType}},
		{"object_for_array", `{` + base + `,"files":{}}`, result{Path: "/files", Reason: ReasonWrongType}},
		{"item_missing_field", `{` + base + `,"files":[{"path":"a"},{"offset":1}]}`, result{Path: "/files/1/path", Reason: ReasonMissingField}},
		{"items_within_bounds", `{` + base + `,"tags":["a","b"]}`, result{}},
		{"too_few_items", `{` + base + `,"tags":[ ]}`, result{Path: "/tags", Reason: ReasonNotAllowed}},
		{"too_many_items", `{` + base + `,"tags":["a","b","c"]}`, result{Path: "/tags", Reason: ReasonNotAllowed}},
		{"item_kind_before_count", `{` + base + `,"tags":[1]}`, result{Path: "/tags/0", Reason: ReasonWrongType}},
		{"item_unknown_field", `{` + base + `,"files":[{"path":"a","Path":"b"}]}`, result{Path: "/files/0/Path", Reason: ReasonCaseVariant}},
		{"boolean_for_object", `{` + base + `,"version":true}`, result{Path: "/version", Reason: ReasonWrongType}},
		{"unknown_field", `{` + base + `,"sorce":"x"}`, result{Path: "/sorce", Reason: ReasonUnknownField}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Check([]byte(tc.in), s, Options{})
			if got := resultOf(t, err); got != tc.want {
				t.Fatalf("Check(%s) = %+v (%v), want %+v", tc.in, got, err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "Repository") {
				t.Errorf("message repeats the value: %v", err)
			}
		})
	}
}

func TestCompiledMessages(t *testing.T) {
	s, err := Compile([]byte(toolSchema))
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		`{"operationId":"op1","source":"x"}`:                        `must be one of "repository", "apply_patch_history" at "/source"`,
		`{"operationId":"op1"}`:                                     `missing required field "source"`,
		`{"operationId":"op1","source":"repository","ifMatch":"1"}`: `must be an integer or null at "/ifMatch"`,
		`{"operationId":"op1","source":"repository","limit":99}`:    `must be between 0 and 10 at "/limit"`,
	} {
		if err := Check([]byte(in), s, Options{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%s) = %v, want it to say %q", in, err, want)
		}
	}
}

// TestCompileRefusesWhatCheckDoesNotEnforce: a published schema may never
// promise more than Check holds the caller to.
func TestCompileRefusesWhatCheckDoesNotEnforce(t *testing.T) {
	for _, doc := range []string{
		`{"type":"object","properties":{"a":{"anyOf":[{"type":"string"}]}}}`,
		`{"type":"object","properties":{"a":{"type":"array","uniqueItems":true}}}`,
		`{"type":"object","properties":{"a":{"enum":[1,2]}}}`,
		`{"type":"object","properties":{"a":{"type":"string","format":"uri"}}}`,
		`{"type":"object","properties":{"a":{"type":"strng"}}}`,
		`{"type":"object","properties":{"a":false}}`,
		`{"type":"object","properties":{"a":{"pattern":"("}}}`,
		`[]`,
	} {
		if _, err := Compile([]byte(doc)); err == nil {
			t.Errorf("Compile(%s) accepted a schema Check cannot enforce", doc)
		}
	}
}
