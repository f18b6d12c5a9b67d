// Package strictyaml decodes YAML into Go values strictly, from the parsed nodes: every key of a
// mapping must be one the Go type reads, every value must fit its field, and each error carries
// the line of the node it is about. A typo (`hiden: true`) is an error at its line, never a
// silent default, and no line number is read back out of an error's text.
package strictyaml

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Error is one problem, at a line of the YAML text.
type Error struct {
	Line int    // 1-based; 0 when the text has no line to point at
	Msg  string // says what is wrong and, where it can, what is allowed
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// At is an error at node n, for UnmarshalYAML methods: Decode keeps its line.
func At(n *yaml.Node, format string, args ...any) *Error {
	return &Error{Line: n.Line, Msg: fmt.Sprintf(format, args...)}
}

// Parse parses YAML text into its document node. The parser reports a syntax error only as text
// ("yaml: line 3: mapping values are not allowed in this context"); its line is the one number
// taken from an error's text, because the text has no node to take it from.
func Parse(data []byte) (*yaml.Node, *Error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		line := 0
		if rest, ok := strings.CutPrefix(msg, "line "); ok {
			if num, tail, ok := strings.Cut(rest, ": "); ok {
				if n, err := strconv.Atoi(num); err == nil {
					line, msg = n, tail
				}
			}
		}
		return nil, &Error{Line: line, Msg: msg}
	}
	return &root, nil
}

// Unmarshal parses YAML text and decodes it strictly into v (a non-nil pointer): Parse, then
// Decode. An empty text leaves v as it is.
func Unmarshal(data []byte, v any) []*Error {
	root, perr := Parse(data)
	if perr != nil {
		return []*Error{perr}
	}
	return Decode(root, v)
}

var unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
var durationType = reflect.TypeOf(time.Duration(0))

// Decode decodes n into v, a non-nil pointer, and returns every problem it finds, in the order
// of the text. Struct fields are named by their yaml tags (inline structs included); a type that
// implements yaml.Unmarshaler reads its own node (its errors keep their line when they are an
// *Error, else they get the node's).
func Decode(n *yaml.Node, v any) []*Error { return DecodeIn(n, v, "") }

// DecodeIn is Decode for a node inside a larger text, named where in the messages ("a problem's
// title"), for UnmarshalYAML methods that decode part of their node.
func DecodeIn(n *yaml.Node, v any, where string) []*Error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		panic("strictyaml.Decode needs a non-nil pointer")
	}
	return decode(n, rv.Elem(), where)
}

