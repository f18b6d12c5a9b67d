package lab

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Strict manifests: every key of a lab.yaml mapping must be one its Go type reads. A typo is an
// error at its file:line that names the key and the keys allowed there, never a silent default
// (`hiden: true` would otherwise make a hidden test public).

var unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

// unknownKeys walks node against type t and returns an error for each key t does not read.
// where names the section for the message ("grading.exercises[0].tests[1]").
func (m *Manifest) unknownKeys(n *yaml.Node, t reflect.Type, where string) []error {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		n = n.Content[0]
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) || t.Implements(unmarshalerType) {
		return nil // reads its own keys (a problem's parameters)
	}
	var errs []error
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return nil // a type error, which decoding reports
		}
		fields := map[string]reflect.Type{}
		collectFields(t, fields)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if !ok {
				errs = append(errs, m.errAt(k.Line, "unknown key %q in %s; the keys allowed there are: %s",
					k.Value, where, allowedKeys(fields)))
				continue
			}
			errs = append(errs, m.unknownKeys(v, ft, where+"."+k.Value)...)
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return nil
		}
		for i, c := range n.Content {
			errs = append(errs, m.unknownKeys(c, t.Elem(), fmt.Sprintf("%s[%d]", where, i))...)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			errs = append(errs, m.unknownKeys(n.Content[i+1], t.Elem(), where+"."+n.Content[i].Value)...)
		}
	}
	return errs
}

// collectFields maps the yaml keys of struct t (inline structs included) to their types.
func collectFields(t reflect.Type, out map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if strings.Contains(opts, "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			collectFields(ft, out)
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
}

func allowedKeys(fields map[string]reflect.Type) string {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}
