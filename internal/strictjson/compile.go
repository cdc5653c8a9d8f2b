package strictjson

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
)

// Compile derives a Schema from a JSON Schema document — the bytes a
// server publishes as a tool's input schema — so that Check enforces
// exactly what was published, in its one scan. It understands type,
// properties, additionalProperties, required, items, enum (of strings),
// minimum, maximum, minLength, maxLength and pattern, and ignores the
// annotations title, description, default, examples, deprecated, readOnly,
// writeOnly and $comment. Any other keyword is an error: a published
// schema may never promise what Check does not enforce.
//
// An object schema without properties and additionalProperties accepts
// any keys; with properties, only those unless additionalProperties
// allows more.
func Compile(doc []byte) (*Schema, error) {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, fmt.Errorf("strictjson: schema is not JSON: %w", err)
	}
	return compile(v, "")
}

// annotations are keywords that describe and never constrain.
var annotations = []string{"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment", "$schema", "$id"}

func compile(v any, at string) (*Schema, error) {
	if b, ok := v.(bool); ok {
		if !b {
			return nil, fmt.Errorf("strictjson: schema false at %q is only understood as additionalProperties", at)
		}
		return &Schema{Any: true}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("strictjson: schema at %q is not an object", at)
	}
	s := &Schema{}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		val := m[k]
		var err error
		switch k {
		case "type":
			s.Kinds, err = kinds(val)
		case "properties":
			err = s.compileProperties(val, at)
		case "additionalProperties":
			if b, ok := val.(bool); ok && !b {
				continue // only the properties
			}
			s.Map, err = compile(val, at+"/additionalProperties")
		case "required":
			s.Required, err = stringList(val, at, k)
		case "items":
			s.Items, err = compile(val, at+"/items")
		case "enum":
			s.Enum, err = stringList(val, at, k)
		case "minimum":
			s.Minimum, err = number(val, at, k)
		case "maximum":
			s.Maximum, err = number(val, at, k)
		case "minLength":
			s.MinLength, err = count(val, at, k)
		case "maxLength":
			s.MaxLength, err = count(val, at, k)
		case "minItems":
			s.MinItems, err = count(val, at, k)
		case "maxItems":
			s.MaxItems, err = count(val, at, k)
		case "pattern":
			p, _ := val.(string)
			s.Pattern, err = regexp.Compile(p)
		default:
			if !slices.Contains(annotations, k) {
				err = fmt.Errorf("strictjson: keyword %q at %q is not enforced by Check", k, at)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	_, hasProps := m["properties"]
	_, hasAdditional := m["additionalProperties"]
	if !hasProps && !hasAdditional && (s.Kinds == 0 || s.Kinds&KindObject != 0) {
		s.Any = true // an object with any keys
	}
	return s, nil
}

func (s *Schema) compileProperties(v any, at string) error {
	props, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("strictjson: properties at %q is not an object", at)
	}
	s.Fields = make(map[string]*Schema, len(props))
	for name, p := range props {
		f, err := compile(p, at+"/"+name)
		if err != nil {
			return err
		}
		s.Fields[name] = f
	}
	return nil
}

func kinds(v any) (Kind, error) {
	var names []any
	switch t := v.(type) {
	case string:
		names = []any{t}
	case []any:
		names = t
	default:
		return 0, fmt.Errorf("strictjson: type must be a string or an array of strings")
	}
	var k Kind
	for _, n := range names {
		i := slices.Index(kindNames[:], fmt.Sprint(n))
		if i < 0 {
			return 0, fmt.Errorf("strictjson: unknown type %v", n)
		}
		k |= 1 << i
	}
	return k, nil
}

func stringList(v any, at, keyword string) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("strictjson: %s at %q is not an array", keyword, at)
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		str, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("strictjson: %s at %q holds a non-string, which Check does not enforce", keyword, at)
		}
		out = append(out, str)
	}
	return out, nil
}

func number(v any, at, keyword string) (*float64, error) {
	f, ok := v.(float64)
	if !ok {
		return nil, fmt.Errorf("strictjson: %s at %q is not a number", keyword, at)
	}
	return &f, nil
}

func count(v any, at, keyword string) (*int, error) {
	f, ok := v.(float64)
	if !ok || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
		return nil, fmt.Errorf("strictjson: %s at %q is not a count", keyword, at)
	}
	n := int(f)
	return &n, nil
}
