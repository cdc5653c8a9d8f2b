package strictjson

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind is a set of JSON value kinds, for Schema.Kinds.
type Kind uint8

// The kinds of JSON Schema's "type" keyword. KindInteger is a number
// written without a fraction or an exponent (what encoding/json decodes
// into a Go integer); KindNumber includes it.
const (
	KindNull Kind = 1 << iota
	KindBoolean
	KindInteger
	KindNumber
	KindString
	KindArray
	KindObject
)

// kindNames are the JSON Schema names of the kinds, in bit order.
var kindNames = [...]string{"null", "boolean", "integer", "number", "string", "array", "object"}

// String lists the kinds as a message would: "a string or null".
func (k Kind) String() string {
	var names []string
	for i, name := range kindNames {
		if k&(1<<i) == 0 || (Kind(1<<i) == KindInteger && k&KindNumber != 0) || name == "null" {
			continue
		}
		switch name {
		case "integer", "array", "object":
			name = "an " + name
		default:
			name = "a " + name
		}
		names = append(names, name)
	}
	if k&KindNull != 0 {
		names = append(names, "null")
	}
	switch len(names) {
	case 0:
		return "nothing"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// allows reports whether s lets a value of kind k (one bit) stand here.
// An integral number is also a number.
func (s *Schema) allows(k Kind) bool {
	if s == nil || s.Kinds == 0 {
		return true
	}
	if k == KindInteger {
		return s.Kinds&(KindInteger|KindNumber) != 0
	}
	return s.Kinds&k != 0
}

// kindOf returns the kind of the value starting with b (a number is
// reported as KindNumber until it is read).
func kindOf(b byte) Kind {
	switch b {
	case '{':
		return KindObject
	case '[':
		return KindArray
	case '"':
		return KindString
	case 't', 'f':
		return KindBoolean
	case 'n':
		return KindNull
	}
	return KindNumber
}

// checksStrings reports whether s needs a string's decoded value.
func (s *Schema) checksStrings() bool {
	return s != nil && (s.Enum != nil || s.Pattern != nil || s.MinLength != nil || s.MaxLength != nil)
}

// checksNumbers reports whether s needs a number's text.
func (s *Schema) checksNumbers() bool {
	return s != nil && (s.Minimum != nil || s.Maximum != nil || (s.Kinds&KindInteger != 0 && s.Kinds&KindNumber == 0))
}

// wrongKind reports a value of the wrong kind at c.pos.
func (c *checker) wrongKind(s *Schema) error {
	return c.fail(ReasonWrongType, "must be "+s.Kinds.String())
}

// checkString applies s's string constraints to the decoded value v. The
// message never repeats v.
func (c *checker) checkString(s *Schema, v []byte) error {
	if s.Enum != nil {
		ok := false
		for _, e := range s.Enum {
			if string(v) == e {
				ok = true
				break
			}
		}
		if !ok {
			return c.fail(ReasonNotAllowed, "must be one of "+quoteList(s.Enum))
		}
	}
	if n := utf8.RuneCount(v); (s.MinLength != nil && n < *s.MinLength) || (s.MaxLength != nil && n > *s.MaxLength) {
		return c.fail(ReasonNotAllowed, "must be "+lengthRange(s.MinLength, s.MaxLength)+" characters long")
	}
	if s.Pattern != nil && !s.Pattern.Match(v) {
		return c.fail(ReasonNotAllowed, "does not match the pattern "+strconv.Quote(s.Pattern.String()))
	}
	return nil
}

// checkNumber applies s's number constraints to the number text num.
func (c *checker) checkNumber(s *Schema, num []byte) error {
	integral := !bytes.ContainsAny(num, ".eE")
	if !integral && s.Kinds != 0 && s.Kinds&KindNumber == 0 {
		return c.fail(ReasonWrongType, "must be "+s.Kinds.String())
	}
	if s.Minimum == nil && s.Maximum == nil {
		return nil
	}
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil || (s.Minimum != nil && f < *s.Minimum) || (s.Maximum != nil && f > *s.Maximum) {
		return c.fail(ReasonNotAllowed, "must be "+numberRange(s.Minimum, s.Maximum))
	}
	return nil
}

// checkRequired reports the first key of s.Required missing from the
// object whose keys are keys; the object is the innermost open one.
func (c *checker) checkRequired(s *Schema, keys [][]byte) error {
	if s == nil {
		return nil
	}
next:
	for _, r := range s.Required {
		for _, k := range keys {
			if string(k) == r {
				continue next
			}
		}
		parent := c.path()
		return &Error{Path: joinPath(parent, []byte(r)), Reason: ReasonMissingField,
			msg: "missing required field " + quoteKey([]byte(r)) + inObject(parent)}
	}
	return nil
}

func quoteList(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = quoteKey([]byte(v))
	}
	return strings.Join(q, ", ")
}

func lengthRange(lo, hi *int) string {
	switch {
	case lo != nil && hi != nil:
		return strconv.Itoa(*lo) + "-" + strconv.Itoa(*hi)
	case lo != nil:
		return "at least " + strconv.Itoa(*lo)
	}
	return "at most " + strconv.Itoa(*hi)
}

func numberRange(lo, hi *float64) string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	switch {
	case lo != nil && hi != nil:
		return "between " + f(*lo) + " and " + f(*hi)
	case lo != nil:
		return "at least " + f(*lo)
	}
	return "at most " + f(*hi)
}

// checkItems checks that array f may hold n elements: past MaxItems as
// soon as the element after the last allowed one starts, under MinItems
// when it closes. The problem is the array's, reported at its path.
func (c *checker) checkItems(f *frame, n int) error {
	s := f.schema
	if s == nil || (s.MinItems == nil && s.MaxItems == nil) {
		return nil
	}
	closing := c.pos < len(c.data) && c.data[c.pos] == ']'
	if (s.MaxItems != nil && n > *s.MaxItems) || (closing && s.MinItems != nil && n < *s.MinItems) {
		stack := c.stack
		c.stack = c.stack[:len(c.stack)-1]
		err := c.fail(ReasonNotAllowed, "must list "+lengthRange(s.MinItems, s.MaxItems)+" items")
		c.stack = stack
		return err
	}
	return nil
}
