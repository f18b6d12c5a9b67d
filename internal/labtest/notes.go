package labtest

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Cell is a live cell of a notes file: a fenced block whose info string starts with "kl-", and
// its "key: value" lines.
type Cell struct {
	Kind string
	Body map[string]string
}

// Heading is a heading outside code blocks: its level and its explicit {#id} ("" without one).
type Heading struct {
	Level int
	ID    string
}

var headingID = regexp.MustCompile(`\{#([a-z0-9-]+)\}\s*$`)

// walkNotes calls heading for every heading line outside code blocks and block for every fenced
// block (its info string and its lines, trimmed). A fence may be indented, as in a list item.
func walkNotes(t *testing.T, path string, heading func(line string), block func(info string, lines []string)) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	in, info, lines := false, "", []string(nil)
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			if !in {
				in, info, lines = true, strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), nil
			} else {
				in = false
				block(info, lines)
			}
			continue
		}
		if in {
			lines = append(lines, trimmed)
			continue
		}
		if strings.HasPrefix(line, "#") {
			heading(line)
		}
	}
	require.False(t, in, "%s: unclosed code block", path)
}

// Notes returns the headings and the live cells of a notes file.
func Notes(t *testing.T, path string) (heads []Heading, cells []Cell) {
	t.Helper()
	walkNotes(t, path, func(line string) {
		h := Heading{Level: len(line) - len(strings.TrimLeft(line, "#"))}
		if m := headingID.FindStringSubmatch(line); m != nil {
			h.ID = m[1]
		}
		heads = append(heads, h)
	}, func(info string, lines []string) {
		if !strings.HasPrefix(info, "kl-") {
			return
		}
		c := Cell{Kind: info, Body: map[string]string{}}
		for _, line := range lines {
			if line == "" {
				continue
			}
			k, v, ok := strings.Cut(line, ":")
			require.True(t, ok, "%s: cell line %q is not key: value", path, line)
			c.Body[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
		cells = append(cells, c)
	})
	return heads, cells
}

// NotesInStep checks that a chapter's two notes files (in the current folder) have the same
// sections (levels and ids) and the same cells in the same order, and start with a title. It
// returns the English cells, for the lab's own checks of what they point at.
func NotesInStep(t *testing.T) []Cell {
	t.Helper()
	enHeads, enCells := Notes(t, "notes.en.md")
	zhHeads, zhCells := Notes(t, "notes.zh.md")
	assert.Equal(t, enHeads, zhHeads, "the two chapters have the same sections, with the same ids")
	assert.Equal(t, enCells, zhCells, "the two chapters have the same cells in the same order")
	require.NotEmpty(t, enHeads)
	assert.Equal(t, 1, enHeads[0].Level, "a chapter starts with its title")
	return enCells
}

// Outline returns the heading ids (with their levels; the title as "#title") and the cells (info
// string and body, one string each) of a notes file: what must match between the languages.
// Every heading below the title needs an explicit {#id}.
func Outline(t *testing.T, path string) (heads, cells []string) {
	t.Helper()
	walkNotes(t, path, func(line string) {
		if strings.HasPrefix(line, "# ") {
			heads = append(heads, "#title")
			return
		}
		level := len(line) - len(strings.TrimLeft(line, "#"))
		m := headingID.FindStringSubmatch(line)
		require.NotNil(t, m, "%s: heading %q has no {#id}", path, line)
		heads = append(heads, strings.Repeat("#", level)+m[1])
	}, func(info string, lines []string) {
		if strings.HasPrefix(info, "kl-") {
			cells = append(cells, info+"|"+strings.Join(lines, ";")+strings.Repeat(";", min(len(lines), 1)))
		}
	})
	return heads, cells
}
