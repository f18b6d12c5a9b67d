package overlap

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kernel-labs/kernellabs/internal/labtest"
)

// The two chapters are in step and every cell points at something that exists
// (labtest.NotesCells); every section has an id of its own, and no measured number is written
// into the prose (they come from the results cells).
func TestNotesHaveTheSameSectionsAndCells(t *testing.T) {
	labtest.NotesCells(t)
	heads, _ := labtest.Notes(t, "notes.en.md")
	for _, h := range heads[1:] {
		assert.NotEmpty(t, h.ID, "a heading below the title has a {#id}")
	}
	for _, f := range []string{"notes.en.md", "notes.zh.md"} {
		b, _ := os.ReadFile(f)
		assert.NotRegexp(t, `\d+(\.\d+)? ?(TFLOP/s|GB/s|×) ?(measured|实测)`, string(b))
	}
}