func decode(n *yaml.Node, v reflect.Value, where string) []*Error {
	if n == nil || n.Kind == 0 { // no node, or an empty text
		return nil
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil
		}
		return decode(n.Content[0], v, where)
	case yaml.AliasNode:
		return decode(n.Alias, v, where)
	}
	if v.CanAddr() && v.Addr().Type().Implements(unmarshalerType) {
		if err := v.Addr().Interface().(yaml.Unmarshaler).UnmarshalYAML(n); err != nil {
			var e *Error
			if errors.As(err, &e) {
				return []*Error{e}
			}
			return []*Error{{Line: n.Line, Msg: fmt.Sprintf("%s: %v", name(where), err)}}
		}
		return nil
	}
	if isNull(n) {
		return nil // the zero value, as a missing key
	}
	switch v.Kind() {
	case reflect.Interface: // any: whatever the text holds, so nothing in it is unknown
		if err := n.Decode(v.Addr().Interface()); err != nil {
			return []*Error{{Line: n.Line, Msg: fmt.Sprintf("%s: not a value YAML can hold", name(where))}}
		}
		return nil
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return decode(n, v.Elem(), where)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return []*Error{{Line: n.Line, Msg: fmt.Sprintf("%s must be a mapping of keys to values, not %s", name(where), kindOf(n))}}
		}
		fields := map[string][]int{}
		collectFields(v.Type(), nil, fields)
		var errs []*Error
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" { // <<: *defaults, or <<: [*a, *b]: their keys, then this mapping's
				merged := []*yaml.Node{val}
				if val.Kind == yaml.SequenceNode {
					merged = val.Content
				}
				for _, mn := range merged {
					errs = append(errs, decode(mn, v, where)...)
				}
				continue
			}
			idx, ok := fields[k.Value]
			switch {
			case !ok:
				errs = append(errs, &Error{Line: k.Line, Msg: fmt.Sprintf("unknown key %q in %s; the keys allowed there are: %s",
					k.Value, name(where), allowedKeys(fields))})
				continue
			case seen[k.Value]:
				errs = append(errs, &Error{Line: k.Line, Msg: fmt.Sprintf("key %q given twice in %s", k.Value, name(where))})
				continue
			}
			seen[k.Value] = true
			errs = append(errs, decode(val, fieldByIndex(v, idx), join(where, k.Value))...)
		}
		return errs
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return []*Error{{Line: n.Line, Msg: fmt.Sprintf("%s must be a list ([a, b] or lines starting with -), not %s", name(where), kindOf(n))}}
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		var errs []*Error
		for i, c := range n.Content {
			errs = append(errs, decode(c, s.Index(i), fmt.Sprintf("%s[%d]", where, i))...)
		}
		v.Set(s)
		return errs
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return []*Error{{Line: n.Line, Msg: fmt.Sprintf("%s must be a mapping of keys to values, not %s", name(where), kindOf(n))}}
		}
		if v.Type().Key().Kind() != reflect.String {
			panic("strictyaml: only maps with string keys")
		}
		m := reflect.MakeMap(v.Type())
		var errs []*Error
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			elem := reflect.New(v.Type().Elem()).Elem()
			errs = append(errs, decode(val, elem, join(where, k.Value))...)
			m.SetMapIndex(reflect.ValueOf(k.Value).Convert(v.Type().Key()), elem)
		}
		v.Set(m)
		return errs
	}
	return decodeScalar(n, v, where)
}

// decodeScalar decodes a single value. The message is written here from the node and the field's
// type, not taken from the YAML library's text.
func decodeScalar(n *yaml.Node, v reflect.Value, where string) []*Error {
	if n.Kind != yaml.ScalarNode {
		return []*Error{{Line: n.Line, Msg: fmt.Sprintf("%s must be a single value (%s), not %s", name(where), typeName(v.Type()), kindOf(n))}}
	}
	err := n.Decode(v.Addr().Interface())
	if err == nil && isInt(v.Kind()) && v.Type() != durationType && n.ShortTag() == "!!float" {
		err = errors.New("a float") // the YAML library would drop the fraction of 1.5
	}
	if err != nil {
		return []*Error{{Line: n.Line, Msg: fmt.Sprintf("%s: %q is not %s", name(where), n.Value, typeName(v.Type()))}}
	}
	return nil
}

func isInt(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

func kindOf(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return fmt.Sprintf("the value %q", n.Value)
}

func typeName(t reflect.Type) string {
	if t == durationType {
		return "a duration (such as 90s or 2m)"
	}
	if isInt(t.Kind()) {
		return "a whole number"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	}
	return "a " + t.String()
}

// collectFields maps the yaml keys of struct t (inline structs included) to their field indices.
func collectFields(t reflect.Type, prefix []int, out map[string][]int) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		key, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if key == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		idx := append(append([]int{}, prefix...), i)
		if strings.Contains(opts, "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			collectFields(ft, idx, out)
			continue
		}
		if key == "" {
			key = strings.ToLower(f.Name)
		}
		out[key] = idx
	}
}

// fieldByIndex is reflect's FieldByIndex, allocating the inline pointers on the way.
func fieldByIndex(v reflect.Value, idx []int) reflect.Value {
	for i, x := range idx {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

func allowedKeys(fields map[string][]int) string {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

func join(where, key string) string {
	if where == "" {
		return key
	}
	return where + "." + key
}

func name(where string) string {
	if where == "" {
		return "the top level"
	}
	return where
}
