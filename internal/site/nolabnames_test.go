package site

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// labName is how a lab is named in code: its folder path (labs/01_x) or its name as a string
// ("01_x"). The site is generic: what it knows of a lab comes from lab.yaml and the results, so
// a new lab needs no edit here. Tests may name labs (they check the real course).
var labName = regexp.MustCompile(`labs/\d\d_|"\d\d_`)

func TestSiteNamesNoLab(t *testing.T) {
	eachProductLine(t, func(f string, n int, line string) {
		assert.False(t, labName.MatchString(line), "%s:%d names a lab (%s): find it through lab.yaml or the results instead", f, n, line)
	})
}

// eachProductLine calls fn with every line (trimmed, and its number from 1) of the package's
// product files.
func eachProductLine(t *testing.T, fn func(file string, n int, line string)) {
	t.Helper()
	files := siteFiles(t, ".", "*.go")
	require.NotEmpty(t, files)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		for i, line := range strings.Split(read(t, ".", f), "\n") {
			fn(f, i+1, strings.TrimSpace(line))
		}
	}
}

// htmlByHand is HTML written with fmt or string concatenation: the cells render through
// html/template (each cell file defines its templates), which escapes what it prints.
var htmlByHand = regexp.MustCompile("(Fprintf|Sprintf|WriteString)\\([^)]*<[a-z/]|[\"`]<[a-z/][^\"`]*>[\"`] *\\+|\\+ *[\"`]<[a-z/]")

func TestSiteWritesNoHTMLByHand(t *testing.T) {
	eachProductLine(t, func(f string, n int, line string) {
		assert.False(t, htmlByHand.MatchString(line), "%s:%d builds HTML by hand (%s): give the cell a template", f, n, line)
	})
	assert.True(t, htmlByHand.MatchString(`fmt.Fprintf(&out, "<td class=%q>", c)`), "the check sees HTML written with fmt")
	assert.True(t, htmlByHand.MatchString(`s += "<p>" + text`), "and concatenated")
}
