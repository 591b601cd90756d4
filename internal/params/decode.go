package params

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/fabemu/fabemu/internal/inputfile"
)

// maxErrors bounds how many problems one decode reports.
const maxErrors = 20

// maxNodes bounds the YAML nodes the checks visit, counting alias expansions
// again each time, so an alias bomb is refused instead of expanded.
const maxNodes = 1 << 20

// LoadYAML reads the YAML config file at path and decodes it on top of dst
// (a non-nil pointer to a struct) as DecodeYAML does.
func LoadYAML(path string, dst any) error {
	data, err := inputfile.ReadFile(path, inputfile.ConfigLimit)
	if err != nil {
		return err
	}
	return DecodeYAML(bytes.NewReader(data), path, dst)
}

// DecodeYAML decodes one YAML document from r on top of the current values in
// dst, a non-nil pointer to a struct; name is the file name used in errors.
//
// Decoding is strict: an unknown key, a value of the wrong kind or a value its
// type refuses is an error of the form
//
//	config.yaml:12: unknown key "bufer_bytes" in fabric (did you mean "buffer_bytes"?)
//	config.yaml:3: nic.mtu: cannot use "big" as int
//
// and dst is left unchanged. An empty file, or one holding only comments or
// a null document, changes nothing. A file with more than one document is an
// error.
func DecodeYAML(r io.Reader, name string, dst any) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("%s: params: destination must be a non-nil pointer, not %T", name, dst)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // empty file: no change
		}
		return yamlError(name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return yamlError(name, err)
		}
		return fmt.Errorf("%s:%d: a second YAML document; a config file holds one", name, docLine(&extra))
	}
	if len(doc.Content) == 0 || isNull(doc.Content[0]) {
		return nil // null document: no change
	}
	c := checker{where: func(n *yaml.Node) string { return fmt.Sprintf("%s:%d", name, n.Line) }}
	c.check(doc.Content[0], rv.Elem().Type(), "")
	if err := c.err(); err != nil {
		return err
	}
	// The checks passed; decode for real, strictly, as a second line of
	// defence for anything the checks do not model.
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(dst); err != nil {
		return yamlError(name, err)
	}
	return nil
}

// docLine returns the line where a document's content starts.
func docLine(doc *yaml.Node) int {
	if len(doc.Content) > 0 {
		return doc.Content[0].Line
	}
	return doc.Line
}

var lineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)

// yamlError rewrites the errors of gopkg.in/yaml.v3 ("yaml: line 3: ...",
// "yaml: unmarshal errors:\n  line 3: ...") as "name:3: ...".
func yamlError(name string, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs := make([]string, len(te.Errors))
		for i, e := range te.Errors {
			msgs[i] = withLine(name, e)
		}
		return errors.New(strings.Join(msgs, "\n"))
	}
	return errors.New(withLine(name, err.Error()))
}

func withLine(name, msg string) string {
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		return name + ":" + m[1] + ": " + msg[len(m[0]):]
	}
	return name + ": " + strings.TrimPrefix(msg, "yaml: ")
}

// isNull reports whether n is a null scalar ("", "~", "null").
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// checker walks a YAML node tree against a Go type without writing anything,
// collecting every problem with its location.
type checker struct {
	where func(*yaml.Node) string // "file:line" of a node, or ""
	base  string                  // path of the root node, not repeated in messages
	errs  []string
	nodes int
	stop  bool
}

func (c *checker) errorf(n *yaml.Node, path, format string, args ...any) {
	if len(c.errs) >= maxErrors {
		c.stop = true
		return
	}
	msg := fmt.Sprintf(format, args...)
	if path != "" && path != c.base {
		msg = path + ": " + msg
	}
	if w := c.where(n); w != "" {
		msg = w + ": " + msg
	}
	c.errs = append(c.errs, msg)
}

