package labtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/lab"
)

// NotesCells checks what the cells of every chapter must point at, for the chapter in the current
// folder: its two notes files are in step (NotesInStep); a kl-results or kl-plot cell names a
// suite of lab.yaml and, when it lists variants, variants of that suite; a kl-source cell names a
// file that exists and, when it names a function, a function of that file; and every suite has a
// kl-results cell. It returns the English cells and the manifest, for the lab's own checks.
func NotesCells(t *testing.T) ([]Cell, *lab.Manifest) {
	t.Helper()
	cells := NotesInStep(t)
	m := Manifest(t)
	tabled := map[string]bool{}
	for _, c := range cells {
		switch c.Kind {
		case "kl-results", "kl-plot":
			s := m.Suite(c.Body["suite"])
			require.NotNil(t, s, "cell %s names suite %q", c.Kind, c.Body["suite"])
			tabled[s.Name] = tabled[s.Name] || c.Kind == "kl-results"
			if vs := c.Body["variants"]; vs != "" {
				require.True(t, strings.HasPrefix(vs, "[") && strings.HasSuffix(vs, "]"), "variants %q is a list", vs)
				for _, v := range strings.Split(strings.Trim(vs, "[]"), ",") {
					assert.NotNil(t, s.Variant(strings.TrimSpace(v)), "suite %s has variant %q", s.Name, v)
				}
			}
		case "kl-source":
			src, err := os.ReadFile(filepath.Join(m.Dir, c.Body["file"]))
			require.NoError(t, err, "cell kl-source names %q", c.Body["file"])
			if fn := c.Body["function"]; fn != "" {
				assert.Regexp(t, `\b`+regexp.QuoteMeta(fn)+`\(`, string(src), "function %s in %s", fn, c.Body["file"])
			}
		}
	}
	for _, s := range m.Suites {
		assert.True(t, tabled[s.Name], "suite %s has a kl-results cell", s.Name)
	}
	return cells, m
}
