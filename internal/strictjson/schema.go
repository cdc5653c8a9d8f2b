package strictjson

import "regexp"

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
	// constrain nothing and leave values to the decoder.
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
	// MinItems and MaxItems bound the elements of an array here.
	MinItems, MaxItems *int
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
