package params

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Set applies one command-line override "key=value" to dst, a non-nil
// pointer to a struct. The key is a dotted path of YAML keys
// ("fabric.link.rate", "nic.mtu"); a path segment may also be a map key
// ("fabric.vl_weights.3") or a list index ("topology.k.0").
//
// The value is read as YAML (a scalar or a flow collection such as [8, 8] or
// {a: 1}) and decoded into the field's type, through the type's
// UnmarshalYAML or UnmarshalText when it has one, so "fabric.routing_delay=150ns"
// or "fabric.buffer=8KiB" work as in a file. A plain string field takes the
// value literally, without YAML quoting rules. Lists and maps given whole
// replace the current ones; a struct given as a flow mapping merges.
//
// Errors name the path and, for an unknown key, suggest the closest valid one:
//
//	--set fabric.lnk.rate=10G: unknown key "lnk" in fabric (did you mean "link"?)
//
// Maps, lists and pointees on the path are copied before they are written, so
// values shared with a preset are not changed; on error dst is unchanged.
func Set(dst any, assignment string) error {
	key, value, ok := strings.Cut(assignment, "=")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		return fmt.Errorf("--set %q: want key=value, e.g. nic.mtu=2048", assignment)
	}
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("--set %s: params: destination must be a non-nil pointer, not %T", key, dst)
	}
	segs := strings.Split(key, ".")
	for _, s := range segs {
		if s == "" {
			return fmt.Errorf("--set %s: empty key in path", key)
		}
	}
	s := setter{key: key, value: strings.TrimSpace(value)}
	if err := s.set(rv.Elem(), segs, ""); err != nil {
		return fmt.Errorf("--set %s: %w", key, err)
	}
	return nil
}

type setter struct {
	key, value string
}

// set walks v along segs (done is the path walked so far) and assigns the
// value at the end. v is settable.
func (s setter) set(v reflect.Value, segs []string, done string) error {
	if len(segs) == 0 {
		return s.assign(v)
	}
	t := v.Type()
	if custom(t) {
		return fmt.Errorf("%s is a single %s value; it has no key %q", done, typeName(t), segs[0])
	}
	switch t.Kind() {
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		if !v.IsNil() {
			p.Elem().Set(v.Elem())
		}
		if err := s.set(p.Elem(), segs, done); err != nil {
			return err
		}
		v.Set(p)
		return nil
	case reflect.Struct:
		info := structFields(t)
		f, ok := info.lookup(segs[0])
		if ok {
			if len(segs) == 1 {
				if want, zero := explicitZero(f.sf, s.node()); zero {
					return fmt.Errorf("0: want %s", want)
				}
			}
			return s.set(v.FieldByIndex(f.index), segs[1:], join(done, segs[0]))
		}
		if info.inlineMap == nil {
			return fmt.Errorf("%s", unknownKey(segs[0], location(done), info.keys()))
		}
		return s.setMapEntry(v.FieldByIndex(info.inlineIdx), segs, done)
	case reflect.Map:
		return s.setMapEntry(v, segs, done)
	case reflect.Slice, reflect.Array:
		i, err := strconv.Atoi(segs[0])
		if err != nil || i < 0 || i >= v.Len() {
			return fmt.Errorf("%s has %d elements; %q is not an index of one", done, v.Len(), segs[0])
		}
		if t.Kind() == reflect.Array {
			return s.set(v.Index(i), segs[1:], fmt.Sprintf("%s.%d", done, i))
		}
		c := reflect.MakeSlice(t, v.Len(), v.Len())
		reflect.Copy(c, v)
		if err := s.set(c.Index(i), segs[1:], fmt.Sprintf("%s.%d", done, i)); err != nil {
			return err
		}
		v.Set(c)
		return nil
	}
	return fmt.Errorf("%s is a single %s value; it has no key %q", done, typeName(t), segs[0])
}

// setMapEntry sets the entry segs[0] of map m (copying the map first).
func (s setter) setMapEntry(m reflect.Value, segs []string, done string) error {
	t := m.Type()
	path := join(done, segs[0])
	k := reflect.New(t.Key()).Elem()
	if t.Key().Kind() == reflect.String && !custom(t.Key()) {
		k.SetString(segs[0])
	} else if err := yaml.Unmarshal([]byte(segs[0]), k.Addr().Interface()); err != nil {
		return fmt.Errorf("%s: %q is not a valid %s key", path, segs[0], typeName(t.Key()))
	}
	e := reflect.New(t.Elem()).Elem()
	if cur := m.MapIndex(k); cur.IsValid() {
		e.Set(cur)
	}
	if err := s.set(e, segs[1:], path); err != nil {
		return err
	}
	c := reflect.MakeMapWithSize(t, m.Len()+1)
	for it := m.MapRange(); it.Next(); {
		c.SetMapIndex(it.Key(), it.Value())
	}
	c.SetMapIndex(k, e)
	m.Set(c)
	return nil
}

// assign decodes the value into v.
func (s setter) assign(v reflect.Value) error {
	t := v.Type()
	if t.Kind() == reflect.String && !custom(t) {
		v.SetString(s.value)
		return nil
	}
	if s.value == "" {
		return fmt.Errorf("empty value for a %s", typeName(t))
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(s.value), &doc); err != nil {
		return fmt.Errorf("value %q is not valid YAML: %s", s.value, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) != 1 {
		return fmt.Errorf("value %q is not a single YAML value", s.value)
	}
	n := doc.Content[0]
	c := checker{where: func(*yaml.Node) string { return "" }, base: s.key}
	c.check(n, t, s.key)
	if err := c.err(); err != nil {
		return err
	}
	nv := reflect.New(t)
	if t.Kind() == reflect.Struct && !custom(t) {
		nv.Elem().Set(v) // a flow mapping merges into the struct
	}
	if err := n.Decode(nv.Interface()); err != nil {
		return fmt.Errorf("value %q: %s", s.value, typeErrorText(err))
	}
	v.Set(nv.Elem())
	return nil
}

// node is the value as a YAML scalar node, for explicitZero; a value that
// is not one single YAML value gives an empty node, which assign refuses.
func (s setter) node() *yaml.Node {
	var doc yaml.Node
	if yaml.Unmarshal([]byte(s.value), &doc) != nil || len(doc.Content) != 1 {
		return &yaml.Node{}
	}
	return doc.Content[0]
}
