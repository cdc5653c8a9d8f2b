// Package strictjson vets raw JSON tool arguments before they are decoded.
//
// Decoders such as encoding/json are lenient in ways that turn a client's
// mistake into a silent default: unknown keys are dropped (a client that
// sends "yield-timeMs" for "yieldTimeMs" gets the default timeout), keys
// match case-insensitively, the last of two duplicate keys wins, and invalid
// UTF-8 or unpaired surrogate escapes become U+FFFD. Check rejects all of
// these with an *Error naming the offending location, so the caller can
// answer invalid_tool_input and run nothing.
//
// Check is a single forward scan over the input: its memory is bounded by
// the nesting depth and by the keys of the objects that are open, and it
// never builds the decoded value.
package strictjson

import (
	"bytes"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

const (
	// DefaultMaxDepth is the nesting limit used when Options.MaxDepth is
	// zero.
	DefaultMaxDepth = 64
	// DefaultMaxBytes is the size limit used when Options.MaxBytes is zero.
	DefaultMaxBytes = 32 << 20

	// decoderMaxDepth is encoding/json's own nesting limit; accepting
	// deeper input would only move the failure to the decoder.
	decoderMaxDepth = 10000
	// foldMapAt is the number of keys in one object from which duplicates
	// are found with a map instead of by comparing with every earlier key.
	foldMapAt = 16
)

// Options tunes Check. The zero value means the defaults.
type Options struct {
	// MaxDepth is the deepest nesting of objects and arrays accepted; the
	// top-level object is depth 1. Zero or less means DefaultMaxDepth (64);
	// values above 10000, encoding/json's limit, are lowered to it.
	MaxDepth int
	// MaxBytes is the longest input accepted, in bytes. Zero or less means
	// DefaultMaxBytes (32 MiB).
	MaxBytes int
}

// Check reports whether data is an argument object that s accepts and that
// a decoder can read without guessing. data must be one JSON object,
// optionally surrounded by white space; empty input and the literal null
// stand for an absent arguments object and are accepted as {}. A nil s
// accepts any keys.
//
// Besides the names s allows, Check rejects, anywhere in the input:
// duplicate keys and keys that differ only by case (strings.EqualFold)
// within one object, keys containing NUL, invalid UTF-8, \u escapes that do
// not form a valid surrogate pair, numbers that overflow a float64, and
// nesting deeper than opts.MaxDepth. Anything Check accepts (other than
// empty input) decodes with encoding/json into a map[string]any.
//
// Check returns nil or an *Error, reporting the first problem in input
// order. It is safe for concurrent use.
func Check(data []byte, s *Schema, opts Options) error {
	maxBytes := opts.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if len(data) > maxBytes {
		return &Error{
			Reason: ReasonTooLarge,
			msg:    "arguments are larger than " + strconv.Itoa(maxBytes) + " bytes",
		}
	}
	maxDepth := opts.MaxDepth
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	maxDepth = min(maxDepth, decoderMaxDepth)
	c := &checker{data: data, maxDepth: maxDepth}
	// Typical arguments fit in the checker's own buffers, so Check
	// allocates once.
	c.stack = c.frameBuf[:0]
	c.keys = c.keyBuf[:0]
	return c.run(s)
}

// checker holds the state of one Check call.
type checker struct {
	data     []byte
	pos      int // next byte to read
	maxDepth int
	stack    []frame  // open objects and arrays, outermost first
	keys     [][]byte // keys read so far in the open objects, by frame
	frameBuf [8]frame
	keyBuf   [32][]byte
}

// frame is an open object or array.
type frame struct {
	array  bool
	fresh  bool           // nothing read yet after the opening bracket
	schema *Schema        // nil: any keys
	index  int            // array: index of the current element
	key    []byte         // object: the current key, if hasKey
	hasKey bool           // object: false until the first key, and while reading one
	start  int            // object: index in checker.keys of its first key
	folded map[string]int // folded key → index in checker.keys, once there are many
}

func (c *checker) run(s *Schema) error {
	c.skipSpace()
	if c.pos == len(c.data) {
		return c.checkRequired(s, nil)
	}
	switch b := c.data[c.pos]; b {
	case '{':
	case 'n':
		if err := c.literal("null"); err != nil {
			return err
		}
		if err := c.end(); err != nil {
			return err
		}
		return c.checkRequired(s, nil)
	default:
		kind := ""
		switch {
		case b == '[':
			kind = "an array"
		case b == '"':
			kind = "a string"
		case b == '-' || '0' <= b && b <= '9':
			kind = "a number"
		case b == 't' || b == 'f':
			kind = "a boolean"
		default:
			return c.malformed("expected a JSON object")
		}
		return &Error{Reason: ReasonNotObject, msg: "arguments must be a JSON object, not " + kind}
	}
	next := s
	for {
		if err := c.value(next); err != nil {
			return err
		}
		var done bool
		var err error
		if next, done, err = c.advance(); err != nil {
			return err
		}
		if done {
			return c.end()
		}
	}
}

// value reads the value at c.pos, described by s. An object or array is
// only opened: advance reads its contents.
func (c *checker) value(s *Schema) error {
	c.skipSpace()
	if c.pos >= len(c.data) {
		return c.malformed("unexpected end of input")
	}
	b := c.data[c.pos]
	if k := kindOf(b); k == KindNumber {
		if !s.allows(KindInteger) {
			return c.wrongKind(s)
		}
	} else if !s.allows(k) {
		return c.wrongKind(s)
	}
	switch b {
	case '{', '[':
		if len(c.stack) >= c.maxDepth {
			return c.fail(ReasonTooDeep, "objects and arrays are nested more than "+strconv.Itoa(c.maxDepth)+" deep")
		}
		c.push(b == '[', s)
		c.pos++
		return nil
	case '"':
		start := c.pos
		v, _, err := c.str(false, s.checksStrings())
		if err != nil || !s.checksStrings() {
			return err
		}
		return c.at(start, func() error { return c.checkString(s, v) })
	case 't':
		return c.literal("true")
	case 'f':
		return c.literal("false")
	case 'n':
		return c.literal("null")
	default:
		if b == '-' || '0' <= b && b <= '9' {
			start := c.pos
			if err := c.number(); err != nil || !s.checksNumbers() {
				return err
			}
			num := c.data[start:c.pos]
			return c.at(start, func() error { return c.checkNumber(s, num) })
		}
		return c.malformed("expected a value")
	}
}

// advance reads separators and closing brackets up to the start of the
// next value and returns that value's schema, or done once the outermost
// object has closed.
func (c *checker) advance() (next *Schema, done bool, err error) {
	for len(c.stack) > 0 {
		f := &c.stack[len(c.stack)-1]
		c.skipSpace()
		if c.pos >= len(c.data) {
			return nil, false, c.malformed("unexpected end of input")
		}
		closer := byte('}')
		if f.array {
			closer = ']'
		}
		b := c.data[c.pos]
		if b == closer {
			if f.array {
				n := f.index + 1
				if f.fresh {
					n = 0
				}
				if err := c.checkItems(f, n); err != nil {
					return nil, false, err
				}
			} else {
				f.hasKey = false // the problem is the object's, not its last key's
				if err := c.checkRequired(f.schema, c.keys[f.start:]); err != nil {
					return nil, false, err
				}
			}
			c.pos++
			c.pop()
			continue
		}
		switch {
		case f.fresh:
			f.fresh = false
		case b == ',':
			c.pos++
			f.index++
		case f.array:
			return nil, false, c.malformed("expected ',' or ']'")
		default:
			return nil, false, c.malformed("expected ',' or '}'")
		}
		if f.array {
			if err := c.checkItems(f, f.index+1); err != nil {
				return nil, false, err
			}
			return f.schema.item(), false, nil
		}
		next, err := c.member(f)
		return next, false, err
	}
	return nil, true, nil
}

// member reads a key and its colon in object f and returns the schema of
// its value.
func (c *checker) member(f *frame) (*Schema, error) {
	f.key, f.hasKey = nil, false
	c.skipSpace()
	switch {
	case c.pos >= len(c.data):
		return nil, c.malformed("unexpected end of input")
	case c.data[c.pos] != '"':
		return nil, c.malformed("expected a string key")
	}
	key, nul, err := c.str(true, true)
	if err != nil {
		return nil, err
	}
	if nul {
		return nil, c.keyFail(ReasonNULInKey, key, "key "+quoteKey(key)+" contains a NUL character")
	}
	if prev, ok := c.find(f, key); ok {
		if bytes.Equal(prev, key) {
			return nil, c.keyFail(ReasonDuplicateKey, key, "duplicate key "+quoteKey(key))
		}
		return nil, c.keyFail(ReasonCaseVariant, key, "key "+quoteKey(key)+" differs only by case from key "+quoteKey(prev))
	}
	next, ok := f.schema.member(key)
	if !ok {
		return nil, c.unknown(f.schema, key)
	}
	c.add(f, key)
	f.key, f.hasKey = key, true
	c.skipSpace()
	if c.pos >= len(c.data) || c.data[c.pos] != ':' {
		return nil, c.malformed("expected ':' after key")
	}
	c.pos++
	return next, nil
}

// find returns the earlier key of object f that equals key under
// strings.EqualFold.
func (c *checker) find(f *frame, key []byte) ([]byte, bool) {
	if f.folded != nil {
		i, ok := f.folded[foldKey(key)]
		if !ok {
			return nil, false
		}
		return c.keys[i], true
	}
	for _, k := range c.keys[f.start:] {
		if bytes.EqualFold(k, key) {
			return k, true
		}
	}
	return nil, false
}

// add records key as read in object f, the innermost open object.
func (c *checker) add(f *frame, key []byte) {
	c.keys = append(c.keys, key)
	switch {
	case f.folded != nil:
		f.folded[foldKey(key)] = len(c.keys) - 1
	case len(c.keys)-f.start >= foldMapAt:
		f.folded = make(map[string]int, 2*(len(c.keys)-f.start))
		for i := f.start; i < len(c.keys); i++ {
			f.folded[foldKey(c.keys[i])] = i
		}
	}
}

func (c *checker) push(array bool, s *Schema) {
	c.stack = append(c.stack, frame{array: array, fresh: true, schema: s, start: len(c.keys)})
}

func (c *checker) pop() {
	f := &c.stack[len(c.stack)-1]
	c.keys = c.keys[:f.start]
	c.stack = c.stack[:len(c.stack)-1]
}

// str reads the string at c.pos. With decode it returns the decoded bytes
// (aliasing the input when there are no escapes) and, for a key, whether
// they contain NUL.
func (c *checker) str(key, decode bool) (decoded []byte, nul bool, err error) {
	d := c.data
	start := c.pos + 1
	i := start
	escaped := false
	for {
		for i < len(d) {
			if b := d[i]; b < 0x20 || b == '"' || b == '\\' || b >= utf8.RuneSelf {
				break
			}
			i++
		}
		if i >= len(d) {
			c.pos = i
			return nil, false, c.malformed("unterminated string")
		}
		switch b := d[i]; {
		case b == '"':
			c.pos = i + 1
			if !decode {
				return nil, false, nil
			}
			raw := d[start:i]
			if escaped {
				raw = unescape(raw)
			}
			return raw, nul || bytes.IndexByte(raw, 0) >= 0, nil
		case b == '\\':
			escaped = true
			n, err := c.escape(i)
			if err != nil {
				return nil, false, err
			}
			i += n
		case b < 0x20:
			if key && b == 0 {
				// Invalid JSON either way, but the reason a client
				// needs is that keys may not contain NUL.
				nul = true
				i++
				continue
			}
			c.pos = i
			return nil, false, c.malformed("control character in string")
		default:
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size == 1 {
				c.pos = i
				return nil, false, c.fail(ReasonInvalidUTF8, "invalid UTF-8 in string")
			}
			i += size
		}
	}
}

// escape validates the escape sequence at d[i] == '\\' and returns its
// length.
func (c *checker) escape(i int) (int, error) {
	d := c.data
	if i+1 >= len(d) {
		c.pos = i
		return 0, c.malformed("unterminated string")
	}
	switch d[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, nil
	case 'u':
	default:
		c.pos = i
		return 0, c.malformed("invalid escape in string")
	}
	r, ok := hex4(d[i+2:])
	if !ok {
		c.pos = i
		return 0, c.malformed("invalid \\u escape in string")
	}
	if !utf16.IsSurrogate(r) {
		return 6, nil
	}
	if r < 0xDC00 && i+8 <= len(d) && d[i+6] == '\\' && d[i+7] == 'u' {
		if r2, ok := hex4(d[i+8:]); ok && 0xDC00 <= r2 && r2 <= 0xDFFF {
			return 12, nil
		}
	}
	c.pos = i
	return 0, c.fail(ReasonLoneSurrogate, "unpaired UTF-16 surrogate escape in string")
}

// number reads a number at c.pos.
func (c *checker) number() error {
	d := c.data
	start := c.pos
	i := start
	digits := func() bool {
		n := i
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
		return i > n
	}
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case !digits():
		c.pos = i
		return c.malformed("invalid number")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if !digits() {
			c.pos = i
			return c.malformed("invalid number")
		}
	}
	exp := false
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		exp = true
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if !digits() {
			c.pos = i
			return c.malformed("invalid number")
		}
	}
	c.pos = i
	// Up to 15 characters without an exponent always fit; longer numbers
	// may not, and encoding/json would then refuse to decode them.
	if exp || i-start > 15 {
		if _, err := strconv.ParseFloat(string(d[start:i]), 64); err != nil {
			c.pos = start
			return c.malformed("number out of range")
		}
	}
	return nil
}

