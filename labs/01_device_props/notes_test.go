package devprops

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/lab"
)

// cell is a notebook cell of the notes: a fenced block whose info string starts with "kl-".
type cell struct {
	kind string
	body map[string]string
}

// outline returns the heading levels (outside code blocks) and the cells of a chapter.
func outline(t *testing.T, path string) (levels []int, cells []cell) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var cur *cell
	inFence := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			if !inFence {
				inFence = true
				if info := strings.TrimSpace(strings.TrimPrefix(line, "```")); strings.HasPrefix(info, "kl-") {
					cur = &cell{kind: info, body: map[string]string{}}
				}
			} else {
				inFence = false
				if cur != nil {
					cells = append(cells, *cur)
					cur = nil
				}
			}
			continue
		}
		if inFence {
			if cur != nil && strings.TrimSpace(line) != "" {
				k, v, ok := strings.Cut(line, ":")
				require.True(t, ok, "%s: cell line %q is not key: value", path, line)
				cur.body[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
			continue
		}
		if strings.HasPrefix(line, "#") {
			levels = append(levels, len(line)-len(strings.TrimLeft(line, "#")))
		}
	}
	require.False(t, inFence, "%s: unclosed code block", path)
	return levels, cells
}

func TestNotesAreInStep(t *testing.T) {
	enLevels, enCells := outline(t, "notes.en.md")
	zhLevels, zhCells := outline(t, "notes.zh.md")
	assert.Equal(t, enLevels, zhLevels, "the two chapters have the same sections")
	assert.Equal(t, enCells, zhCells, "the two chapters have the same cells in the same order")
	assert.Equal(t, 1, enLevels[0], "a chapter starts with its title")
}

func TestNotesCellsPointAtRealThings(t *testing.T) {
	m, err := lab.LoadManifest(".")
	require.NoError(t, err)
	_, cells := outline(t, "notes.en.md")
	kinds := map[string]int{}
	for _, c := range cells {
		kinds[c.kind]++
		switch c.kind {
		case "kl-results", "kl-plot":
			assert.NotNil(t, m.Suite(c.body["suite"]), "cell %s names suite %q", c.kind, c.body["suite"])
			if c.kind == "kl-plot" {
				assert.Equal(t, "throughput", c.body["kind"])
			}
		case "kl-source":
			src, err := os.ReadFile(filepath.Join(m.Dir, c.body["file"]))
			require.NoError(t, err, "cell kl-source names %q", c.body["file"])
			if fn := c.body["function"]; fn != "" {
				assert.Contains(t, string(src), " "+fn+"(", "function %s in %s", fn, c.body["file"])
			}
		case "kl-properties", "kl-ceilings", "kl-profile", "kl-figure":
		default:
			t.Errorf("unknown cell kind %q", c.kind)
		}
	}
	assert.Equal(t, 1, kinds["kl-properties"])
	assert.Equal(t, 1, kinds["kl-ceilings"])
	// Every suite has its results table.
	for _, s := range m.Suites {
		found := false
		for _, c := range cells {
			found = found || (c.kind == "kl-results" && c.body["suite"] == s.Name)
		}
		assert.True(t, found, "suite %s has no kl-results cell", s.Name)
	}
}
