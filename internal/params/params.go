// Package params owns the mapping between configuration text and the config
// structs of the model packages: strict YAML decoding of config files on top
// of preset values (LoadYAML, DecodeYAML), `--set key=value` overrides by
// dotted YAML path (Set), self-description of every parameter for
// `fabemu config explain` and the docs (Explain, WriteExplain, WriteMarkdown,
// CheckDocumented), and the fully resolved config as YAML (Dump).
//
// It is generic: it works by reflection on any struct of structs whose fields
// carry yaml tags. It owns no parameter itself; each model package owns its
// config type, defaults and validation (DESIGN: "Parameters describe
// themselves").
//
// # Tags
//
// A config field is described by its struct tags, for example
//
//	RoutingDelay des.Time    `yaml:"routing_delay" json:"routing_delay" doc:"time to route a packet header in a switch" paper:"004 §4.1"`
//	BufferBytes  units.Bytes `yaml:"buffer_bytes" json:"buffer_bytes" doc:"input buffer per virtual lane" paper:"004 §4.1"`
//	XoffPackets  int         `yaml:"xoff" json:"xoff" doc:"Xoff threshold" unit:"packets" paper:"001 §3"`
//
// where the tags mean:
//
//   - yaml: the key, as gopkg.in/yaml.v3 reads it (default: the lower-cased
//     field name; "-" hides the field; ",inline" merges a struct's keys into
//     its parent's level).
//   - doc: one line saying what the parameter means. Required on every leaf
//     (CheckDocumented).
//   - unit: optional; the unit of a plain number ("packets", "bytes",
//     "64-byte credits"). Types that carry their unit in their text form
//     (units.Bytes, units.BitRate, des.Time) need none.
//   - paper: optional; where the knob and its default come from, as
//     "<seed number> §<section>".
//   - nonzero: optional; the range the field takes, e.g. "1 to 64 (leave
//     the key out for the default, 8)". For a field whose 0 in a config
//     built in code stands for its default, an explicit 0 in a file or
//     --set is refused with this text instead of becoming the default.
//
// A leaf is any field that is not a plain struct: numbers, strings, lists,
// maps, and every type implementing yaml.Unmarshaler or
// encoding.TextUnmarshaler (sizes, rates, durations), which are decoded only
// through those methods. Such types may also implement Typer to name
// themselves in Explain. Explain and Dump format values through MarshalYAML
// or MarshalText, so those should have value receivers.
//
// # Decoding rules
//
// Decoding modifies the destination in place: keys the text names replace the
// current values, everything else stays (so a preset is the base and a file or
// --set overrides only what it names). Struct keys merge; lists replace; maps
// gain or replace entries (decoding writes into maps the destination already
// holds, so presets should be built fresh, e.g. by a function). A key with an
// empty or null value leaves numbers, strings and structs unchanged and clears
// lists, maps and pointers. Unknown keys, wrong kinds and values a type refuses
// are errors naming the file, line and key; nothing is applied when the
// checks fail.
package params

