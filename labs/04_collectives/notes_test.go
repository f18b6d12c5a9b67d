package collectives

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/labtest"
)

func TestNotesHaveTheSameSectionsAndCells(t *testing.T) {
	he, ce := labtest.Outline(t, "notes.en.md")
	hz, cz := labtest.Outline(t, "notes.zh.md")
	assert.Equal(t, he, hz, "the same headings, in the same order")
	assert.Equal(t, ce, cz, "the same cells, in the same order")

	m, err := lab.LoadManifest(".")
	require.NoError(t, err)
	for _, c := range ce {
		switch {
		case strings.HasPrefix(c, "kl-source|"):
			f := strings.TrimSuffix(strings.TrimPrefix(c, "kl-source|file: "), ";")
			_, err := os.Stat(filepath.Clean(f))
			assert.NoError(t, err, c)
		case strings.HasPrefix(c, "kl-results|"), strings.HasPrefix(c, "kl-plot|"):
			s := regexp.MustCompile(`suite: ([a-z0-9_]+)`).FindStringSubmatch(c)
			require.NotNil(t, s, c)
			suite := m.Suite(s[1])
			require.NotNil(t, suite, c)
			if v := regexp.MustCompile(`variants: \[([^\]]*)\]`).FindStringSubmatch(c); v != nil {
				for _, name := range strings.Split(v[1], ",") {
					assert.NotNil(t, suite.Variant(strings.TrimSpace(name)), "%s: variant %s", c, name)
				}
			}
		}
	}
	// No measured numbers are written into the notes: they come from the results cells.
	for _, f := range []string{"notes.en.md", "notes.zh.md"} {
		b, _ := os.ReadFile(f)
		assert.NotRegexp(t, `\d+(\.\d+)? ?GB/s (measured|实测)`, string(b))
	}
}
