package strictjson

import (
	"encoding"
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"unicode"
)

// Schema describes which object keys Check accepts. It only constrains
// names: value types are left to the decoder that runs after Check, so a
// value whose shape does not match (an object where the schema expects an
// array, say) is still scanned, but like Any.
//
// The fields are consulted in this order:
//   - Any: any value; nested objects are still checked for duplicate,
//     case-variant and NUL keys, but their names are not constrained.
//   - Fields (non-nil, possibly empty): an object with exactly these keys,
//     matched byte for byte; a nil entry behaves like Any.
//   - Map: an object with arbitrary keys whose values follow Map. With
//     Fields also set, Map applies to keys that are not in Fields.
//   - Items: an array whose elements follow Items.
//
// A nil *Schema and the zero Schema (a scalar) behave like Any. Schemas may
// be cyclic. Check never modifies a Schema; one must not be modified while
// Check uses it.
type Schema struct {
	Fields map[string]*Schema
	Items  *Schema
	Any    bool
	Map    *Schema

	// Value constraints, checked as Check scans (see Compile, which
	// derives them from a published JSON Schema). The zero values
	// constrain nothing, so a Schema from FromType leaves values to the
	// decoder.
	//
	// Kinds is the set of value kinds allowed here (0: any kind).
	Kinds Kind
	// Required lists the keys an object here must have.
	Required []string
	// Enum, when non-nil, lists the values a string here may take.
	Enum []string
	// Minimum and Maximum bound a number here, inclusively.
	Minimum, Maximum *float64
	// MinLength and MaxLength bound a string here, in code points.
	MinLength, MaxLength *int
	// Pattern, when set, must match a string here.
	Pattern *regexp.Regexp
}

// member returns the schema of the value of key in an object described by
// s, and false if s does not allow key.
func (s *Schema) member(key []byte) (*Schema, bool) {
	if s == nil || s.Any {
		return nil, true
	}
	if s.Fields != nil {
		if f, ok := s.Fields[string(key)]; ok {
			return f, true
		}
	}
	if s.Map != nil {
		return s.Map, true
	}
	return nil, s.Fields == nil
}

// item returns the schema of the elements of an array described by s.
func (s *Schema) item() *Schema {
	if s == nil || s.Any {
		return nil
	}
	return s.Items
}

// schemaCache maps a reflect.Type to the *Schema FromType built for it.
// Schemas are immutable once built, so sharing them is safe.
var schemaCache sync.Map

// FromType derives a Schema from the Go type that the arguments will be
// decoded into, following encoding/json's rules: struct fields are named by
// their `json` tag (options such as omitempty are ignored, "-" skips the
// field), otherwise by the Go name; fields of embedded structs without a
// tag name are promoted, and name conflicts are resolved as encoding/json
// resolves them. Pointers are followed; slices and arrays become Items, maps
// become Map, and interfaces, json.RawMessage and types with their own
// UnmarshalJSON or UnmarshalText become Any. Other types are scalars.
//
// Unlike encoding/json, Check matches keys exactly, not case-insensitively.
// A nil t yields Any. The result is cached per type and shared: callers
// must not modify it. FromType is safe for concurrent use.
func FromType(t reflect.Type) *Schema {
	if t == nil {
		return &Schema{Any: true}
	}
	if s, ok := schemaCache.Load(t); ok {
		return s.(*Schema)
	}
	b := builder{done: map[reflect.Type]*Schema{}}
	s, _ := schemaCache.LoadOrStore(t, b.build(t))
	return s.(*Schema)
}

// builder builds the schemas for one FromType call. done also holds the
// schemas still being filled in, which is how recursive types terminate.
type builder struct {
	done map[reflect.Type]*Schema
}

func (b *builder) build(t reflect.Type) *Schema {
	// The JSON for *T is the JSON for T.
	for n := 0; t.Kind() == reflect.Pointer; n++ {
		if n == 32 {
			return &Schema{Any: true} // a pointer cycle such as type P *P
		}
		t = t.Elem()
	}
	if s, ok := b.done[t]; ok {
		return s
	}
	if t == reflect.TypeFor[json.RawMessage]() || t.Kind() == reflect.Interface || unmarshalsSelf(t) {
		return &Schema{Any: true}
	}
	s := &Schema{}
	b.done[t] = s
	switch t.Kind() {
	case reflect.Struct:
		s.Fields = map[string]*Schema{}
		for _, f := range structFields(t) {
			s.Fields[f.name] = b.build(f.typ)
		}
	case reflect.Slice, reflect.Array:
		s.Items = b.build(t.Elem())
	case reflect.Map:
		s.Map = b.build(t.Elem())
	}
	return s
}

// unmarshalsSelf reports whether encoding/json hands values of t to their
// own UnmarshalJSON or UnmarshalText method.
func unmarshalsSelf(t reflect.Type) bool {
	for _, u := range [...]reflect.Type{
		reflect.TypeFor[json.Unmarshaler](),
		reflect.TypeFor[encoding.TextUnmarshaler](),
	} {
		if t.Implements(u) || reflect.PointerTo(t).Implements(u) {
			return true
		}
	}
	return false
}

// field is one candidate JSON field of a struct.
type field struct {
	name   string
	typ    reflect.Type
	depth  int // number of embedded structs between the struct and the field
	tagged bool
}

// structFields lists the JSON fields of struct type t after promotion and
// conflict resolution.
func structFields(t reflect.Type) []field {
	var all []field
	collectFields(t, 0, map[reflect.Type]bool{}, &all)

	// For each name, the shallowest fields compete; a single one wins, or
	// else the only tagged one; otherwise the name is dropped, as
	// encoding/json does.
	type best struct {
		f       field
		n       int // fields at f.depth
		tagged  int // tagged fields at f.depth
		ordinal int
	}
	byName := map[string]*best{}
	var order []string
	for _, f := range all {
		cur, ok := byName[f.name]
		if !ok {
			byName[f.name] = &best{f: f, n: 1, tagged: btoi(f.tagged)}
			order = append(order, f.name)
			continue
		}
		switch {
		case f.depth < cur.f.depth:
			*cur = best{f: f, n: 1, tagged: btoi(f.tagged)}
		case f.depth == cur.f.depth:
			cur.n++
			cur.tagged += btoi(f.tagged)
			if f.tagged && !cur.f.tagged {
				cur.f = f
			}
		}
	}
	var out []field
	for _, name := range order {
		b := byName[name]
		if b.n == 1 || b.tagged == 1 {
			out = append(out, b.f)
		}
	}
	return out
}

// collectFields appends every candidate field of t, descending into embedded
// structs; onPath stops embedding cycles (type T struct{ *T }).
func collectFields(t reflect.Type, depth int, onPath map[reflect.Type]bool, out *[]field) {
	if onPath[t] {
		return
	}
	onPath[t] = true
	defer delete(onPath, t)
	for i := range t.NumField() {
		sf := t.Field(i)
		ft := sf.Type
		if sf.Anonymous {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if !sf.IsExported() && ft.Kind() != reflect.Struct {
				continue
			}
		} else if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if !validTagName(name) {
			name = ""
		}
		if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
			collectFields(ft, depth+1, onPath, out)
			continue
		}
		tagged := name != ""
		if !tagged {
			name = sf.Name
		}
		*out = append(*out, field{name: name, typ: sf.Type, depth: depth, tagged: tagged})
	}
}

// validTagName reports whether encoding/json would use name from a tag.
func validTagName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case unicode.IsLetter(c), unicode.IsDigit(c):
		default:
			return false
		}
	}
	return true
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
