package strictyaml

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

type inner struct {
	Name string  `yaml:"name"`
	Rate float64 `yaml:"rate"`
}

type outer struct {
	ID      string            `yaml:"id"`
	Timeout time.Duration     `yaml:"timeout"`
	Count   int               `yaml:"count"`
	On      bool              `yaml:"on"`
	Items   []*inner          `yaml:"items"`
	Tags    map[string][]int  `yaml:"tags"`
	Opt     *inner            `yaml:"opt"`
	Self    selfReading       `yaml:"self"`
	Free    map[string]string `yaml:"free"`
	Any     any               `yaml:"any"`
	Skipped string            `yaml:"-"`
}

// selfReading reads its own node, as lab.Problem does.
type selfReading struct{ Value int64 }

func (s *selfReading) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return At(n, "self is one number")
	}
	_, err := fmt.Sscan(n.Value, &s.Value)
	return err
}

func decodeText(t *testing.T, text string) (outer, []*Error) {
	t.Helper()
	var o outer
	errs := Unmarshal([]byte(text), &o)
	return o, errs
}

func TestDecodeGood(t *testing.T) {
	o, errs := decodeText(t, `
id: "07"
timeout: 90s
count: 3
on: true
items:
  - {name: a, rate: 1.5}
  - name: b
tags: {x: [1, 2]}
opt: {name: c}
self: 42
base: &base {name: shared}
free: {k: v}
any: {deep: [1, x]}
`[1:]+"\n")
	// base: is not a field: an error, while everything else decodes.
	require.Len(t, errs, 1)
	assert.Equal(t, 11, errs[0].Line)
	assert.Contains(t, errs[0].Msg, `unknown key "base" in the top level; the keys allowed there are: any, count, free, id, items, on, opt, self, tags, timeout`)
	assert.Equal(t, "07", o.ID)
	assert.Equal(t, 90*time.Second, o.Timeout)
	assert.Equal(t, 3, o.Count)
	assert.True(t, o.On)
	require.Len(t, o.Items, 2)
	assert.Equal(t, inner{"a", 1.5}, *o.Items[0])
	assert.Equal(t, "b", o.Items[1].Name)
	assert.Equal(t, map[string][]int{"x": {1, 2}}, o.Tags)
	assert.Equal(t, "c", o.Opt.Name)
	assert.Equal(t, int64(42), o.Self.Value)
	assert.Equal(t, map[string]any{"deep": []any{1, "x"}}, o.Any)
}

func TestDecodeMergeKeys(t *testing.T) {
	root, perr := Parse([]byte("defaults: &d {name: x, rate: 2}\nitem:\n  <<: *d\n  rate: 3\n"))
	require.Nil(t, perr)
	var v struct {
		Defaults inner `yaml:"defaults"`
		Item     inner `yaml:"item"`
	}
	require.Empty(t, Decode(root, &v))
	assert.Equal(t, inner{"x", 3}, v.Item)
}

func TestDecodeErrorsAtTheirLines(t *testing.T) {
	tests := []struct {
		name, text string
		line       int
		want       string
	}{
		{"syntax", "id: [1, 2\n", 1, "did not find expected"},
		{"duration", "id: a\ntimeout: soon\n", 2, `timeout: "soon" is not a duration (such as 90s or 2m)`},
		{"int", "count: 1.5\n", 1, `count: "1.5" is not a whole number`},
		{"bool", "on: maybe\n", 1, `on: "maybe" is not true or false`},
		{"nested float", "items:\n  - name: a\n  - rate: fast\n", 3, `items[1].rate: "fast" is not a number`},
		{"unknown nested key", "items:\n  - name: a\n    rat: 1\n", 3, `unknown key "rat" in items[0]; the keys allowed there are: name, rate`},
		{"list for a scalar", "id: [a]\n", 1, "id must be a single value (a string), not a list"},
		{"scalar for a list", "items: many\n", 1, `items must be a list ([a, b] or lines starting with -), not the value "many"`},
		{"scalar for a mapping", "opt: yes\n", 1, `opt must be a mapping of keys to values, not the value "yes"`},
		{"key twice", "id: a\ncount: 1\nid: b\n", 3, `key "id" given twice in the top level`},
		{"own error with its line", "self:\n  - 1\n", 2, "self is one number"},
		{"own error without a line", "self: x\n", 1, "self: expected integer"},
		{"map value", "tags:\n  x: [1, a]\n", 2, `tags.x[1]: "a" is not a whole number`},
		{"ignored field", "skipped: 1\n", 1, `unknown key "skipped"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := decodeText(t, tc.text)
			require.Len(t, errs, 1, "%v", errs)
			assert.Equal(t, tc.line, errs[0].Line, errs[0].Error())
			assert.Contains(t, errs[0].Msg, tc.want)
		})
	}
}

func TestDecodeReportsEveryError(t *testing.T) {
	_, errs := decodeText(t, "idd: a\ncount: x\nitems:\n  - nme: b\n")
	require.Len(t, errs, 3)
	assert.Equal(t, []int{1, 2, 4}, []int{errs[0].Line, errs[1].Line, errs[2].Line})
}

func TestUnmarshalEmptyText(t *testing.T) {
	o := outer{ID: "kept"}
	assert.Empty(t, Unmarshal(nil, &o))
	assert.Equal(t, "kept", o.ID)
}
