package site

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/kernel-labs/kernellabs/internal/lab"
)

func TestProblemLabels(t *testing.T) {
	var ps []lab.Problem
	require.NoError(t, yaml.Unmarshal([]byte(`
- { name: "1 block per SM", title: { zh: "每个 SM 1 个线程块" }, blocks_per_sm: 1 }
- { name: "4096³", m: 4096 }
- { name: "8 experts, Zipf", experts: 8 }
`), &ps))
	s := &lab.Suite{Name: "s"}
	s.Problems.GPU = ps
	assert.Equal(t, "每个 SM 1 个线程块", problemLabel("zh", s, "1 block per SM"))
	assert.Equal(t, "1 block per SM", problemLabel("en", s, "1 block per SM"), "English defaults to the name")
	assert.Equal(t, "4096³", problemLabel("zh", s, "4096³"), "a shape reads the same in both languages")

	c := &course{}
	c.checkProblemTitles(&chapter{Name: "09_x", Manifest: &lab.Manifest{Suites: []*lab.Suite{s}}})
	require.Len(t, c.strictE, 1, "only the problem named in English words and without a title")
	assert.Contains(t, c.strictE[0].Error(), `"8 experts, Zipf"`)

	var bad []lab.Problem
	assert.Error(t, yaml.Unmarshal([]byte(`- { name: x, title: "x" }`), &bad), "a title is a mapping")
	for _, name := range []string{"1 MiB", "129×65×17 β=0", "DeepSeek-V3 7168→2048", "K = 37"} {
		assert.False(t, englishWord.MatchString(name), name)
	}
}