// at runs check with c.pos at start (where a value began, for the error's
// offset) and restores the position after the value when check passes.
func (c *checker) at(start int, check func() error) error {
	end := c.pos
	c.pos = start
	if err := check(); err != nil {
		return err
	}
	c.pos = end
	return nil
}

func (c *checker) literal(lit string) error {
	if !bytes.HasPrefix(c.data[c.pos:], []byte(lit)) {
		return c.malformed("invalid literal")
	}
	c.pos += len(lit)
	return nil
}

// end checks that only white space follows the top-level value.
func (c *checker) end() error {
	c.skipSpace()
	if c.badUTF8() {
		return c.fail(ReasonInvalidUTF8, "invalid UTF-8")
	}
	if c.pos != len(c.data) {
		return &Error{
			Reason: ReasonTrailingData,
			msg:    "unexpected data after the arguments object at byte offset " + strconv.Itoa(c.pos),
		}
	}
	return nil
}

// badUTF8 reports whether invalid UTF-8 starts at c.pos. Outside strings
// any non-ASCII byte is malformed JSON; this names the more useful reason.
func (c *checker) badUTF8() bool {
	if c.pos >= len(c.data) || c.data[c.pos] < utf8.RuneSelf {
		return false
	}
	r, size := utf8.DecodeRune(c.data[c.pos:])
	return r == utf8.RuneError && size == 1
}

