package strictjson

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type inner struct {
	Name   string `json:"name"`
	Shadow int    `json:"shadow"`
}

type deeper struct {
	Depth2 string `json:"depth2"`
	Name   string `json:"name"` // dominated by inner.Name at a shallower depth
}

type middle struct {
	deeper
}

type tagWins struct {
	X inner `json:"Both"`
}

type tagLoses struct {
	Both int
}

type conflictA struct {
	Same int
}

type conflictB struct {
	Same int
}

type Exported struct {
	E int `json:"e"`
}

type named string

type shapes struct {
	inner
	*middle
	tagWins
	tagLoses
	conflictA
	conflictB
	Exported `json:"exported"`
	named
	Shadow      string            `json:"shadow"` // shadows inner.Shadow
	Ptr         **int             `json:"ptr"`
	List        []inner           `json:"list"`
	Array       [2]*inner         `json:"array"`
	Env         map[string]string `json:"env"`
	Nested      map[string][]inner
	Raw         json.RawMessage `json:"raw"`
	Anything    any             `json:"anything,omitempty"`
	When        time.Time       `json:"when"`
	Skipped     int             `json:"-"`
	Dash        int             `json:"-,"`
	BadTag      int             `json:"a\"b"`
	Options     int             `json:",omitempty"`
	unexported  int
	_           int
	Bytes       []byte   `json:"bytes"`
	Interface   error    `json:"interface"`
	Unmarshaled *selfish `json:"unmarshaled"`
}

type selfish struct{ Hidden int }

func (*selfish) UnmarshalJSON([]byte) error { return nil }

type node struct {
	Value    int     `json:"value"`
	Next     *node   `json:"next"`
	Children []*node `json:"children"`
}

type cycle struct {
	*cycle
	Own int `json:"own"`
}

type pointerLoop *pointerLoop

func TestFromType(t *testing.T) {
	leaf := func() *Schema { return &Schema{} }
	innerSchema := func() *Schema {
		return &Schema{Fields: map[string]*Schema{"name": leaf(), "shadow": leaf()}}
	}
	anything := func() *Schema { return &Schema{Any: true} }

	tests := []struct {
		name string
		typ  reflect.Type
		want *Schema
	}{
		{
			name: "struct shapes",
			typ:  reflect.TypeFor[shapes](),
			want: &Schema{Fields: map[string]*Schema{
				"name":        leaf(),
				"shadow":      leaf(),
				"depth2":      leaf(),
				"Both":        innerSchema(),
				"exported":    {Fields: map[string]*Schema{"e": leaf()}},
				"ptr":         leaf(),
				"list":        {Items: innerSchema()},
				"array":       {Items: innerSchema()},
				"env":         {Map: leaf()},
				"Nested":      {Map: &Schema{Items: innerSchema()}},
				"raw":         anything(),
				"anything":    anything(),
				"when":        anything(),
				"-":           leaf(),
				"BadTag":      leaf(),
				"Options":     leaf(),
				"bytes":       {Items: leaf()},
				"interface":   anything(),
				"unmarshaled": anything(),
			}},
		},
		{name: "pointer to struct", typ: reflect.TypeFor[*inner](), want: innerSchema()},
		{name: "slice of structs", typ: reflect.TypeFor[[]inner](), want: &Schema{Items: innerSchema()}},
		{name: "map of strings", typ: reflect.TypeFor[map[string]string](), want: &Schema{Map: leaf()}},
		{name: "raw message", typ: reflect.TypeFor[json.RawMessage](), want: anything()},
		{name: "empty struct", typ: reflect.TypeFor[struct{}](), want: &Schema{Fields: map[string]*Schema{}}},
		{name: "embedding cycle", typ: reflect.TypeFor[cycle](), want: &Schema{Fields: map[string]*Schema{"own": leaf()}}},
		{name: "pointer loop", typ: reflect.TypeFor[pointerLoop](), want: anything()},
		{name: "scalar", typ: reflect.TypeFor[int](), want: leaf()},
		{name: "nil type", typ: nil, want: anything()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, FromType(tt.typ)); diff != "" {
				t.Errorf("FromType(%v) mismatch (-want +got):\n%s", tt.typ, diff)
			}
		})
	}
}

// TestFromTypeMatchesEncodingJSON checks FromType's names against the
// fields encoding/json decodes into.
func TestFromTypeMatchesEncodingJSON(t *testing.T) {
	s := FromType(reflect.TypeFor[shapes]())
	decode := func(name string) error {
		v := shapes{middle: &middle{}}
		d := json.NewDecoder(strings.NewReader(`{` + strconv.Quote(name) + `:null}`))
		d.DisallowUnknownFields()
		return d.Decode(&v)
	}
	for name := range s.Fields {
		if err := decode(name); err != nil {
			t.Errorf("FromType accepts %q, but encoding/json: %v", name, err)
		}
	}
	for _, name := range []string{"Same", "Skipped", "unexported", "Hidden", "named", "middle", "deeper", "E", "X"} {
		if _, ok := s.Fields[name]; ok {
			t.Errorf("FromType(shapes).Fields[%q] exists, want it absent", name)
		}
		if err := decode(name); err == nil {
			t.Errorf("encoding/json decodes %q into a field; FromType should know it", name)
		}
	}
}

func TestFromTypeRecursive(t *testing.T) {
	s := FromType(reflect.TypeFor[node]())
	if s.Fields["next"] != s || s.Fields["children"].Items != s {
		t.Errorf("FromType(node) does not refer back to itself: %+v", s)
	}
	input := `{"value":1,"next":{"value":2,"children":[{"value":3,"children":[{"value":4,"bad":5}]}]}}`
	got := resultOf(t, Check([]byte(input), s, Options{}))
	if diff := cmp.Diff(result{"/next/children/0/children/0/bad", ReasonUnknownField, ""}, got); diff != "" {
		t.Errorf("Check() mismatch (-want +got):\n%s", diff)
	}
}

func TestFromTypeCached(t *testing.T) {
	typ := reflect.TypeFor[shapes]()
	if a, b := FromType(typ), FromType(typ); a != b {
		t.Errorf("FromType returned %p then %p, want the cached schema", a, b)
	}
}
