package devprops

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/labtest"
)

// The two chapters are in step, and every cell points at something that exists.
func TestNotesCellsPointAtRealThings(t *testing.T) {
	cells := labtest.NotesInStep(t)
	m := labtest.Manifest(t)
	kinds := map[string]int{}
	for _, c := range cells {
		kinds[c.Kind]++
		switch c.Kind {
		case "kl-results", "kl-plot":
			assert.NotNil(t, m.Suite(c.Body["suite"]), "cell %s names suite %q", c.Kind, c.Body["suite"])
			if c.Kind == "kl-plot" {
				assert.Equal(t, "throughput", c.Body["kind"])
			}
		case "kl-source":
			src, err := os.ReadFile(filepath.Join(m.Dir, c.Body["file"]))
			require.NoError(t, err, "cell kl-source names %q", c.Body["file"])
			if fn := c.Body["function"]; fn != "" {
				assert.Contains(t, string(src), " "+fn+"(", "function %s in %s", fn, c.Body["file"])
			}
		case "kl-properties", "kl-ceilings", "kl-profile", "kl-figure":
		default:
			t.Errorf("unknown cell kind %q", c.Kind)
		}
	}
	assert.Equal(t, 1, kinds["kl-properties"])
	assert.Equal(t, 1, kinds["kl-ceilings"])
	// Every suite has its results table.
	for _, s := range m.Suites {
		found := false
		for _, c := range cells {
			found = found || (c.Kind == "kl-results" && c.Body["suite"] == s.Name)
		}
		assert.True(t, found, "suite %s has no kl-results cell", s.Name)
	}
}