func (c *checker) skipSpace() {
	for c.pos < len(c.data) {
		switch c.data[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

// path returns the JSON pointer of the current position.
func (c *checker) path() string {
	var b strings.Builder
	for i := range c.stack {
		f := &c.stack[i]
		switch {
		case f.array:
			b.WriteByte('/')
			b.WriteString(strconv.Itoa(f.index))
		case f.hasKey:
			writeSegment(&b, f.key)
		default:
			return b.String()
		}
	}
	return b.String()
}

// fail reports a problem at c.pos.
func (c *checker) fail(reason, msg string) error {
	path := c.path()
	return &Error{
		Path:   path,
		Reason: reason,
		msg:    msg + where(path) + " (byte offset " + strconv.Itoa(c.pos) + ")",
	}
}

func (c *checker) malformed(msg string) error {
	if c.badUTF8() {
		return c.fail(ReasonInvalidUTF8, "invalid UTF-8")
	}
	return c.fail(ReasonMalformed, "malformed JSON: "+msg)
}

// keyFail reports a problem with key, the key being read in the innermost
// object.
func (c *checker) keyFail(reason string, key []byte, msg string) error {
	parent := c.path()
	return &Error{Path: joinPath(parent, key), Reason: reason, msg: msg + inObject(parent)}
}

// unknown reports key as not a field of s, suggesting the field the client
// probably meant.
func (c *checker) unknown(s *Schema, key []byte) error {
	parent := c.path()
	e := &Error{
		Path:       joinPath(parent, key),
		Reason:     ReasonUnknownField,
		Suggestion: suggest(s, key),
	}
	e.msg = "unknown field " + quoteKey(key) + inObject(parent)
	if e.Suggestion != "" {
		e.msg += "; did you mean " + quoteKey([]byte(e.Suggestion)) + "?"
	}
	return e
}

// suggest returns the field of s that equals key when case, '-' and '_'
// are ignored, the alphabetically first if several do.
func suggest(s *Schema, key []byte) string {
	want := looseKey(key)
	best := ""
	for name := range s.Fields {
		if looseKey([]byte(name)) == want && (best == "" || name < best) {
			best = name
		}
	}
	return best
}

// looseKey folds case and drops '-' and '_'.
func looseKey(b []byte) string {
	return foldKey(bytes.Map(func(r rune) rune {
		if r == '-' || r == '_' {
			return -1
		}
		return r
	}, b))
}

// foldKey maps every rune of b to the smallest rune it is equal to under
// simple case folding, so that foldKey(a) == foldKey(b) exactly when
// strings.EqualFold(a, b).
func foldKey(b []byte) string {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out = append(out, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		i += size
		low := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			low = min(low, f)
		}
		out = utf8.AppendRune(out, low)
	}
	return string(out)
}