func (c *checker) err() error {
	if len(c.errs) == 0 {
		return nil
	}
	if c.stop {
		c.errs = append(c.errs, "(further errors not shown)")
	}
	return errors.New(strings.Join(c.errs, "\n"))
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// check verifies that n can be decoded into a value of type t; path is the
// dotted key path of n, for messages.
func (c *checker) check(n *yaml.Node, t reflect.Type, path string) {
	if c.stop {
		return
	}
	c.nodes++
	if c.nodes > maxNodes {
		c.errorf(n, "", "too many YAML nodes (alias expansion?); refusing to decode")
		c.stop = true
		return
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return
		}
		c.check(n.Alias, t, path)
		return
	}
	if isNull(n) {
		return // leaves values unchanged, or clears pointers, lists and maps
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if custom(t) {
		// Values reach such types only through their own methods: let them
		// judge, on a scratch value.
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			c.errorf(n, path, "%s", strings.TrimPrefix(typeErrorText(err), "yaml: "))
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		c.checkStruct(n, t, path)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			c.errorf(n, path, "want a mapping, got %s", describe(n))
			return
		}
		c.eachPair(n, path, func(k, v *yaml.Node) {
			if t.Key().Kind() != reflect.String || custom(t.Key()) {
				c.check(k, t.Key(), join(path, k.Value))
			}
			c.check(v, t.Elem(), join(path, k.Value))
		})
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			c.errorf(n, path, "want a list such as [1, 2], got %s", describe(n))
			return
		}
		if t.Kind() == reflect.Array && len(n.Content) != t.Len() {
			c.errorf(n, path, "want a list of exactly %d elements, got %d", t.Len(), len(n.Content))
			return
		}
		for i, e := range n.Content {
			c.check(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Interface:
		// anything goes
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		c.checkScalar(n, t, path)
	default:
		c.errorf(n, path, "a %s cannot be configured", t)
	}
}

func (c *checker) checkStruct(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		c.errorf(n, path, "want a mapping of keys, got %s", describe(n))
		return
	}
	info := structFields(t)
	c.eachPair(n, path, func(k, v *yaml.Node) {
		if f, ok := info.lookup(k.Value); ok {
			if want, zero := explicitZero(f.sf, v); zero {
				c.errorf(v, join(path, k.Value), "0: want %s", want)
				return
			}
			c.check(v, f.sf.Type, join(path, k.Value))
			return
		}
		if info.inlineMap != nil {
			c.check(v, info.inlineMap.Elem(), join(path, k.Value))
			return
		}
		c.errorf(k, "", "%s", unknownKey(k.Value, location(path), info.keys()))
	})
}

// eachPair calls fn for each key/value of mapping n, expanding merge keys
// ("<<: *base") in place.
func (c *checker) eachPair(n *yaml.Node, path string, fn func(k, v *yaml.Node)) {
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if c.stop {
			return
		}
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			c.errorf(k, path, "want a scalar key, got %s", describe(k))
			continue
		}
		if k.ShortTag() == "!!merge" {
			c.merge(v, path, fn)
			continue
		}
		if line, dup := seen[k.Value]; dup {
			c.errorf(k, path, "key %q given twice (first at line %d)", k.Value, line)
			continue
		}
		seen[k.Value] = k.Line
		fn(k, v)
	}
}

func (c *checker) merge(v *yaml.Node, path string, fn func(k, v *yaml.Node)) {
	c.nodes++
	if c.nodes > maxNodes {
		c.errorf(v, "", "too many YAML nodes (alias expansion?); refusing to decode")
		c.stop = true
		return
	}
	switch {
	case v.Kind == yaml.AliasNode && v.Alias != nil:
		c.merge(v.Alias, path, fn)
	case v.Kind == yaml.MappingNode:
		c.eachPair(v, path, fn)
	case v.Kind == yaml.SequenceNode:
		for _, e := range v.Content {
			c.merge(e, path, fn)
		}
	default:
		c.errorf(v, path, "a merge key (<<) needs a mapping or a list of mappings, got %s", describe(v))
	}
}

// checkScalar checks a value for a basic-kind field. It is stricter than
// yaml.v3 in one place: a fractional number is refused for an integer field
// instead of being truncated.
func (c *checker) checkScalar(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.ScalarNode {
		c.errorf(n, path, "want a single %s value, got %s", typeName(t), describe(n))
		return
	}
	switch t.Kind() {
	case reflect.String:
		return // yaml.v3 takes any scalar's text
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.ShortTag() == "!!float" {
			f, err := strconv.ParseFloat(n.Value, 64)
			if err != nil || f != math.Trunc(f) || math.IsInf(f, 0) {
				c.errorf(n, path, "cannot use %q as %s: want a whole number", n.Value, typeName(t))
				return
			}
		}
	case reflect.Float32, reflect.Float64:
		// NaN and the infinities pass every range check written as a
		// comparison (NaN < 0 is false), so they are refused here, for
		// every float parameter from a file or --set alike.
		var f float64
		if err := n.Decode(&f); err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
			c.errorf(n, path, "cannot use %q: want a finite number", n.Value)
			return
		}
	}
	if err := n.Decode(reflect.New(t).Interface()); err != nil {
		c.errorf(n, path, "cannot use %q as %s", n.Value, typeName(t))
	}
}

// typeErrorText extracts the message of a decode error without yaml.v3's
// "line N:" framing (the caller adds file:line and path).
func typeErrorText(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		return lineRE.ReplaceAllString(te.Errors[0], "")
	}
	return lineRE.ReplaceAllString(err.Error(), "")
}

// describe names a node for messages: "a list", "a mapping", "\"abc\"".
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.AliasNode:
		return "an alias"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "..."
	}
	return strconv.Quote(v)
}

// explicitZero reports whether n gives the value 0 to a field whose
// `nonzero` tag refuses it, and the tag's text (the range the field takes).
// Such a field reads 0 in a config built in code as "the default", so a 0
// written in a file or --set would silently become the default: it is
// refused instead, and the key is left out for the default.
func explicitZero(sf reflect.StructField, n *yaml.Node) (string, bool) {
	want, ok := sf.Tag.Lookup("nonzero")
	if !ok {
		return "", false
	}
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.ScalarNode || isNull(n) {
		return "", false
	}
	var f float64
	if err := n.Decode(&f); err != nil || f != 0 {
		return "", false
	}
	return want, true
}
