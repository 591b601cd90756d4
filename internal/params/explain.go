package params

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"text/tabwriter"

	"gopkg.in/yaml.v3"
)

// Param describes one configurable parameter (a leaf of the config tree).
type Param struct {
	Path    string // dotted YAML path, e.g. "fabric.link.rate"
	Type    string // "int", "size", "duration", "[]int", ...
	Unit    string // unit tag, "" if the type carries its unit
	Default string // current value as YAML (flow style for lists and maps)
	Doc     string // doc tag
	Paper   string // paper tag: seed and section, e.g. "004 §4.1"

	goName string // Type.Field, for CheckDocumented
}

// Explain lists every parameter of v (a struct or a pointer to one), in
// struct order, following nested structs and pointers to structs (a nil
// pointer is described by its zero value). Default is v's current value, so
// explaining a preset shows the preset's values.
func Explain(v any) []Param {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			rv = reflect.New(rv.Type().Elem())
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return nil
	}
	var ps []Param
	explainStruct(rv, "", &ps)
	return ps
}

func explainStruct(v reflect.Value, prefix string, ps *[]Param) {
	t := v.Type()
	for _, f := range structFields(t).fields {
		fv := fieldByIndex(v, f.index)
		path := join(prefix, f.key)
		ft := f.sf.Type
		if ft.Kind() == reflect.Pointer && !custom(ft) && ft.Elem().Kind() == reflect.Struct && !custom(ft.Elem()) {
			if fv.IsNil() {
				fv = reflect.New(ft.Elem())
			}
			fv, ft = fv.Elem(), ft.Elem()
		}
		if ft.Kind() == reflect.Struct && !custom(ft) {
			explainStruct(fv, path, ps)
			continue
		}
		*ps = append(*ps, Param{
			Path:    path,
			Type:    typeName(ft),
			Unit:    f.sf.Tag.Get("unit"),
			Default: formatValue(fv),
			Doc:     strings.TrimSpace(f.sf.Tag.Get("doc")),
			Paper:   f.sf.Tag.Get("paper"),
			goName:  t.Name() + "." + f.sf.Name,
		})
	}
}

// fieldByIndex is reflect.Value.FieldByIndex that does not panic on nil
// embedded pointers (there are none with ",inline", but be safe).
func fieldByIndex(v reflect.Value, index []int) reflect.Value {
	for _, i := range index {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v = reflect.New(v.Type().Elem())
			}
			v = v.Elem()
		}
		v = v.Field(i)
	}
	return v
}

// formatValue writes v as YAML on one line, through the value's
// MarshalYAML or MarshalText when it has one.
func formatValue(v reflect.Value) string {
	var n yaml.Node
	if err := n.Encode(v.Interface()); err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	flow(&n)
	out, err := yaml.Marshal(&n)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return strings.TrimSpace(string(out))
}

// flow switches every collection under n to flow style ([a, b], {k: v}).
func flow(n *yaml.Node) {
	if n.Kind == yaml.SequenceNode || n.Kind == yaml.MappingNode {
		n.Style |= yaml.FlowStyle
	}
	for _, c := range n.Content {
		flow(c)
	}
}

// WriteExplain writes ps as an aligned plain-text table (for
// `fabemu config explain`).
func WriteExplain(w io.Writer, ps []Param) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "PARAMETER\tDEFAULT\tUNIT\tTYPE\tPAPER\tDESCRIPTION")
	for _, p := range ps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n",
			oneLine(p.Path), oneLine(p.Default), dash(p.Unit), oneLine(p.Type), dash(p.Paper), oneLine(p.Doc))
	}
	return tw.Flush()
}

// WriteMarkdown writes ps as a Markdown table (for the docs).
func WriteMarkdown(w io.Writer, ps []Param) error {
	var b bytes.Buffer
	b.WriteString("| Parameter | Default | Unit | Type | Paper | Description |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, p := range ps {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n",
			code(p.Path), code(p.Default), cell(p.Unit), cell(p.Type), cell(p.Paper), cell(p.Doc))
	}
	_, err := w.Write(b.Bytes())
	return err
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func dash(s string) string {
	if s = oneLine(s); s == "" {
		return "-"
	}
	return s
}

// cell escapes s for a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(oneLine(s), "|", `\|`)
}

// code formats s as a Markdown code span inside a table cell.
func code(s string) string {
	s = oneLine(s)
	if s == "" {
		return ""
	}
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	return fence + " " + strings.ReplaceAll(s, "|", `\|`) + " " + fence
}

// CheckDocumented returns an error listing every parameter of v that has no
// doc tag, or nil. Model packages call it in a test on their config type:
//
//	func TestConfigDocumented(t *testing.T) {
//		if err := params.CheckDocumented(DefaultConfig()); err != nil {
//			t.Fatal(err)
//		}
//	}
func CheckDocumented(v any) error {
	var missing []string
	for _, p := range Explain(v) {
		if p.Doc == "" {
			missing = append(missing, fmt.Sprintf("%s (%s)", p.Path, p.goName))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return errors.New("config fields without a doc tag: " + strings.Join(missing, ", "))
}

// Dump returns v as YAML, keys in struct order, values through their
// MarshalYAML or MarshalText: the fully resolved config, which DecodeYAML
// reads back to the same values. Every key is written, even one whose yaml
// tag says omitempty, and empty lists as []: reading the dump over any
// other base (another preset) must give the same configuration, and an
// omitted key would leave the base's value in place.
func Dump(v any) ([]byte, error) {
	n, err := dumpNode(reflect.ValueOf(v))
	if err != nil {
		return nil, fmt.Errorf("params: dump: %w", err)
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, fmt.Errorf("params: dump: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("params: dump: %w", err)
	}
	return b.Bytes(), nil
}

// dumpNode encodes v as gopkg.in/yaml.v3 would, except that structs (and
// structs in pointers and lists) are written key by key, ignoring
// omitempty.
func dumpNode(v reflect.Value) (*yaml.Node, error) {
	if !v.IsValid() {
		return encodeNode(nil)
	}
	t := v.Type()
	if custom(t) {
		return encodeNode(v.Interface())
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return encodeNode(nil)
		}
		return dumpNode(v.Elem())
	case reflect.Struct:
		info := structFields(t)
		n := &yaml.Node{Kind: yaml.MappingNode}
		for _, f := range info.fields {
			k, err := encodeNode(f.key)
			if err != nil {
				return nil, err
			}
			c, err := dumpNode(fieldByIndex(v, f.index))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.key, err)
			}
			n.Content = append(n.Content, k, c)
		}
		if info.inlineMap != nil {
			m, err := encodeNode(fieldByIndex(v, info.inlineIdx).Interface())
			if err != nil {
				return nil, err
			}
			if m.Kind == yaml.MappingNode {
				n.Content = append(n.Content, m.Content...)
			}
		}
		return n, nil
	case reflect.Slice, reflect.Array:
		if e := t.Elem(); !custom(e) && (e.Kind() == reflect.Struct || e.Kind() == reflect.Pointer) {
			n := &yaml.Node{Kind: yaml.SequenceNode}
			for i := range v.Len() {
				c, err := dumpNode(v.Index(i))
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, c)
			}
			return n, nil
		}
	}
	return encodeNode(v.Interface())
}

func encodeNode(v any) (*yaml.Node, error) {
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		return nil, err
	}
	return &n, nil
}