import (
	"encoding"
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// Typer is implemented by value types that name themselves in Explain, such
// as "size", "rate" or "duration", instead of their Go type name.
type Typer interface {
	ParamType() string
}

var (
	yamlUnmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	yamlMarshalerType   = reflect.TypeFor[yaml.Marshaler]()
	textMarshalerType   = reflect.TypeFor[encoding.TextMarshaler]()
	typerType           = reflect.TypeFor[Typer]()
)

// custom reports whether t decodes or encodes itself: such a type is a leaf
// even if it is a struct, and values reach it only through its methods.
func custom(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	for _, i := range []reflect.Type{yamlUnmarshalerType, textUnmarshalerType, yamlMarshalerType, textMarshalerType} {
		if t.Implements(i) || pt.Implements(i) {
			return true
		}
	}
	return false
}

// field is one YAML key of a struct type, possibly reached through inlined
// structs.
type field struct {
	key   string
	index []int // for reflect.Value.FieldByIndex
	sf    reflect.StructField
}

// structInfo is the YAML view of a struct type.
type structInfo struct {
	fields    []field
	inlineMap reflect.Type // map type of a ",inline" map field, or nil
	inlineIdx []int
}

// structFields lists the YAML keys of struct type t in struct order, following
// the rules of gopkg.in/yaml.v3 (lower-cased field name by default, "-"
// skipped, ",inline" merged).
func structFields(t reflect.Type) structInfo {
	var info structInfo
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := range t.NumField() {
			sf := t.Field(i)
			if sf.PkgPath != "" && !sf.Anonymous {
				continue // unexported
			}
			tag := sf.Tag.Get("yaml")
			if tag == "-" {
				continue
			}
			name, flags, _ := strings.Cut(tag, ",")
			idx := append(append([]int(nil), index...), i)
			if strings.Contains(","+flags+",", ",inline,") {
				switch sf.Type.Kind() {
				case reflect.Struct:
					walk(sf.Type, idx)
				case reflect.Map:
					info.inlineMap, info.inlineIdx = sf.Type, idx
				}
				continue
			}
			if sf.PkgPath != "" {
				continue // unexported embedded struct without inline
			}
			if name == "" {
				name = strings.ToLower(sf.Name)
			}
			info.fields = append(info.fields, field{key: name, index: idx, sf: sf})
		}
	}
	walk(t, nil)
	return info
}

// lookup returns the field with the given key.
func (s structInfo) lookup(key string) (field, bool) {
	for _, f := range s.fields {
		if f.key == key {
			return f, true
		}
	}
	return field{}, false
}

// keys lists the valid keys in struct order.
func (s structInfo) keys() []string {
	ks := make([]string, len(s.fields))
	for i, f := range s.fields {
		ks[i] = f.key
	}
	return ks
}

// unknownKey formats the error for a key not among valid, with a suggestion
// by edit distance, or the list of valid keys when none is close.
func unknownKey(key, where string, valid []string) string {
	msg := fmt.Sprintf("unknown key %q %s", key, where)
	if s := suggest(key, valid); s != "" {
		return msg + fmt.Sprintf(" (did you mean %q?)", s)
	}
	if len(valid) > 0 && len(valid) <= 16 {
		return msg + " (valid keys: " + strings.Join(valid, ", ") + ")"
	}
	return msg
}

// location phrases where a key was looked up for unknownKey.
func location(path string) string {
	if path == "" {
		return "at the top level"
	}
	return "in " + path
}

// suggest returns the valid key closest to key by edit distance, if it is
// close enough to be a likely typo, else "".
func suggest(key string, valid []string) string {
	best, bestD := "", 1<<30
	lk := strings.ToLower(key)
	for _, v := range valid {
		if d := editDistance(lk, strings.ToLower(v)); d < bestD {
			best, bestD = v, d
		}
	}
	limit := max(2, len([]rune(key))/3)
	if bestD <= limit {
		return best
	}
	// A key that extends or shortens a valid one ("rate_gbps" for "rate").
	for _, v := range valid {
		lv := strings.ToLower(v)
		if len(lk) >= 3 && len(lv) >= 3 && (strings.HasPrefix(lk, lv) || strings.HasPrefix(lv, lk)) {
			return v
		}
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 { // keys are short; bound the work
		return 1 << 30
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// typeName names t for people: the type's own ParamType, else Go syntax with
// basic kinds for named basic types ("int", "[]int", "map[string]int").
func typeName(t reflect.Type) string {
	if t.Implements(typerType) {
		return reflect.Zero(t).Interface().(Typer).ParamType()
	}
	if reflect.PointerTo(t).Implements(typerType) {
		return reflect.New(t).Interface().(Typer).ParamType()
	}
	switch t.Kind() {
	case reflect.Pointer:
		return typeName(t.Elem())
	case reflect.Slice:
		return "[]" + typeName(t.Elem())
	case reflect.Array:
		return fmt.Sprintf("[%d]%s", t.Len(), typeName(t.Elem()))
	case reflect.Map:
		return "map[" + typeName(t.Key()) + "]" + typeName(t.Elem())
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return t.Kind().String()
	}
	return t.String()
}
